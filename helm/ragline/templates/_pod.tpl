{{/* The pod spec of a ragline service or job: one image, non-root, read-only root
     filesystem, ConfigMap + least-privilege secret env. Args: root, name, svc, command,
     resources, probes (a long-running service), hook (a pre-install/upgrade Job).
     Extension points (podDefaults.* then services.<name>.*, concatenated): extraEnv,
     extraEnvFrom, extraVolumes, extraVolumeMounts, initContainers, sidecars. */}}
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
{{- /* hook Jobs run before the release's ServiceAccount exists: they get their own,
  itself a hook (serviceaccount.yaml), never the namespace's "default" one */}}
serviceAccountName: {{ ternary (include "ragline.hookServiceAccountName" $root) (include "ragline.serviceAccountName" $root) (and (not (not .hook)) $root.Values.serviceAccount.create) }}
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
{{- $spread := default $d.topologySpreadConstraints $svc.topologySpreadConstraints }}
{{- if and (not $spread) (eq .name "query") .probes }}
{{- /* the API's replicas on different nodes and zones unless told otherwise: one node
  or zone going away must not take every query pod with it (ScheduleAnyway: a
  single-node cluster still schedules them) */}}
{{- $sel := fromYaml (include "ragline.selectorLabels" .) }}
{{- $spread = list (dict "maxSkew" 1 "topologyKey" "kubernetes.io/hostname" "whenUnsatisfiable" "ScheduleAnyway" "labelSelector" (dict "matchLabels" $sel)) (dict "maxSkew" 1 "topologyKey" "topology.kubernetes.io/zone" "whenUnsatisfiable" "ScheduleAnyway" "labelSelector" (dict "matchLabels" $sel)) }}
{{- end }}
{{- with $spread }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $init := concat ($d.initContainers | default list) ($svc.initContainers | default list) }}
{{- with $init }}
initContainers:
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
    {{- $envFrom := concat ($d.extraEnvFrom | default list) ($svc.extraEnvFrom | default list) }}
    {{- if or (not .hook) $envFrom }}
    envFrom:
      {{- if not .hook }}
      - configMapRef:
          name: {{ include "ragline.fullname" $root }}
      {{- end }}
      {{- with $envFrom }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
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
      {{- with concat ($d.extraEnv | default list) ($svc.extraEnv | default list) }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- if .probes }}
    ports:
      {{- if $httpPort }}
      - name: http
        containerPort: {{ $httpPort }}
        protocol: TCP
      {{- end }}
      {{- /* every service, the query one included, serves /metrics on its own port:
        the NetworkPolicy opens it to the scrapers without opening the API */}}
      - name: metrics
        containerPort: {{ $root.Values.metrics.port }}
        protocol: TCP
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
    lifecycle:
      # keep serving while the endpoints controller and the ingress take the pod out of
      # rotation; uvicorn then drains in-flight requests on SIGTERM
      preStop:
        exec:
          command: ["python", "-c", "import time; time.sleep({{ $svc.preStopSleepSeconds | default 10 }})"]
    {{- else }}
    {{- /* a consumer's probes are answered from its event loop's progress
      (runtime/health.py): /metrics is served by a thread that stays up when the loop
      is blocked or a handler hangs */}}
    startupProbe:
      httpGet: {path: /healthz, port: metrics}
      periodSeconds: 5
      failureThreshold: 60
    livenessProbe:
      httpGet: {path: /healthz, port: metrics}
      periodSeconds: 20
      timeoutSeconds: 5
      failureThreshold: 3
    readinessProbe:
      httpGet: {path: /readyz, port: metrics}
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
      {{- with concat ($d.extraVolumeMounts | default list) ($svc.extraVolumeMounts | default list) }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
  {{- with concat ($d.sidecars | default list) ($svc.sidecars | default list) }}
  {{- toYaml . | nindent 2 }}
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
  {{- with concat ($d.extraVolumes | default list) ($svc.extraVolumes | default list) }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}
