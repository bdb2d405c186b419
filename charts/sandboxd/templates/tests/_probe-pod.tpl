{{/*
The helm-test probe's sandbox pods (tests/probe-configmap.yaml hands them to the probe runner): one pod per
sandbox kind and one per egress profile, hardened exactly like the pods sandboxd creates (PodHardening; ProbeHardeningTest holds the two
alike). Only the probe uses the templates in this file.
*/}}

{{/*
The uid of a helm-test probe pod of one kind ("snippet" or "tool"): from the sandbox range like
sandboxd's pods, a different one per kind when the range allows.
*/}}
{{- define "sandboxd.probeUid" -}}
{{- $min := include "sandboxd.sandboxUidMin" .ctx | int64 }}
{{- $max := include "sandboxd.sandboxUidMax" .ctx | int64 }}
{{- if and (eq .kind "tool") (lt $min $max) }}{{ add $min 1 }}{{ else }}{{ $min }}{{ end }}
{{- end }}

{{/*
Pod securityContext of a sandbox pod: what sandboxd sets (PodHardening.podSecurityContext) and the
admission policies and PodSecurity restricted demand, with the pod's uid (dict "ctx" $ "uid" UID).
Used by the helm-test probe pods, which must look exactly like sandboxd's (ProbeHardeningTest).
*/}}
{{- define "sandboxd.sandboxPodSecurityContext" -}}
{{- $ := .ctx }}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
fsGroup: {{ .uid }}
{{- with include "sandboxd.supplementalGroupsPolicy" $ }}
supplementalGroupsPolicy: {{ . }}
{{- end }}
seccompProfile:
  type: {{ $.Values.seccomp.profileType }}
  {{- if eq $.Values.seccomp.profileType "Localhost" }}
  localhostProfile: {{ include "sandboxd.localhostProfile" $ }}
  {{- end }}
{{- end }}

{{/*
Container securityContext of a container of a sandbox pod (dict "ctx" $ "uid" UID): as sandboxd
writes it (PodHardening.containerSecurityContext), with the pod's own uid. ProbeHardeningTest holds
the two alike.
*/}}
{{- define "sandboxd.sandboxContainerSecurityContext" -}}
{{- $ := .ctx }}
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
capabilities:
  drop:
    - ALL
seccompProfile:
  type: {{ $.Values.seccomp.profileType }}
  {{- if eq $.Values.seccomp.profileType "Localhost" }}
  localhostProfile: {{ include "sandboxd.localhostProfile" $ }}
  {{- end }}
{{- end }}

{{/*
Kubernetes resources from a sandbox-kind limits/requests value (ephemeralStorage -> ephemeral-storage).
*/}}
{{- define "sandboxd.resourceList" -}}
cpu: {{ .cpu | toString | quote }}
memory: {{ .memory | toString | quote }}
ephemeral-storage: {{ .ephemeralStorage | toString | quote }}
{{- end }}

