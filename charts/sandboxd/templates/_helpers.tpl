{{/*
Chart name, truncated to the 63 characters a Kubernetes name may have.
*/}}
{{- define "sandboxd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: the release name when it already contains the chart name (release
"sandboxd" gives Service, ServiceAccount and Deployment "sandboxd"), otherwise
"<release>-<chart>"; 63 characters at most.
*/}}
{{- define "sandboxd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
"<fullname>-<suffix>", still within 63 characters.
*/}}
{{- define "sandboxd.suffixedName" -}}
{{- $suffix := printf "-%s" .suffix }}
{{- printf "%s%s" (include "sandboxd.fullname" .ctx | trunc (int (sub 63 (len $suffix))) | trimSuffix "-") $suffix }}
{{- end }}

{{- define "sandboxd.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels. Note: app.kubernetes.io/managed-by is Helm here; sandbox pods carry
app.kubernetes.io/managed-by=sandboxd, which no chart object uses.
*/}}
{{- define "sandboxd.labels" -}}
helm.sh/chart: {{ include "sandboxd.chart" . }}
{{ include "sandboxd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sandboxd
{{- end }}

{{/*
Selector labels of the sandboxd pods. The NetworkPolicies admit traffic to sandbox pods only
from pods with exactly these labels in the release namespace.
*/}}
{{- define "sandboxd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sandboxd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Selector labels of a helper component (seccomp installer, probe runner). Deliberately NOT the
sandboxd selector labels: the Service and the sandbox NetworkPolicies trust those.
*/}}
{{- define "sandboxd.componentSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-%s" (include "sandboxd.name" .ctx) .component | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
Full labels of a helper component's pods: the chart's labels without the sandboxd selector labels.
*/}}
{{- define "sandboxd.componentLabels" -}}
helm.sh/chart: {{ include "sandboxd.chart" .ctx }}
{{ include "sandboxd.componentSelectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: sandboxd
{{- end }}

{{/*
The sandboxd ServiceAccount (release namespace).
*/}}
{{- define "sandboxd.serviceAccountName" -}}
{{- default (include "sandboxd.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/*
The Secret of sandboxd's pod seal keys (release namespace): podSeal.existingSecret, else the one sandboxd makes.
*/}}
{{- define "sandboxd.podSealSecret" -}}
{{- .Values.podSeal.existingSecret | default (include "sandboxd.suffixedName" (dict "ctx" . "suffix" "seal")) }}
{{- end }}

{{/*
The helm-test probe's ServiceAccount (release namespace).
*/}}
{{- define "sandboxd.probeServiceAccountName" -}}
{{- include "sandboxd.suffixedName" (dict "ctx" . "suffix" "probe") }}
{{- end }}

{{/*
The namespace the sandbox pods run in; never the release namespace, whose pods must not share
the sandboxes' NetworkPolicies, admission policies and quota.
*/}}
{{- define "sandboxd.sandboxNamespace" -}}
{{- .Values.sandboxNamespace.name }}
{{- end }}

{{/*
The least terminationGracePeriodSeconds of the sandboxd pod: what a stopping replica needs (the service's
DeadlineBudget.gracePeriod, same formula; ServiceFormulasTest holds the two equal): serve
lifecycle.shutdownDelaySeconds more, then drain the calls under way for up to max(snippet.maxTimeoutSeconds,
tool.readyTimeoutSeconds + tool.maxTimeoutSeconds) + 10 s (the executor's answer), then 5 s to stop.
*/}}
{{- define "sandboxd.leastTerminationGracePeriodSeconds" -}}
{{- $longestCall := max (.Values.snippet.maxTimeoutSeconds | int64) (add .Values.tool.readyTimeoutSeconds .Values.tool.maxTimeoutSeconds | int64) }}
{{- $drain := add $longestCall 10 }}
{{- add .Values.lifecycle.shutdownDelaySeconds $drain 5 | int64 }}
{{- end }}

{{/*
terminationGracePeriodSeconds of the sandboxd pod. Unset (null): the least (above). Set: that value, which
_validate.tpl refuses when less, as that would let the kubelet kill calls the replica accepted.
*/}}
{{- define "sandboxd.terminationGracePeriodSeconds" -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- include "sandboxd.leastTerminationGracePeriodSeconds" . }}
{{- else }}
{{- .Values.terminationGracePeriodSeconds | int64 }}
{{- end }}
{{- end }}

{{/*
snippet.poolMax in force: poolTarget when unset.
*/}}
{{- define "sandboxd.poolMax" -}}
{{- ternary .Values.snippet.poolTarget .Values.snippet.poolMax (kindIs "invalid" .Values.snippet.poolMax) | int64 }}
{{- end }}

{{/*
An image reference from {repository, tag, digest}: "<repository>@<digest>" when a digest is set (that exact image,
whatever the tag names now), else "<repository>:<tag>".
*/}}
{{- define "sandboxd.imageRef" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository .tag }}
{{- end }}
{{- end }}

{{/*
Image of sandboxd itself.
*/}}
{{- define "sandboxd.image" -}}
{{- include "sandboxd.imageRef" .Values.image }}
{{- end }}

{{/*
The egress proxy's port of each profile (tool.egress.profiles, D11), as JSON {name: port}: profiles by name, the
first on tool.egress.proxy.basePort, each next one port up. sandboxd's configuration, the proxy's, its Service and
the NetworkPolicies all take the ports from here.
*/}}
{{- define "sandboxd.egressPorts" -}}
{{- $ports := dict }}
{{- $base := .Values.tool.egress.proxy.basePort | int64 }}
{{- range $i, $name := keys .Values.tool.egress.profiles | sortAlpha }}
{{- $_ := set $ports $name (add $base $i) }}
{{- end }}
{{- toJson $ports }}
{{- end }}

{{/*
The egress profiles with credentials (issue 48, D18), sorted by name and comma-separated; empty when no profile has
any. Their tool pods trust the egress proxy's CA: sandboxd's configuration and the admission params take them from here.
*/}}
{{- define "sandboxd.egressCredentialProfiles" -}}
{{- $names := list }}
{{- range $name, $profile := .Values.tool.egress.profiles }}
{{- if $profile.credentials }}
{{- $names = append $names $name }}
{{- end }}
{{- end }}
{{- join "," $names }}
{{- end }}

{{/*
Name of the ConfigMap of the sandbox namespace holding the egress proxy's CA certificate alone (key ca.crt, D19):
rendered when some profile has credentials, mounted by sandboxd into the tool pods of those profiles.
*/}}
{{- define "sandboxd.egressCaCertName" -}}
{{- printf "%s-cert" (include "sandboxd.suffixedName" (dict "ctx" . "suffix" "egress-ca")) }}
{{- end }}

{{/*
Name of the egress proxy's Deployment, Service, ServiceAccount and ConfigMap.
*/}}
{{- define "sandboxd.egressProxyName" -}}
{{- include "sandboxd.suffixedName" (dict "ctx" . "suffix" "egress") }}
{{- end }}

{{/*
Image of the egress proxy.
*/}}
{{- define "sandboxd.egressProxyImage" -}}
{{- include "sandboxd.imageRef" .Values.tool.egress.proxy.image }}
{{- end }}

{{/*
Image of the snippet sandbox pods (also used by the probe and the seccomp installer: it has python3).
*/}}
{{- define "sandboxd.snippetImage" -}}
{{- include "sandboxd.imageRef" .Values.snippet.image }}
{{- end }}

{{/*
The Localhost seccomp profile, relative to the kubelet's seccomp directory.
*/}}
{{- define "sandboxd.localhostProfile" -}}
sandboxd/sandbox-strict.json
{{- end }}

{{/*
The username sandboxd's requests carry (admission param sandboxdUser): its ServiceAccount's.
*/}}
{{- define "sandboxd.username" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "sandboxd.serviceAccountName" .) }}
{{- end }}

{{/*
The username the helm-test probe's requests carry (admission param probeUser); empty without the probe.
*/}}
{{- define "sandboxd.probeUsername" -}}
{{- if .Values.probe.enabled }}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "sandboxd.probeServiceAccountName" .) }}
{{- end }}
{{- end }}

{{/*
Usernames allowed to create pods in the sandbox namespace (admission param allowedCreators).
*/}}
{{- define "sandboxd.allowedCreators" -}}
{{- $creators := list (include "sandboxd.username" .) }}
{{- if .Values.probe.enabled }}
{{- $creators = append $creators (include "sandboxd.probeUsername" .) }}
{{- end }}
{{- range .Values.admission.extraAllowedCreators }}
{{- $creators = append $creators . }}
{{- end }}
{{- join "," $creators }}
{{- end }}

{{/*
The supplementalGroupsPolicy of sandbox pods in force (value supplementalGroupsPolicy, Strict when empty): sandboxd,
the probe pods and sandboxd-run-as-non-root read it.
*/}}
{{- define "sandboxd.supplementalGroupsPolicy" -}}
{{- .Values.supplementalGroupsPolicy | default "Strict" }}
{{- end }}

{{/*
The range of sandbox pod uids (sandboxUidRange): sandboxd and the admission policy sandboxd-run-as-non-root
both read it.
*/}}
{{- define "sandboxd.sandboxUidMin" -}}
{{- .Values.sandboxUidRange.min | int64 }}
{{- end }}

{{- define "sandboxd.sandboxUidMax" -}}
{{- .Values.sandboxUidRange.max | int64 }}
{{- end }}

{{/*
Container securityContext shared by every container this chart runs as uid 65532: sandboxd
itself and the helm-test probe runner (never a sandbox pod: those take a uid from sandboxUidRange).
*/}}
{{- define "sandboxd.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop:
    - ALL
{{- end }}

{{/*
The isolation gate's command for a sandbox of one kind, the same checks sandboxd's
IsolationGateSettings.arguments() gives its own pods (ServiceFormulasTest holds the two equal). The probe's
copy is best-effort with a shorter wait: it must go on to report the escapes itself. A tool pod runs it as
its first init container; a snippet pod as its one container's command, followed by "--" and what the gate
runs in its place once closed (the executor; the probe's sandbox_probe.py).
(dict "ctx" $ "kind" "snippet"|"tool"|"profiledTool" "probe" BOOL ["part" "head"|"tail"]; profiledTool: a tool pod
with an egress profile, whose gate sees cluster DNS closed as a snippet's does): "head" is the command up
to and with the DNS arguments, "tail" the rest; each sandboxd replica puts its own
"--closed tcp:<pod IP>:8080" between the two (IsolationGateSettings.ownAddress), which the chart cannot
know. The admission params carry head and tail, and sandboxd-isolation-gate admits exactly head + tail
or head + that one pair + tail.
*/}}
{{- define "sandboxd.isolationGateCommand" -}}
{{- $v := .ctx.Values -}}
{{- $gate := $v.isolationGate -}}
{{- $dnsIP := $v.networkPolicy.dns.serviceIP -}}
{{- $dns := ternary (printf "[%s]" $dnsIP) $dnsIP (contains ":" $dnsIP) -}}
{{- $head := list "python3" "/opt/sandboxd/probe/isolation_gate.py" -}}
{{- if eq .kind "tool" -}}
{{- $head = concat $head (list "--dns" "kubernetes.default.svc") -}}
{{- else if $dnsIP -}}
{{- /* snippet, and profiledTool (a tool pod with an egress profile, D11): cluster DNS must be closed. */ -}}
{{- $head = concat $head (list "--closed" (printf "udp-dns:%s:53" $dns) "--closed" (printf "tcp-dns:%s:53" $dns)) -}}
{{- end -}}
{{- $tail := list -}}
{{- range $gate.extraClosed -}}
{{- $tail = concat $tail (list "--closed" .) -}}
{{- end -}}
{{- if $gate.ipv6LinkLocal -}}
{{- $tail = append $tail "--ipv6-link-local" -}}
{{- end -}}
{{- $tail = concat $tail (list "--timeout" (toString $gate.attemptTimeoutSeconds)) -}}
{{- if .probe -}}
{{- $tail = concat $tail (list "--within" "30" "--best-effort") -}}
{{- else -}}
{{- $tail = concat $tail (list "--within" (toString ($gate.withinSeconds | int64))) -}}
{{- end -}}
{{- if eq .kind "snippet" -}}
{{- /* A snippet pod has one container: the gate, then in its place (execvp) the executor, or the probe. */ -}}
{{- $tail = concat $tail (list "--" "python3") (ternary (list "/opt/sandboxd/probe/sandbox_probe.py") (list "-m" "sandbox_executor") (.probe | default false)) -}}
{{- end -}}
{{- $part := .part | default "" -}}
{{- if eq $part "head" -}}
{{- toJson $head -}}
{{- else if eq $part "tail" -}}
{{- toJson $tail -}}
{{- else -}}
{{- toJson (concat $head $tail) -}}
{{- end -}}
{{- end -}}

{{/*
The isolation gate's command (same dict as sandboxd.isolationGateCommand) as one string, its elements
joined by newlines: how the admission params carry it (CEL compares it with command.join('\n')).
*/}}
{{- define "sandboxd.isolationGateCommandParam" -}}
{{- include "sandboxd.isolationGateCommand" . | fromJsonArray | join "\n" -}}
{{- end -}}

{{/*
whenUnsatisfiable of the spread over nodes every sandbox pod carries (sandboxPods.topologySpread), or "" for none:
sandboxd's placement.topologySpread and the admission param topologySpreadWhenUnsatisfiable.
*/}}
{{- define "sandboxd.sandboxPodSpread" -}}
{{- with .Values.sandboxPods.topologySpread }}{{ ternary .whenUnsatisfiable "" .enabled }}{{ end }}
{{- end }}

{{/*
The node selector of sandbox pods as the admission param nodeSelector holds it (sandboxd-placement): one
"<key>=<value>" line per entry (neither a label key nor a label value holds "=" or a newline).
*/}}
{{- define "sandboxd.sandboxPodNodeSelectorParam" -}}
{{- $lines := list }}
{{- range $key, $value := .Values.sandboxPods.nodeSelector }}
{{- $lines = append $lines (printf "%s=%s" $key (toString $value)) }}
{{- end }}
{{- join "\n" $lines }}
{{- end }}

{{/*
The tolerations of sandbox pods as the admission param tolerations holds them (sandboxd-placement): one
"<key>,<operator>,<value>,<effect>,<tolerationSeconds>" line per toleration, an unset operator as Equal (what the
API means by it), any other unset field empty. The policy writes each toleration of a pod the same way.
*/}}
{{- define "sandboxd.sandboxPodTolerationsParam" -}}
{{- $lines := list }}
{{- range .Values.sandboxPods.tolerations }}
{{- $seconds := ternary "" (toString (.tolerationSeconds | int64)) (kindIs "invalid" .tolerationSeconds) }}
{{- $lines = append $lines (join "," (list (.key | default "") (.operator | default "Equal") (.value | default "" | toString) (.effect | default "") $seconds)) }}
{{- end }}
{{- join "\n" $lines }}
{{- end }}
