{{- define "warmpool.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "warmpool.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "warmpool.name" . -}}
{{- if contains $name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}
{{- end -}}

{{- /* Every namespaced object's metadata.namespace. */ -}}
{{- define "warmpool.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace -}}
{{- end -}}

{{- define "warmpool.labels" -}}
app.kubernetes.io/name: {{ include "warmpool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- /* A component's selector labels: (dict "root" . "component" "node-agent"). Immutable in a Deployment / DaemonSet: never change them. */ -}}
{{- define "warmpool.selectorLabels" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- /*
(dict "root" . "repository" "docker.io/library/redis"): the repository with its
registry replaced by global.imageRegistry when that is set. The registry is the
first path component when it names a host (has a "." or ":", or is
"localhost"), as Docker reads an image reference; without one, the image is
Docker Hub's and global.imageRegistry is put in front.
*/ -}}
{{- define "warmpool.withRegistry" -}}
{{- $registry := (.root.Values.global | default dict).imageRegistry | default "" -}}
{{- if $registry -}}
{{- $parts := splitn "/" 2 .repository -}}
{{- $first := $parts._0 -}}
{{- $rest := $parts._1 | default "" -}}
{{- $isHost := and (ne $rest "") (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- printf "%s/%s" (trimSuffix "/" $registry) (ternary $rest .repository $isHost) -}}
{{- else -}}
{{- .repository -}}
{{- end -}}
{{- end -}}

{{- /* (dict "root" . "name" "node-agent" "image" .Values.nodeAgent.image): repository[:tag][@digest], under global.imageRegistry when set. */ -}}
{{- define "warmpool.image" -}}
{{- $img := .image | default dict -}}
{{- $repo := include "warmpool.withRegistry" (dict "root" .root "repository" ($img.repository | default (printf "%s/%s" .root.Values.image.registry .name))) -}}
{{- if $img.digest -}}
{{ $repo }}@{{ $img.digest }}
{{- else -}}
{{ $repo }}:{{ $img.tag | default .root.Values.image.tag | default .root.Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- /* (dict "app" "control-plane" "flags" $cp.nodeFlags): the container's command, Node with the
component's flags on its command line and then the script the image's entrypoint runs
(images/build.sh: /usr/local/bin/node /app/apps/<app>/dist/main.js). The command line, not
NODE_OPTIONS, because Node accepts every V8 flag there and only an allowlist in NODE_OPTIONS. */ -}}
{{- define "warmpool.nodeCommand" -}}
command: {{ concat (list "/usr/local/bin/node") (.flags | default list) (list (printf "/app/apps/%s/dist/main.js" .app)) | toJson }}
{{- end -}}

{{- /* (dict "root" . "component" "control-plane" "serviceAccount" .Values.controlPlane.serviceAccount): the ServiceAccount a component runs as. */ -}}
{{- define "warmpool.serviceAccountName" -}}
{{- $sa := .serviceAccount | default dict -}}
{{- if $sa.name -}}
{{- $sa.name -}}
{{- else if (hasKey $sa "create" | ternary $sa.create true) -}}
{{- printf "%s-%s" (include "warmpool.fullname" .root) .component -}}
{{- else -}}
{{- /* Never the namespace's `default` ServiceAccount: the chart's bindings would grant it (every pod there runs as it). */ -}}
{{- fail (printf "serviceAccount.create=false for %s needs serviceAccount.name: an existing ServiceAccount the chart's bindings then grant" .component) -}}
{{- end -}}
{{- end -}}

{{- define "warmpool.tokenSecret" -}}
{{- .Values.fleetToken.existingSecret | default (printf "%s-fleet-token" (include "warmpool.fullname" .)) -}}
{{- end -}}

{{- define "warmpool.tokenKey" -}}
{{- if .Values.fleetToken.existingSecret }}{{ .Values.fleetToken.existingSecretKey | default "token" }}{{ else }}token{{ end -}}
{{- end -}}

{{- /*
Restarts the pods when the chart-managed token changes (a changed
`fleetToken.value`). A generated token never changes after install, and an
existingSecret is the user's: its rotation is picked up from the mounted file
without a restart (see "Rotating the fleet token").
*/ -}}
{{- define "warmpool.tokenChecksum" -}}
{{- printf "%s/%s/%s" (include "warmpool.tokenSecret" .) (include "warmpool.tokenKey" .) (.Values.fleetToken.value | default "") | sha256sum -}}
{{- end -}}

{{- /* A Go-style duration ("90s", "5m", "1h") as whole seconds, for PromQL. */ -}}
{{- define "warmpool.seconds" -}}
{{- $d := toString . -}}
{{- if hasSuffix "h" $d }}{{ mul (trimSuffix "h" $d | int) 3600 }}{{ else if hasSuffix "m" $d }}{{ mul (trimSuffix "m" $d | int) 60 }}{{ else }}{{ trimSuffix "s" $d | int }}{{ end -}}
{{- end -}}

{{- /* The in-chart Redis's URL (redis.enabled), else empty. */ -}}
{{- define "warmpool.inChartRedisUrl" -}}
{{- if .Values.redis.enabled -}}
redis://{{ include "warmpool.fullname" . }}-redis.{{ include "warmpool.namespace" . }}.svc:{{ .Values.redis.port }}
{{- end -}}
{{- end -}}

{{- /* Provisioning's Redis URL in the args: controlPlane.redis.url, else the in-chart Redis (empty with existingSecret: the URL comes from the Secret). */ -}}
{{- define "warmpool.redisUrl" -}}
{{- if not .Values.controlPlane.redis.existingSecret -}}
{{- .Values.controlPlane.redis.url | default (include "warmpool.inChartRedisUrl" .) -}}
{{- end -}}
{{- end -}}

{{- /* "true" when provisioning (the claim API, batch workers) is on, else empty. */ -}}
{{- define "warmpool.provisioning" -}}
{{- if or (include "warmpool.redisUrl" .) .Values.controlPlane.redis.existingSecret }}true{{ end -}}
{{- end -}}

{{- /* The federation hub: controlPlane.federation.redisUrl, else the in-chart Redis. */ -}}
{{- define "warmpool.federationRedisUrl" -}}
{{- .Values.controlPlane.federation.redisUrl | default (include "warmpool.inChartRedisUrl" .) -}}
{{- end -}}

{{- /* The in-chart Redis's password Secret (redis.auth), as YAML {name, key}. */ -}}
{{- define "warmpool.inChartRedisSecret" -}}
{{- if .Values.redis.auth.existingSecret -}}
name: {{ .Values.redis.auth.existingSecret }}
key: {{ .Values.redis.auth.existingSecretKey }}
{{- else -}}
name: {{ include "warmpool.fullname" . }}-redis
key: password
{{- end -}}
{{- end -}}

{{- /* The claims' Redis password Secret as YAML {name, key}: controlPlane.redis.passwordSecret, else the in-chart Redis's when claims use it; else empty. */ -}}
{{- define "warmpool.redisPasswordSecret" -}}
{{- $r := .Values.controlPlane.redis -}}
{{- if $r.passwordSecret.name -}}
name: {{ $r.passwordSecret.name }}
key: {{ $r.passwordSecret.key }}
{{- else if and .Values.redis.enabled (not $r.url) (not $r.existingSecret) -}}
{{ include "warmpool.inChartRedisSecret" . }}
{{- end -}}
{{- end -}}

{{- /* The federation hub's password Secret as YAML {name, key}: controlPlane.federation.redisPasswordSecret, else the in-chart Redis's when the hub is it; else empty. */ -}}
{{- define "warmpool.federationRedisPasswordSecret" -}}
{{- $f := .Values.controlPlane.federation -}}
{{- if $f.redisPasswordSecret.name -}}
name: {{ $f.redisPasswordSecret.name }}
key: {{ $f.redisPasswordSecret.key }}
{{- else if and .Values.redis.enabled (not $f.redisUrl) -}}
{{ include "warmpool.inChartRedisSecret" . }}
{{- end -}}
{{- end -}}

{{- /* The Secret of the Sandbox API's serving certificate: sandboxApi.tlsSecret, or cert-manager's; empty = self-signed at start. */ -}}
{{- define "warmpool.sandboxApiTlsSecret" -}}
{{- if .Values.sandboxApi.certManager.enabled -}}
{{- printf "%s-sandbox-api-tls" (include "warmpool.fullname" .) -}}
{{- else -}}
{{- .Values.sandboxApi.tlsSecret -}}
{{- end -}}
{{- end -}}

{{- /* A duration as the schema takes it (500ms, 5s, 1m30s, 1.5h) in milliseconds, for the checks the apps would otherwise fail at start. */ -}}
{{- define "warmpool.durationMs" -}}
{{- $ms := 0.0 -}}
{{- $units := dict "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ms|h|m|s)" . -1 -}}
{{- $ms = addf $ms (mulf (regexFind "^[0-9]+(\\.[0-9]+)?" . | float64) (get $units (regexReplaceAll "^[0-9]+(\\.[0-9]+)?" . ""))) -}}
{{- end -}}
{{- $ms -}}
{{- end -}}