{{/*
A helm-test probe pod for one sandbox kind ("snippet" or "tool"), hardened exactly like the pods
sandboxd creates (dict "ctx" $ "kind" KIND ["egress" PROFILE]). A tool pod with "egress" is one of that
egress profile (D11) as sandboxd makes it: the label sandboxd.io/egress, the gate that sees cluster DNS
closed (kind profiledTool) and the proxy variables, whose value (http://<the proxy Service's
ClusterIP>:<the profile's port>) the probe runner fills in. The probe runner fills in the container args.
*/}}
{{- define "sandboxd.probeSandboxPod" -}}
{{- $ := .ctx }}
{{- $kind := .kind }}
{{- $egress := .egress | default "" }}
{{- $name := ternary (printf "%s-%s" $kind $egress) $kind (ne $egress "") }}
{{- $gateKind := ternary "profiledTool" $kind (ne $egress "") }}
{{- $limits := index $.Values $kind "limits" }}
{{- $requests := index $.Values $kind "requests" }}
{{- $uid := include "sandboxd.probeUid" (dict "ctx" $ "kind" $kind) }}
apiVersion: v1
kind: Pod
metadata:
  generateName: {{ printf "%s-%s-" (include "sandboxd.probeServiceAccountName" $ | trunc 40 | trimSuffix "-") $name }}
  namespace: {{ include "sandboxd.sandboxNamespace" $ }}
  labels:
    # Not managed-by=sandboxd: sandboxd must never adopt a probe pod into its pool.
    app.kubernetes.io/managed-by: sandboxd-probe
    app.kubernetes.io/instance: {{ $.Release.Name }}
    sandboxd.io/kind: {{ $kind }}
    sandboxd.io/probe: "true"
    {{- with $egress }}
    sandboxd.io/egress: {{ . }}
    {{- end }}
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  restartPolicy: Never
  # As sandboxd's pods (PodHardening.TERMINATION_GRACE_SECONDS; sandboxd-isolation-gate admits no other value): 1, not
  # 0, so a delete leaves the pod's object, and its NetworkPolicy, until the kubelet has stopped its containers.
  terminationGracePeriodSeconds: 1
  activeDeadlineSeconds: {{ $.Values.probe.timeoutSeconds | int64 }}
  {{- with $.Values.runtimeClassName }}
  runtimeClassName: {{ . }}
  {{- end }}
  # Where sandboxd's pods go (sandboxPods; sandboxd-placement admits no other node selector or toleration), so the
  # probe tests the nodes the sandboxes run on. No spread: one pod of a kind has nothing to spread from.
  {{- with $.Values.sandboxPods.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $.Values.sandboxPods.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "sandboxd.sandboxPodSecurityContext" (dict "ctx" $ "uid" $uid) | nindent 4 }}
  {{- $gate := include "sandboxd.isolationGateCommand" (dict "ctx" $ "kind" $gateKind "probe" true) }}
  {{- if eq $kind "tool" }}
  initContainers:
    # The same isolation gate sandboxd puts in front of every sandbox (NetworkPolicy enforcers program
    # a new pod's rules asynchronously), best-effort here: if isolation never comes, the probe itself
    # must run and report the escapes.
    - name: isolation-gate
      image: {{ include "sandboxd.snippetImage" $ }}
      imagePullPolicy: {{ $.Values.snippet.image.pullPolicy }}
      command: {{ $gate }}
      securityContext:
        {{- include "sandboxd.sandboxContainerSecurityContext" (dict "ctx" $ "uid" $uid) | nindent 8 }}
      resources:
        requests:
          {{- include "sandboxd.resourceList" $requests | nindent 10 }}
        limits:
          {{- include "sandboxd.resourceList" $limits | nindent 10 }}
  {{- end }}
  containers:
    - name: probe
      image: {{ include "sandboxd.snippetImage" $ }}
      imagePullPolicy: {{ $.Values.snippet.image.pullPolicy }}
      {{- if eq $kind "tool" }}
      command: ["python3", "/opt/sandboxd/probe/sandbox_probe.py"]
      {{- else }}
      # As a snippet pod: the gate (best-effort), then the probe in its place with the runner's args.
      command: {{ $gate }}
      {{- end }}
      args: []
      env:
        - name: TMPDIR
          value: /tmp
        {{- if $egress }}
        # http://<the proxy Service's ClusterIP>:<the profile's port>, filled in by the probe runner.
        {{- range list "HTTPS_PROXY" "HTTP_PROXY" "https_proxy" "http_proxy" }}
        - name: {{ . }}
          value: ""
        {{- end }}
        {{- end }}
      securityContext:
        {{- include "sandboxd.sandboxContainerSecurityContext" (dict "ctx" $ "uid" $uid) | nindent 8 }}
      resources:
        requests:
          {{- include "sandboxd.resourceList" $requests | nindent 10 }}
        limits:
          {{- include "sandboxd.resourceList" $limits | nindent 10 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: {{ $.Values.snippet.workdirSizeLimit | toString | quote }}
{{- end }}
