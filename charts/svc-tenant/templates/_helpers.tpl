{{/*
Labels of every object this chart owns: the tenant's labels (namespaceLabels, spec §2.5:
tenant, managed-by=svc, mssp-id, install-id, tenant-id) plus the standard ones, which win on a
clash. tenant-id and managed-by are set here as well so they hold even if namespaceLabels were
empty; the guard refuses values where they disagree.
*/}}
{{- define "svc-tenant.labels" -}}
{{- $root := index . 0 -}}
{{- $labels := dict
  "app.kubernetes.io/name" (index . 1)
  "app.kubernetes.io/instance" $root.Release.Name
  "app.kubernetes.io/part-of" "svc-tenant"
  "app.kubernetes.io/managed-by" $root.Release.Service
  "app.kubernetes.io/version" $root.Chart.Version
  "helm.sh/chart" (printf "%s-%s" $root.Chart.Name $root.Chart.Version)
  "tenant-id" $root.Values.tenant.id
  "managed-by" "svc"
-}}
{{- toYaml (merge $labels $root.Values.namespaceLabels) -}}
{{- end -}}

{{- define "svc-tenant.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{/* Spec §9.3.1: a service-authored image is pinned by digest whenever one is given. */}}
{{- define "svc-tenant.adapterImage" -}}
{{- $i := .Values.adapter.image -}}
{{- if $i.digest -}}
{{ $i.repository }}@{{ $i.digest }}
{{- else -}}
{{ $i.repository }}:{{ $i.tag }}
{{- end -}}
{{- end -}}

{{/* Pod selector of the monitoring manager (charts/monitor). */}}
{{- define "svc-tenant.managerSelector" -}}
app.kubernetes.io/name: monitor-manager
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The port of adapter.apiUrl (80/443 by scheme when it names none): the only port the adapter may
reach in the install namespace. svc-system's Service forwards 8080 to the API pods' 8080, so the
URL's port is also the pod port a NetworkPolicy matches.
*/}}
{{- define "svc-tenant.apiPort" -}}
{{- $url := urlParse .Values.adapter.apiUrl -}}
{{- $port := regexFind ":[0-9]+$" $url.host | trimPrefix ":" -}}
{{- $port | default (ternary "443" "80" (eq $url.scheme "https")) -}}
{{- end -}}

{{/*
The adapter's indexer login (username svc-adapter, password), written by svc at provisioning
(src/orchestrator/indexer-security.ts ADAPTER_INDEXER_SECRET); the user is read-only on
wazuh-alerts-* (docs/charts-tenant.md "Adapter").
*/}}
{{- define "svc-tenant.adapterIndexerSecret" -}}svc-adapter-indexer{{- end -}}

{{/*
The pod placement of one workload, from scheduling (contracts/scheduling.ts): its own entry
under scheduling.workloads when there is one, else the defaults; empty renders nothing.
Called as (list $ "<workload name>").
*/}}
{{- define "svc-tenant.placement" -}}
{{- $s := (index . 0).Values.scheduling -}}
{{- $p := index $s.workloads (index . 1) | default $s -}}
{{- with $p.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
