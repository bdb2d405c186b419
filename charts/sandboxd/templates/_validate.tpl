{{/*
Every check of the values (and of the chart's own files) that helm cannot express in values.schema.json: each
refuses the install with its reason. Run once, by validate.yaml; helm stops at the first refusal and renders nothing.
*/}}
{{- define "sandboxd.validate" -}}

{{- if eq .Values.sandboxNamespace.name .Release.Namespace }}
{{- fail "sandboxNamespace.name must differ from the release namespace: sandbox pods need a namespace of their own" }}
{{- end }}

{{- range .Values.networkPolicy.extraBlockedCidrs }}
{{- if and (contains ":" .) (lt (atoi (last (splitList "/" .))) 3) }}
{{- fail (printf "networkPolicy.extraBlockedCidrs: %s is wider than /3; tool pods reach IPv6 only in 2000::/3, so list the part of it to block, or set networkPolicy.ipv6=false to block all IPv6" .) }}
{{- end }}
{{- end }}

{{- if gt (.Values.sandboxUidRange.min | int64) (.Values.sandboxUidRange.max | int64) }}
{{- fail "sandboxUidRange.min must not be above sandboxUidRange.max" }}
{{- end }}

{{- /* The pool, and the pods it and the warm tool pods hold, within the sandbox namespace's pod quota. */}}
{{- $poolMax := include "sandboxd.poolMax" . | int64 }}
{{- $poolTarget := .Values.snippet.poolTarget | int64 }}
{{- if lt $poolMax $poolTarget }}
{{- fail (printf "snippet.poolMax (%d) must be at least snippet.poolTarget (%d)" $poolMax $poolTarget) }}
{{- end }}
{{- $quota := .Values.sandboxNamespace.resourceQuota }}
{{- if and $quota.enabled $quota.hard.pods }}
{{- $quotaPods := atoi (toString $quota.hard.pods) }}
{{- if ge $poolMax $quotaPods }}
{{- fail (printf "snippet.poolMax (%d) leaves no room under sandboxNamespace.resourceQuota.hard.pods (%s) for runs, sessions and tool calls" $poolMax (toString $quota.hard.pods)) }}
{{- end }}
{{- $warmToolPods := 0 }}
{{- range .Values.tool.warmImages }}
{{- $warmToolPods = add $warmToolPods (.pods | default 1) }}
{{- end }}
{{- if ge (add $poolMax $warmToolPods) $quotaPods }}
{{- fail (printf "snippet.poolMax (%d) and the warm tool pods of tool.warmImages (%d) leave no room under sandboxNamespace.resourceQuota.hard.pods (%s) for runs, sessions and tool calls" $poolMax $warmToolPods (toString $quota.hard.pods)) }}
{{- end }}
{{- end }}

{{- /* A set terminationGracePeriodSeconds below what a stopping replica needs would let the kubelet kill calls
     the replica accepted. */}}
{{- $least := include "sandboxd.leastTerminationGracePeriodSeconds" . | int64 }}
{{- $given := include "sandboxd.terminationGracePeriodSeconds" . | int64 }}
{{- if lt $given $least }}
{{- fail (printf "terminationGracePeriodSeconds %d is too short: a stopping replica needs lifecycle.shutdownDelaySeconds (%d) + its drain of max(snippet.maxTimeoutSeconds %d, tool.readyTimeoutSeconds %d + tool.maxTimeoutSeconds %d) + 10 s + 5 s to stop = %d s; raise it to at least %d or lower the timeouts" $given (.Values.lifecycle.shutdownDelaySeconds | int64) (.Values.snippet.maxTimeoutSeconds | int64) (.Values.tool.readyTimeoutSeconds | int64) (.Values.tool.maxTimeoutSeconds | int64) $least $least) }}
{{- end }}

