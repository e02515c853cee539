{{/* The pod spec of a ragline service or job: one image, non-root, read-only root
     filesystem, ConfigMap + least-privilege secret env. Args: root, name, svc, command. */}}
{{- define "ragline.podSpec" -}}
{{- $root := .root -}}
{{- $d := $root.Values.podDefaults -}}
{{- $svc := .svc | default dict -}}
{{- $kafkaCa := "" -}}
{{- $kafkaClient := "" -}}
{{- if include "ragline.talksToKafka" . }}
{{- $kafkaCa = include "ragline.kafka.caSecret" $root }}
{{- $kafkaClient = include "ragline.kafka.clientSecret" $root }}
{{- end -}}
{{- if not (and .hook $root.Values.serviceAccount.create) }}
{{- /* hook Jobs run before the release's ServiceAccount exists: they use the
  namespace's default one, with no token mounted either way */}}
serviceAccountName: {{ include "ragline.serviceAccountName" $root }}
{{- end }}
automountServiceAccountToken: {{ $root.Values.serviceAccount.automountServiceAccountToken }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $d.podSecurityContext | nindent 2 }}
{{- with (default $d.priorityClassName $svc.priorityClassName) }}
priorityClassName: {{ . }}
{{- end }}
{{- with (default $d.nodeSelector $svc.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $d.tolerations $svc.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $d.affinity $svc.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $d.topologySpreadConstraints $svc.topologySpreadConstraints) }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: {{ include "ragline.component" .name }}
    image: {{ include "ragline.image" $root }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args:
      {{- toYaml .command | nindent 6 }}
    securityContext:
      {{- toYaml $d.securityContext | nindent 6 }}
    {{- if not .hook }}
    envFrom:
      - configMapRef:
          name: {{ include "ragline.fullname" $root }}
    {{- end }}
    env:
      {{- if .hook }}
      {{- range $k, $v := fromYaml (include "ragline.configData" $root) }}
      - name: {{ $k }}
        value: {{ $v | toString | quote }}
      {{- end }}
      {{- end }}
      {{- $httpPort := include "ragline.httpPort" . }}
      {{- if $httpPort }}
      - name: RAGLINE_HTTP_PORT
        value: {{ $httpPort | quote }}
      {{- end }}
      {{- if and (eq .name "connector") (not $root.Values.connector.webhook.enabled) }}
      - name: RAGLINE_CONNECTOR_WEBHOOK_ENABLED
        value: "false"
      {{- end }}
      {{- include "ragline.secretEnv" (dict "root" $root "name" .name) | nindent 6 }}
      {{- range $k, $v := $svc.env }}
      - name: {{ $k }}
        value: {{ $v | toString | quote }}
      {{- end }}
    {{- if .probes }}
    ports:
      {{- if $httpPort }}
      - name: http
        containerPort: {{ $httpPort }}
        protocol: TCP
      {{- end }}
      {{- if ne .name "query" }}
      - name: metrics
        containerPort: {{ $root.Values.metrics.port }}
        protocol: TCP
      {{- end }}
    {{- if eq .name "query" }}
    startupProbe:
      httpGet: {path: /healthz, port: http}
      periodSeconds: 5
      failureThreshold: 60  # loads the query embedding model first
    livenessProbe:
      httpGet: {path: /healthz, port: http}
      periodSeconds: 15
      timeoutSeconds: 5
      failureThreshold: 3
    readinessProbe:
      httpGet: {path: /readyz, port: http}  # 503 while Postgres is unreachable
      periodSeconds: 10
      timeoutSeconds: 6
      failureThreshold: 3
    {{- else }}
    startupProbe:
      httpGet: {path: /metrics, port: metrics}
      periodSeconds: 5
      failureThreshold: 60
    livenessProbe:
      httpGet: {path: /metrics, port: metrics}
      periodSeconds: 20
      timeoutSeconds: 5
      failureThreshold: 3
    readinessProbe:
      httpGet: {path: /metrics, port: metrics}
      periodSeconds: 10
      timeoutSeconds: 5
      failureThreshold: 3
    {{- end }}
    {{- end }}
    resources:
      {{- toYaml .resources | nindent 6 }}
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      - name: cache
        mountPath: /cache
      {{- if $root.Values.models.volume }}
      - name: models
        mountPath: /models
        readOnly: true
      {{- end }}
      {{- if $kafkaCa }}
      - name: kafka-tls
        mountPath: {{ include "ragline.kafka.caDir" $root }}
        readOnly: true
      {{- end }}
      {{- if $kafkaClient }}
      - name: kafka-client-tls
        mountPath: {{ include "ragline.kafka.clientDir" $root }}
        readOnly: true
      {{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ $d.tmpSizeLimit }}
  - name: cache
    emptyDir:
      sizeLimit: {{ $d.cacheSizeLimit }}
  {{- with $root.Values.models.volume }}
  - name: models
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if $kafkaCa }}
  - name: kafka-tls
    secret:
      secretName: {{ $kafkaCa }}
      items:  # only the CA: never the SASL password, even if it shares the Secret
        - key: {{ $root.Values.kafka.security.tls.caKey }}
          path: ca.crt
      defaultMode: 0444
  {{- end }}
  {{- if $kafkaClient }}
  {{- $tls := $root.Values.kafka.security.tls }}
  - name: kafka-client-tls
    secret:
      secretName: {{ $kafkaClient }}
      items:  # only the certificate and the key: never the key password or anything else
        - key: {{ $tls.certKey }}
          path: client.crt
        - key: {{ $tls.keyKey }}
          path: client.key
          {{- if $d.podSecurityContext.fsGroup }}
          mode: 0440  # owner root, group fsGroup: readable by the pod's user only
          {{- end }}
      defaultMode: 0444
  {{- end }}
{{- end -}}
