{{/* Upstream images, pinned by exact tag; changing one is a new -svc-vN version (spec §9.3). */}}
{{- define "monitor.image.manager" -}}wazuh/wazuh-manager:4.9.2{{- end -}}
{{- define "monitor.image.indexer" -}}wazuh/wazuh-indexer:4.9.2{{- end -}}
{{- define "monitor.image.dashboard" -}}wazuh/wazuh-dashboard:4.9.2{{- end -}}

{{/* The Secret svc writes into the namespace before installing (spec §9.4 items 2, 4, 6). */}}
{{- define "monitor.bootstrapSecret" -}}svc-bootstrap{{- end -}}

{{/*
The indexer's PKI (root-ca.pem, indexer.pem, indexer-key.pem, admin.pem, admin-key.pem) and its
security plugin configuration (internal_users.yml, roles.yml, roles_mapping.yml), both written by
svc before installing (src/orchestrator/indexer-pki.ts, indexer-security.ts).
*/}}
{{- define "monitor.indexerTlsSecret" -}}svc-indexer-tls{{- end -}}
{{- define "monitor.indexerSecuritySecret" -}}svc-indexer-security{{- end -}}

{{/*
Subjects of the node and admin certificates svc issues (RFC 4514, as the security plugin reads
them; src/orchestrator/indexer-pki.ts INDEXER_NODE_DN / INDEXER_ADMIN_DN, a test holds them equal).
*/}}
{{- define "monitor.indexerNodeDn" -}}CN=monitor-indexer,OU=indexer,O=svc-tenant{{- end -}}
{{- define "monitor.indexerAdminDn" -}}CN=svc-indexer-admin,OU=indexer,O=svc-tenant{{- end -}}

{{/*
The indexer pod's security-config sidecar: a fixed size, not a value (svc's quota check adds it,
src/orchestrator/render.ts INDEXER_SIDECAR_RESOURCES; a test holds them equal).
*/}}
{{- define "monitor.indexerSidecarResources" -}}
requests:
  cpu: 10m
  memory: 64Mi
limits:
  cpu: 250m
  memory: 256Mi
{{- end -}}

{{/* Where the indexer image reads its configuration (OPENSEARCH_PATH_CONF). */}}
{{- define "monitor.indexerHome" -}}/usr/share/wazuh-indexer{{- end -}}

{{/* Selector labels of one component: (list $ "manager"). Immutable once installed. */}}
{{- define "monitor.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: monitor-{{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{/*
Labels of every object: the tenant's labels (global.labels, which svc renders equal to
namespaceLabels: tenant-id, managed-by=svc, ...) plus the standard ones, which win on a clash.
*/}}
{{- define "monitor.labels" -}}
{{- $root := index . 0 -}}
{{- $labels := dict
  "app.kubernetes.io/name" (printf "monitor-%s" (index . 1))
  "app.kubernetes.io/instance" $root.Release.Name
  "app.kubernetes.io/component" (index . 1)
  "app.kubernetes.io/part-of" "svc-tenant"
  "app.kubernetes.io/managed-by" $root.Release.Service
  "app.kubernetes.io/version" $root.Chart.AppVersion
  "helm.sh/chart" (printf "%s-%s" $root.Chart.Name $root.Chart.Version)
-}}
{{- toYaml (merge $labels (($root.Values.global | default dict).labels | default dict)) -}}
{{- end -}}

{{/* Pod-level hardening shared by every pod of this chart. */}}
{{- define "monitor.podDefaults" -}}
automountServiceAccountToken: false
enableServiceLinks: false
{{- end -}}

{{- define "monitor.containerSecurity" -}}
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
The pod placement of one workload, from global.scheduling (the parent chart's scheduling): its
own entry under workloads when there is one, else the defaults; empty renders nothing. Called
as (list $ "<workload name>").
*/}}
{{- define "monitor.placement" -}}
{{- $s := ((index . 0).Values.global | default dict).scheduling | default dict -}}
{{- $p := index ($s.workloads | default dict) (index . 1) | default $s -}}
{{- with $p.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
