{{- define "forge.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "forge.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "forge.labels" -}}
{{ include "forge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* PostgreSQL is in use: replicas may share it (a Deployment). */}}
{{- define "forge.postgres" -}}
{{- if or .Values.database.url .Values.database.existingSecret -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding the App's credentials, when there is one. */}}
{{- define "forge.appSecret" -}}
{{- if .Values.github.existingSecret -}}{{ .Values.github.existingSecret }}{{- else if .Values.github.app.integrationID -}}{{ include "forge.fullname" . }}{{- end -}}
{{- end -}}
