{{- define "topospread.labels" -}}
app.kubernetes.io/name: topospread
app.kubernetes.io/component: admission-webhook
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: topospread-{{ .Chart.Version }}
{{- end }}

{{- define "topospread.selectorLabels" -}}
app.kubernetes.io/name: topospread
{{- end }}

{{- define "topospread.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        {{- range .Values.webhook.excludedNamespaces }}
        - {{ . }}
        {{- end }}
        - {{ .Release.Namespace }}
{{- end }}

{{- define "topospread.clientConfig" -}}
{{- if not .Values.certManager.enabled }}
caBundle: {{ required "set tls.caCert (the CA's PEM, e.g. --set-file tls.caCert=certs/ca.crt) or certManager.enabled=true" .Values.tls.caCert | b64enc }}
{{- end }}
{{- end }}

{{- define "topospread.auditLabels" -}}
app.kubernetes.io/name: topospread-audit
app.kubernetes.io/component: audit
app.kubernetes.io/part-of: topospread
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: topospread-{{ .Chart.Version }}
{{- end }}
