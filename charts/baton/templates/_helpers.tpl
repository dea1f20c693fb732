{{/* baton.name: the chart's name, or nameOverride. */}}
{{- define "baton.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* baton.fullname: the release's full name (fullnameOverride, else the release name, with the chart's name unless it already has it). */}}
{{- define "baton.fullname" -}}
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

{{/* baton.lock: the lock, i.e. the Lease's name (default: the full name). */}}
{{- define "baton.lock" -}}
{{- default (include "baton.fullname" .) .Values.lock }}
{{- end }}

{{- define "baton.selectorLabels" -}}
app.kubernetes.io/name: {{ include "baton.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "baton.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "baton.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "baton.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "baton.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* baton.image: the baton image, tag defaulting to the chart's appVersion. */}}
{{- define "baton.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* baton.runImage: the worker image of mode run (default: the baton image). */}}
{{- define "baton.runImage" -}}
{{- if .Values.run.image.repository }}
{{- printf "%s:%s" .Values.run.image.repository (required "run.image.tag is required with run.image.repository" .Values.run.image.tag) }}
{{- else }}
{{- include "baton.image" . }}
{{- end }}
{{- end }}

{{/* baton.electionArgs: the flags both forms share (store from the environment, see baton.env). */}}
{{- define "baton.electionArgs" -}}
- --lock
- {{ include "baton.lock" . | quote }}
- --lease-duration
- {{ .Values.leaseDuration | quote }}
- --renew-deadline
- {{ .Values.renewDeadline | quote }}
- --retry-period
- {{ .Values.retryPeriod | quote }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* baton.env: BATON_IDENTITY (the Pod's name: what kubectl shows as the Lease's holder) and BATON_STORE. */}}
{{- define "baton.env" -}}
- name: BATON_IDENTITY
  valueFrom:
    fieldRef: { fieldPath: metadata.name }
{{- if .Values.storeFromSecret.name }}
- name: BATON_STORE
  valueFrom:
    secretKeyRef:
      name: {{ .Values.storeFromSecret.name | quote }}
      key: {{ .Values.storeFromSecret.key | quote }}
{{- else }}
- name: BATON_STORE
  value: {{ .Values.store | quote }}
{{- end }}
{{- with .Values.env }}
{{ toYaml . }}
{{- end }}
{{- end }}
