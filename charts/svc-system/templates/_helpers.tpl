{{/*
Labels every object of the release carries. part-of=svc is what the NetworkPolicies select on.
*/}}
{{- define "svc.labels" -}}
app.kubernetes.io/name: svc
app.kubernetes.io/part-of: svc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/*
svc.labels without the version and chart labels, for a pod template that must not change when
only the chart's version does: the database's. A changed template makes the StatefulSet
replace svc-postgres-0, so every upgrade would restart PostgreSQL (found by
test/realnode/upgrade.test.ts; docs/packaging.md "Upgrade").
*/}}
{{- define "svc.stableLabels" -}}
app.kubernetes.io/name: svc
app.kubernetes.io/part-of: svc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: (list $ "api"). */}}
{{- define "svc.selector" -}}
app.kubernetes.io/name: svc
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/*
Cluster-scoped objects are named after the install namespace too, so two installs (in two
namespaces) can share a cluster without one release owning the other's objects.
*/}}
{{- define "svc.clusterName" -}}
{{ index . 1 }}.{{ (index . 0).Release.Namespace }}
{{- end }}

{{/*
An image reference, pinned by digest when one is given (spec §9.3): `repository:tag@digest`,
where the runtime pulls the digest and the tag only documents it (svc's parseImage reads both).
*/}}
{{- define "svc.imageRef" -}}
{{ .repository }}:{{ .tag }}{{ with .digest }}@{{ . }}{{ end }}
{{- end }}

{{- define "svc.image" -}}
{{- $i := .Values.image }}
{{- include "svc.imageRef" (dict "repository" (printf "%s/svc" $i.registry) "tag" ($i.tag | default .Chart.AppVersion) "digest" $i.digest) }}
{{- end }}

{{- define "svc.databaseSecret" -}}
{{- if .Values.database.enabled }}svc-database{{ else }}{{ .Values.database.external.existingSecret }}{{ end }}
{{- end }}

{{- define "svc.databaseHost" -}}
{{- if .Values.database.enabled }}svc-postgres.{{ .Release.Namespace }}.svc{{ else }}{{ .Values.database.external.host }}{{ end }}
{{- end }}

{{/*
Checks run on every render (install, upgrade, template), before anything reaches the cluster.
values.schema.json has already checked shapes and patterns; these are the rules a schema
cannot state. See docs/charts-system.md "Checks before install and upgrade".
*/}}
{{- define "svc.checks" -}}
{{- $nil := "00000000-0000-0000-0000-000000000000" }}
{{- if ne .Release.Namespace .Values.install.namespace }}
{{- fail (printf "svc-system must be installed into the install namespace %q (install.namespace), not %q: use helm --namespace %s" .Values.install.namespace .Release.Namespace .Values.install.namespace) }}
{{- end }}
{{- if eq .Values.install.msspId $nil }}
{{- fail "install.msspId: expected this MSSP's uuid, got the nil uuid" }}
{{- end }}
{{- if eq .Values.install.installId $nil }}
{{- fail "install.installId: expected this install's uuid, got the nil uuid" }}
{{- end }}
{{- with (lookup "v1" "ConfigMap" .Release.Namespace "svc-install") }}
{{- $was := .data | default dict }}
{{- range $key := list "installId" "msspId" }}
{{- $old := get $was $key }}
{{- $new := get $.Values.install $key }}
{{- if and $old (ne $old $new) }}
{{- fail (printf "install.%s: this install already has %s %s (ConfigMap svc-install); it must not change on upgrade, got %s" $key $key $old $new) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Environment of svc serve (names as in src/config/index.ts and the README); the API and the
orchestrator differ only in SVC_ORCHESTRATOR, which each Deployment sets itself.
*/}}
{{- define "svc.env" -}}
- name: SVC_HOST
  value: 0.0.0.0
- name: SVC_PORT
  value: "8080"
- name: SVC_AUTH_MODE
  value: {{ .Values.auth.mode | quote }}
- name: SVC_DATA_DIR
  value: /var/lib/svc
- name: SVC_INSTALL_NAMESPACE
  value: {{ .Release.Namespace | quote }}
- name: SVC_MSSP_ID
  value: {{ .Values.install.msspId | quote }}
- name: SVC_MSSP_NAME
  value: {{ .Values.install.msspName | quote }}
- name: SVC_INSTALL_ID
  value: {{ .Values.install.installId | quote }}
- name: SVC_INSTALL_LABEL
  value: {{ .Values.install.installLabel | quote }}
- name: SVC_API_URL
  value: {{ printf "http://svc-api.%s.svc:8080" .Release.Namespace | quote }}
- name: SVC_ADAPTER_IMAGE
  value: {{ include "svc.image" . | quote }}
- name: SVC_EDGE_PROXY
  value: {{ ternary "on" "off" .Values.edgeProxy.enabled | quote }}
- name: SVC_EDGE_PORT_BASE
  value: {{ .Values.edgeProxy.portBase | quote }}
- name: SVC_CLUSTER_DOMAIN
  value: {{ .Values.edgeProxy.clusterDomain | quote }}