{{- /* Egress profiles (D11): every profile named must be one the chart deploys, or internet unless
     tool.egress.internet=false switched it off. */}}
{{- $egress := .Values.tool.egress }}
{{- if hasKey $egress.profiles "internet" }}
{{- fail "tool.egress.profiles: \"internet\" is reserved for the default egress (the public internet, no proxy); name the profile otherwise" }}
{{- end }}
{{- if not $egress.internet }}
{{- if eq $egress.defaultProfile "internet" }}
{{- fail "tool.egress.internet=false switches the internet profile off, but tool.egress.defaultProfile is internet: set it to a profile of tool.egress.profiles" }}
{{- end }}
{{- range .Values.tool.warmImages }}
{{- if eq (.egress | default "") "internet" }}
{{- fail (printf "tool.warmImages: %q names egress profile \"internet\", which tool.egress.internet=false switches off" .image) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name := list $egress.defaultProfile }}
{{- if not (or (eq $name "internet") (hasKey $egress.profiles $name)) }}
{{- fail (printf "tool.egress.defaultProfile %q is neither internet nor a profile of tool.egress.profiles" $name) }}
{{- end }}
{{- end }}
{{- range .Values.tool.warmImages }}
{{- if and .egress (not (or (eq .egress "internet") (hasKey $egress.profiles .egress))) }}
{{- fail (printf "tool.warmImages: %q names egress profile %q, which is neither internet nor a profile of tool.egress.profiles" .image .egress) }}
{{- end }}
{{- end }}
{{- if gt (add ($egress.proxy.basePort | int64) (len $egress.profiles)) 65536 }}
{{- fail "tool.egress.proxy.basePort leaves no room for a port per profile below 65536" }}
{{- end }}

{{- /* Credentials of the egress profiles (issue 48, D18): what the proxy checks of them (egress-proxy/credentials.go),
     refused at install rather than by a proxy that would not start; and each name once, being its file's path. */}}
{{- $credentialProfiles := dict }}
{{- range $profile := keys $egress.profiles | sortAlpha }}
{{- $p := get $egress.profiles $profile }}
{{- $chosen := dict }}
{{- range $c := $p.credentials | default list }}
{{- $where := printf "tool.egress.profiles.%s.credentials %s" $profile $c.name }}
{{- if hasKey $credentialProfiles $c.name }}
{{- fail (printf "%s: profile %s has a credential of the same name; a name is its file in the proxy (/etc/sandboxd-egress/credentials/<name>/value), so it must be unique across the profiles" $where (get $credentialProfiles $c.name)) }}
{{- end }}
{{- $_ := set $credentialProfiles $c.name $profile }}
{{- $header := lower $c.header | replace "_" "-" }}
{{- if or (has $header (list "host" "content-length" "transfer-encoding" "connection" "keep-alive" "upgrade" "te" "trailer" "expect" "content-encoding" "accept-encoding")) (hasPrefix "proxy-" $header) }}
{{- fail (printf "%s: header %s frames the request, routes it or belongs to the hop, and cannot carry a credential (Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE, Trailer, Expect, Content-Encoding, Accept-Encoding, Proxy-*)" $where $c.header) }}
{{- end }}
{{- range $host := $c.hosts }}
{{- if contains "*" $host }}
{{- fail (printf "%s: host %s is not an exact name: a credential goes to exact hosts only" $where $host) }}
{{- end }}
{{- $allowed := false }}
{{- range $p.hosts }}
{{- if or (eq . $host) (and (hasPrefix "*." .) (hasSuffix (trimPrefix "*" .) $host)) }}
{{- $allowed = true }}
{{- end }}
{{- end }}
{{- if not $allowed }}
{{- fail (printf "%s: host %s is not allowed by the profile's hosts %s" $where $host (toJson $p.hosts)) }}
{{- end }}
{{- $key := printf "%s %s" $c.project $host }}
{{- if hasKey $chosen $key }}
{{- fail (printf "tool.egress.profiles.%s.credentials: %s and %s both fill requests of project %s to %s: one credential per project and host in a profile" $profile (get $chosen $key) $c.name $c.project $host) }}
{{- end }}
{{- $_ := set $chosen $key $c.name }}
{{- end }}
{{- end }}
{{- end }}

{{- if and .Values.runtimeClass.create (not .Values.runtimeClassName) }}
{{- fail "runtimeClass.create=true needs runtimeClassName: the name of the RuntimeClass to create, which sandbox pods then use (e.g. --set runtimeClassName=gvisor)" }}
{{- end }}

{{- /* admission-policies.yaml emits these files as written: they must be there, and parse. */}}
{{- if .Values.admission.enabled }}
{{- $files := .Files.Glob "policies/admission/*.yaml" }}
{{- if not $files }}
{{- fail "no policies/admission/*.yaml in the chart: charts/sandboxd/policies must link to the repository's policies/ directory" }}
{{- end }}
{{- range $path, $_ := $files }}
{{- $policy := fromYaml ($.Files.Get $path) }}
{{- if hasKey $policy "Error" }}
{{- fail (printf "%s: %s" $path $policy.Error) }}
{{- end }}
{{- end }}
{{- end }}

{{- end }}
