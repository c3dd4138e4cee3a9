{{/* Upstream images, pinned by exact tag; changing one is a new -svc-vN version (spec §9.3). */}}
{{- define "cases.image.server" -}}strangebee/thehive:5.4.7-1{{- end -}}
{{- define "cases.image.store" -}}cassandra:4.1.7{{- end -}}

{{/* The Secret svc writes into the namespace before installing (spec §9.4 items 2, 4, 6). */}}
{{- define "cases.bootstrapSecret" -}}svc-bootstrap{{- end -}}

{{/* Selector labels of one component: (list $ "manager"). Immutable once installed. */}}
{{- define "cases.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: cases-{{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{/*
Labels of every object: the tenant's labels (global.labels, which svc renders equal to
namespaceLabels: tenant-id, managed-by=svc, ...) plus the standard ones, which win on a clash.
*/}}
{{- define "cases.labels" -}}
{{- $root := index . 0 -}}
{{- $labels := dict
  "app.kubernetes.io/name" (printf "cases-%s" (index . 1))
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
{{- define "cases.podDefaults" -}}
automountServiceAccountToken: false
enableServiceLinks: false
{{- end -}}

{{- define "cases.containerSecurity" -}}
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
{{- define "cases.placement" -}}
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