- name: SVC_LLM_PROVIDER
  value: {{ .Values.defaults.llm.provider | quote }}
- name: SVC_LLM_BASE_URL
  value: {{ .Values.defaults.llm.baseUrl | quote }}
- name: SVC_LLM_MODEL
  value: {{ .Values.defaults.llm.model | quote }}
- name: SVC_LLM_PRICES
  value: {{ .Values.defaults.llm.prices | toJson | quote }}
- name: SVC_OUTBOUND_ALLOW_HOSTS
  value: {{ join "," .Values.outbound.allowHosts | quote }}
- name: SVC_OUTBOUND_ALLOW_CIDRS
  value: {{ join "," .Values.outbound.allowCIDRs | quote }}
- name: SVC_TENANT_STORAGE_CLASS
  value: {{ .Values.tenants.storageClassName | quote }}
- name: SVC_TENANT_SCHEDULING
  value: {{ .Values.tenants.scheduling | toJson | quote }}
- name: SVC_DECOMMISSION_GRACE
  value: {{ .Values.tenants.decommissionGrace | quote }}
- name: SVC_TENANT_RETENTION
  value: {{ .Values.tenants.retention | quote }}
{{- with .Values.tenants.packages }}
{{- /* Pulled by digest at start into the data volume; the registry's CA is outbound.caBundle. */}}
- name: SVC_TENANT_PACKAGES
  value: {{ join "," . | quote }}
{{- if $.Values.outbound.caBundle }}
- name: SVC_TENANT_PACKAGES_CA_FILE
  value: /etc/svc/outbound-ca/ca.pem
{{- end }}
{{- end }}
{{- if .Values.outbound.caBundle }}
- name: SVC_OUTBOUND_CA_FILE
  value: /etc/svc/outbound-ca/ca.pem
{{- end }}
- name: SVC_MSSP_HOSTNAME
  value: {{ .Values.ingress.hostnames.mssp | quote }}
- name: SVC_CUSTOMER_HOSTNAME
  value: {{ .Values.ingress.hostnames.customer | quote }}
- name: SVC_TRUSTED_HEADER_USER
  value: {{ .Values.oidc.trustedHeaderUser | quote }}
- name: SVC_TRUSTED_HEADER_EMAIL
  value: {{ .Values.oidc.trustedHeaderEmail | quote }}
- name: SVC_TRUSTED_HEADER_GROUPS
  value: {{ .Values.oidc.trustedHeaderGroups | quote }}
- name: SVC_TRUSTED_PROXY_CIDRS
  value: {{ join "," .Values.oidc.trustedProxyCIDRs | quote }}
- name: SVC_METRICS_HOST
  value: 0.0.0.0
- name: SVC_METRICS_PORT
  value: {{ ternary .Values.metrics.port 0 .Values.metrics.enabled | quote }}
- name: SVC_TOKEN_SIGNING_KEY_FILE
  value: /var/run/secrets/svc/token/signing-key.pem
- name: SVC_DATABASE_HOST
  value: {{ include "svc.databaseHost" . | quote }}
- name: SVC_DATABASE_PORT
  value: {{ ternary 5432 .Values.database.external.port .Values.database.enabled | quote }}
- name: SVC_DATABASE_NAME
  value: {{ ternary "svc" .Values.database.external.database .Values.database.enabled | quote }}
- name: SVC_DATABASE_SSL
  value: {{ ternary "disable" .Values.database.external.ssl .Values.database.enabled | quote }}
- name: SVC_DATABASE_CREDENTIALS_DIR
  value: /var/run/secrets/svc/database
{{- if .Values.database.enabled }}
{{- /* The in-chart server: svc creates (and converges) the three roles and the database. */}}
- name: DATABASE_SUPERUSER_PASSWORD
  valueFrom:
    secretKeyRef:
      name: svc-database
      key: superuser_password
- name: SVC_DATABASE_BOOTSTRAP_URL
  value: postgres://postgres:$(DATABASE_SUPERUSER_PASSWORD)@{{ include "svc.databaseHost" . }}:5432/postgres
{{- end }}
{{- end }}

{{/*
The pooler's address for the API, the orchestrator and the job runner (pgbouncer.enabled): their
transactional pools go through it, while SVC_DATABASE_HOST stays the database itself for LISTEN,
session locks, the job queue and migrations (docs/operations.md "Connection pooling
(PgBouncer)"). Empty when the pooler is off.
*/}}
{{- define "svc.poolerEnv" -}}
{{- if .Values.pgbouncer.enabled -}}
- name: SVC_DATABASE_POOLER_HOST
  value: {{ printf "svc-pgbouncer.%s.svc" .Release.Namespace | quote }}
- name: SVC_DATABASE_POOLER_PORT
  value: "6432"
{{- end }}
{{- end }}

{{/*
What a pod serving /metrics adds when metrics.enabled (empty otherwise): the label the
svc-metrics Service selects, the scrape annotations, and the container port.
*/}}
{{- define "svc.metricsLabel" -}}
{{- if .Values.metrics.enabled -}}
svc/metrics: "true"
{{- end }}
{{- end }}

