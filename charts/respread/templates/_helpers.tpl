{{/*
Names. With the defaults and a release named "respread" every object is named as in deploy/.
*/}}
{{- define "respread.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "respread.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "respread.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "respread.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "respread.leaseName" -}}
{{- default (include "respread.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{- define "respread.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Labels: deploy/'s (app.kubernetes.io/name and part-of) plus Helm's own (instance, managed-by,
version, helm.sh/chart), which the comparison with deploy/ leaves out.
*/}}
{{- define "respread.labels" -}}
app.kubernetes.io/name: {{ include "respread.name" . }}
app.kubernetes.io/part-of: respread
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
The operator's pods: deploy/'s selector plus the release, so two releases never select each
other's pods.
*/}}
{{- define "respread.selectorLabels" -}}
app.kubernetes.io/name: {{ include "respread.name" . }}
app.kubernetes.io/component: operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
