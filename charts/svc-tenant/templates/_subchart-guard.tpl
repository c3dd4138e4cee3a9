{{/*
Helm hands each subchart only the block under its own name (and `global`), so svc renders the
tenant's settings twice: components.<name> (the spec §2.9 contract) and <name> (what the
subchart sees), plus `global` for what every subchart needs. The schema cannot say "these two
are equal"; this template can, and refuses to render anything when a copy has drifted from its
source. Compared as JSON, so key order and YAML spelling do not matter. Helm itself writes
`global` into each enabled subchart's block, so it is left out of the comparison.
*/}}
{{- define "svc-tenant.subchart-guard" -}}
{{- $v := .Values -}}
{{- range $name := list "monitor" "cases" -}}
{{- $copy := omit (index $v $name) "global" -}}
{{- $source := index $v.components $name -}}
{{- if ne (toJson $copy) (toJson $source) -}}
{{- fail (printf "values: %s must equal components.%s (svc copies it for the %s subchart); got %s, components.%s is %s" $name $name $name (toJson $copy) $name (toJson $source)) -}}
{{- end -}}
{{- end -}}
{{- $analysis := omit $v.analysis "enabled" "global" -}}
{{- if ne (toJson $analysis) (toJson $v.components.analysis) -}}
{{- fail (printf "values: analysis (without enabled) must equal components.analysis; got %s, components.analysis is %s" (toJson $analysis) (toJson $v.components.analysis)) -}}
{{- end -}}
{{- $external := ne $v.integrations.externalAnalyzerUrl "" -}}
{{- if eq $v.analysis.enabled $external -}}
{{- fail (printf "values: analysis.enabled must be %t when integrations.externalAnalyzerUrl is %q" (not $external) $v.integrations.externalAnalyzerUrl) -}}
{{- end -}}
{{- if ne (toJson $v.global.labels) (toJson $v.namespaceLabels) -}}
{{- fail (printf "values: global.labels must equal namespaceLabels; got %s, namespaceLabels is %s" (toJson $v.global.labels) (toJson $v.namespaceLabels)) -}}
{{- end -}}
{{- with $v.monitorIngress.tls.issuerRef -}}
{{- fail (printf "values: monitorIngress.tls.issuerRef must be empty: svc issues the enrollment certificate into monitorIngress.tls.secretName itself (docs/enrollment.md), nothing would act on issuer %q" .) -}}
{{- end -}}
{{- if ne (toJson $v.global.scheduling) (toJson $v.scheduling) -}}
{{- fail (printf "values: global.scheduling must equal scheduling (svc copies it for the subcharts' pods); got %s, scheduling is %s" (toJson $v.global.scheduling) (toJson $v.scheduling)) -}}
{{- end -}}
{{- if ne $v.global.monitorTlsSecretName $v.monitorIngress.tls.secretName -}}
{{- fail (printf "values: global.monitorTlsSecretName must equal monitorIngress.tls.secretName (%q)" $v.monitorIngress.tls.secretName) -}}
{{- end -}}
{{- range $key, $want := dict "tenant-id" $v.tenant.id "managed-by" "svc" -}}
{{- $got := index $v.namespaceLabels $key | default "" -}}
{{- if ne $got $want -}}
{{- fail (printf "values: namespaceLabels.%s must be %q (spec §2.5), got %q" $key $want $got) -}}
{{- end -}}
{{- end -}}
{{- if eq $v.monitorIngress.mode "edge-proxy" -}}
{{- $p := $v.monitorIngress.edgePorts -}}
{{- if or (eq (int $p.events) 0) (eq (int $p.enrollment) 0) (eq (int $p.events) (int $p.enrollment)) -}}
{{- fail (printf "values: monitorIngress.edgePorts needs two distinct non-zero ports in edge-proxy mode, got events=%v enrollment=%v" $p.events $p.enrollment) -}}
{{- end -}}
{{- end -}}
{{- end -}}