{{/*
The pod annotations of svc's own pods: the scrape annotations when metrics.enabled, and the
outbound CA bundle's checksum, since svc reads that file once at start: a changed bundle rolls
the pods.
*/}}
{{- define "svc.podAnnotations" -}}
{{- if .Values.metrics.enabled }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.metrics.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- if .Values.outbound.caBundle }}
checksum/outbound-ca: {{ .Values.outbound.caBundle | sha256sum }}
{{- end }}
{{- end }}

{{/* The NetworkPolicy rule admitting the scrapers' namespaces to the metrics port. */}}
{{- define "svc.metricsIngress" -}}
{{- if .Values.metrics.enabled -}}
- from:
    - namespaceSelector:
        matchLabels:
          {{- toYaml .Values.metrics.scrapeNamespaceSelector | nindent 10 }}
  ports:
    - port: metrics
      protocol: TCP
{{- end }}
{{- end }}

{{- define "svc.metricsPort" -}}
{{- if .Values.metrics.enabled -}}
- name: metrics
  containerPort: {{ .Values.metrics.port }}
{{- end }}
{{- end }}

{{/* Volumes and mounts of svc serve: credentials, token key, a writable data dir. */}}
{{- define "svc.volumes" -}}
- name: database-credentials
  secret:
    secretName: {{ include "svc.databaseSecret" . }}
    defaultMode: 0440
    items:
{{- range $key := list "admin_user" "admin_password" "app_user" "app_password" "mssp_user" "mssp_password" }}
      - key: {{ $key }}
        path: {{ $key }}
{{- end }}
- name: token-key
  secret:
    secretName: svc-token-key
    defaultMode: 0440
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- if .Values.outbound.caBundle }}
- name: outbound-ca
  configMap:
    name: svc-outbound-ca
{{- end }}
{{- end }}

{{- define "svc.volumeMounts" -}}
- name: database-credentials
  mountPath: /var/run/secrets/svc/database
  readOnly: true
- name: token-key
  mountPath: /var/run/secrets/svc/token
  readOnly: true
- name: data
  mountPath: /var/lib/svc
- name: tmp
  mountPath: /tmp
{{- if .Values.outbound.caBundle }}
- name: outbound-ca
  mountPath: /etc/svc/outbound-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "svc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* matchLabels of this install's tenant namespaces (guarded by the svc-tenant-namespaces policy). */}}
{{- define "svc.tenantNamespaces" -}}
managed-by: svc
install-id: {{ .Values.install.installId | quote }}
{{- end }}

{{/* Egress rule: DNS in kube-system, as the tenant chart's allow-dns. */}}
{{- define "svc.dnsEgress" -}}
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: kube-system
  ports:
    - protocol: UDP
      port: 53
    - protocol: TCP
      port: 53
{{- end }}

{{/*
Egress of svc's own pods (API, orchestrator, job runner): DNS; the database (the in-chart pod, or
database.external's port at any address, since a NetworkPolicy cannot name a host); the pooler's
pods (pgbouncer.enabled); the Kubernetes API (networkPolicies.kubeApiServer: the API server's
endpoint addresses and ports, which is what a policy sees after the `kubernetes` Service is
translated); every port of this
install's tenant namespaces (indexer, case and analysis APIs); svc's own API (SVC_API_URL,
which the svc-api policy admits from svc's pods); and outbound HTTPS to LLM providers and
integrations (networkPolicies.outbound).
*/}}
{{- define "svc.egress" -}}
{{- $np := .Values.networkPolicies }}
{{- include "svc.dnsEgress" . }}
{{- if .Values.database.enabled }}
- to:
    - podSelector:
        matchLabels:
          {{- include "svc.selector" (list . "database") | nindent 10 }}
  ports:
    - protocol: TCP
      port: 5432
{{- else }}
- ports:
    - protocol: TCP
      port: {{ .Values.database.external.port }}
{{- end }}
{{- if .Values.pgbouncer.enabled }}
- to:
    - podSelector:
        matchLabels:
          {{- include "svc.pgbouncerSelector" . | nindent 10 }}
  ports:
    - protocol: TCP
      port: 6432
{{- end }}
- ports:
    {{- range $np.kubeApiServer.ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
  {{- with $np.kubeApiServer.cidrs }}
  to:
    {{- range . }}
    - ipBlock:
        cidr: {{ . | quote }}
    {{- end }}
  {{- end }}
- to:
    - namespaceSelector:
        matchLabels:
          {{- include "svc.tenantNamespaces" . | nindent 10 }}
- to:
    - podSelector:
        matchLabels:
          {{- include "svc.selector" (list . "api") | nindent 10 }}
  ports:
    - protocol: TCP
      port: 8080
{{- with $np.outbound.ports }}
- ports:
    {{- range . }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
  {{- with $np.outbound.cidrs }}
  to:
    {{- range . }}
    - ipBlock:
        cidr: {{ . | quote }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/* Where every pod of the release runs (values scheduling.*): empty renders nothing. */}}
{{- define "svc.scheduling" -}}
{{- with .Values.scheduling.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.scheduling.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
