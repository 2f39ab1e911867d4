{{/* Names and labels. The objects are named as in manifests/ (the chart's name), not after
the release: the controller is cluster-wide, one release per cluster. */}}
{{- define "ascendjob-controller.fullname" -}}
{{- default .Chart.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels of every object: manifests/'s part-of, and Helm's own. */}}
{{- define "ascendjob-controller.commonLabels" -}}
app.kubernetes.io/part-of: ascendjob-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "ascendjob-controller.labels" -}}
app.kubernetes.io/name: ascendjob-controller
{{ include "ascendjob-controller.commonLabels" . }}
{{- end -}}

{{/* Selects the controller's pods; fixed, so the metrics Service and ServiceMonitor match. */}}
{{- define "ascendjob-controller.selectorLabels" -}}
app.kubernetes.io/name: ascendjob-controller
app.kubernetes.io/component: controller
{{- end -}}

{{- define "ascendjob-controller.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The namespace's enforced Pod Security level: namespace.podSecurity, but `privileged` with
ranktable.hostPath, since `baseline` and `restricted` both forbid hostPath volumes (the pods
would be refused). As manifests/components/ranktable-hostpath. */}}
{{- define "ascendjob-controller.podSecurity" -}}
{{- if .Values.ranktable.hostPath.enabled -}}
privileged
{{- else -}}
{{- .Values.namespace.podSecurity -}}
{{- end -}}
{{- end -}}
