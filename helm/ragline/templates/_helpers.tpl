{{/* Names, labels, the image, and the environment every ragline pod shares. */}}

{{- define "ragline.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ragline.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Kubernetes names cannot hold "_": cache_invalidator -> cache-invalidator */}}
{{- define "ragline.component" -}}
{{- . | replace "_" "-" -}}
{{- end -}}

{{/* "<fullname>-<component>" for a service name given as .name */}}
{{- define "ragline.serviceFullname" -}}
{{- printf "%s-%s" (include "ragline.fullname" .root) (include "ragline.component" .name) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ragline.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ragline.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ include "ragline.component" .name }}
{{- end -}}

{{- define "ragline.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "ragline.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ include "ragline.component" .name }}
app.kubernetes.io/part-of: ragline
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "ragline.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "ragline.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ragline.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount of the pre-install/pre-upgrade hook Jobs: a hook itself (they run
     before the release's own one exists); with serviceAccount.create=false, the named
     one (the hooks then use it like every pod) */}}
{{- define "ragline.hookServiceAccountName" -}}
{{- printf "%s-hooks" (include "ragline.serviceAccountName" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The topics each consumer reads (libs/ragline/runtime/topology.py; a unit test
     keeps them equal). Its consumer group is "<kafka.topicPrefix>ragline-<service>", its
     topics "<kafka.topicPrefix><topic>". */}}
{{- define "ragline.consumes" -}}
connector: [source.changes]
parser: [doc.fetched]
scanner: [doc.parsed]
chunker: [doc.scanned]
enricher: [doc.chunked]
embedder: [doc.enriched]
indexer: [doc.embedded, doc.control, doc.quarantined]
cache_invalidator: [doc.indexed]
{{- end -}}

{{- define "ragline.isConsumer" -}}
{{- if hasKey (fromYaml (include "ragline.consumes" .root)) .name -}}true{{- end -}}
{{- end -}}

{{/* HTTP port of a service that serves one (query: API + /healthz /readyz /metrics;
     connector: the webhook) */}}
{{- define "ragline.httpPort" -}}
{{- if eq .name "query" -}}8080{{- else if eq .name "connector" -}}8081{{- end -}}
{{- end -}}

{{/* ----------------------------------------------------------------- credentials */}}
{{- define "ragline.credentialsSecret" -}}
{{- printf "%s-credentials" (include "ragline.fullname" .) -}}
{{- end -}}

{{/* the migrate hook's copy of the two DSNs (evaluation installs only, secret.yaml) */}}
{{- define "ragline.hookCredentialsSecret" -}}
{{- printf "%s-credentials-hook" (include "ragline.fullname" .) -}}
{{- end -}}

{{- define "ragline.secretRef" -}}
{{- /* .existing: existingSecret name or ""; .key; .optional; .root */ -}}
valueFrom:
  secretKeyRef:
    name: {{ default (include "ragline.credentialsSecret" .root) .existing }}
    key: {{ .key }}
    {{- if .optional }}
    optional: true
    {{- end }}
{{- end -}}

{{- define "ragline.env.pgAdmin" -}}
- name: RAGLINE_PG_DSN
  {{- include "ragline.secretRef" (dict "root" . "existing" .Values.postgres.existingSecret "key" .Values.postgres.dsnKey) | nindent 2 }}
{{- end -}}

{{- define "ragline.env.pgQuery" -}}
- name: RAGLINE_PG_QUERY_DSN
  {{- include "ragline.secretRef" (dict "root" . "existing" .Values.postgres.existingSecret "key" .Values.postgres.queryDsnKey) | nindent 2 }}
{{- end -}}

{{- define "ragline.env.opensearch" -}}
{{- $os := .Values.opensearch -}}
{{- if $os.existingSecret }}
- name: RAGLINE_OPENSEARCH_USER
  {{- include "ragline.secretRef" (dict "root" . "existing" $os.existingSecret "key" $os.usernameKey "optional" true) | nindent 2 }}
- name: RAGLINE_OPENSEARCH_PASSWORD
  {{- include "ragline.secretRef" (dict "root" . "existing" $os.existingSecret "key" $os.passwordKey "optional" true) | nindent 2 }}
{{- else if $os.username }}
- name: RAGLINE_OPENSEARCH_USER
  {{- include "ragline.secretRef" (dict "root" . "existing" "" "key" "opensearch-username") | nindent 2 }}
- name: RAGLINE_OPENSEARCH_PASSWORD
  {{- include "ragline.secretRef" (dict "root" . "existing" "" "key" "opensearch-password") | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "ragline.env.jwt" -}}
{{- $a := .Values.auth -}}
{{- if $a.existingSecret }}
- name: RAGLINE_QUERY_JWT_SECRET
  {{- include "ragline.secretRef" (dict "root" . "existing" $a.existingSecret "key" $a.jwtSecretKey "optional" true) | nindent 2 }}
- name: RAGLINE_QUERY_JWT_PUBLIC_KEY
  {{- include "ragline.secretRef" (dict "root" . "existing" $a.existingSecret "key" $a.jwtPublicKeyKey "optional" true) | nindent 2 }}
{{- else }}
{{- if $a.jwtSecret }}
- name: RAGLINE_QUERY_JWT_SECRET
  {{- include "ragline.secretRef" (dict "root" . "existing" "" "key" "jwt-secret") | nindent 2 }}
{{- end }}
{{- if $a.jwtPublicKey }}
- name: RAGLINE_QUERY_JWT_PUBLIC_KEY
  {{- include "ragline.secretRef" (dict "root" . "existing" "" "key" "jwt-public-key") | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "ragline.env.webhook" -}}
{{- $w := .Values.connector.webhook -}}
{{- if $w.existingSecret }}
- name: RAGLINE_CONNECTOR_WEBHOOK_SECRET
  {{- include "ragline.secretRef" (dict "root" . "existing" $w.existingSecret "key" $w.secretKey "optional" true) | nindent 2 }}
{{- if $w.credentialsKey }}
- name: RAGLINE_CONNECTOR_WEBHOOK_CREDENTIALS
  {{- include "ragline.secretRef" (dict "root" . "existing" $w.existingSecret "key" $w.credentialsKey) | nindent 2 }}
{{- end }}
{{- else if $w.secret }}
- name: RAGLINE_CONNECTOR_WEBHOOK_SECRET
  {{- include "ragline.secretRef" (dict "root" . "existing" "" "key" "webhook-secret") | nindent 2 }}
{{- end }}
{{- end -}}

{{/* the query service's own read-only OpenSearch credential, when configured */}}
{{- define "ragline.env.opensearchQuery" -}}
{{- $q := .Values.opensearch.query -}}
{{- if $q.existingSecret }}
- name: RAGLINE_QUERY_OPENSEARCH_USER
  {{- include "ragline.secretRef" (dict "root" . "existing" $q.existingSecret "key" $q.usernameKey) | nindent 2 }}
- name: RAGLINE_QUERY_OPENSEARCH_PASSWORD
  {{- include "ragline.secretRef" (dict "root" . "existing" $q.existingSecret "key" $q.passwordKey) | nindent 2 }}
{{- end }}
{{- end -}}

{{/* the HMAC key of the audit log's query hash (required: the pod does not start without) */}}
{{- define "ragline.env.audit" -}}
{{- $au := .Values.audit }}
- name: RAGLINE_QUERY_AUDIT_HASH_KEY
  {{- include "ragline.secretRef" (dict "root" . "existing" $au.existingSecret "key" (ternary $au.hashKeyKey "audit-hash-key" (ne $au.existingSecret ""))) | nindent 2 }}
{{- end -}}

{{/* RS256 in use: a JWKS URL, an inline public key, or algorithm RS256 */}}
{{- define "ragline.auth.rs256" -}}
{{- $a := .Values.auth -}}
{{- if or $a.jwksUrl $a.jwtPublicKey (eq $a.algorithm "RS256") -}}true{{- end -}}
{{- end -}}

{{/* ----------------------------------------------------------------- kafka security */}}
{{/* Workloads that talk to Kafka: every consumer (each also publishes), the topics Job
     and the gc CronJob (it reads the dead-letter topics). The query service and the
     migrate Job never do, so they get no Kafka credential. Args: root, name. */}}
{{- define "ragline.talksToKafka" -}}
{{- if or (include "ragline.isConsumer" .) (has .name (list "topics" "gc")) (hasPrefix "watch-" .name) (hasPrefix "sync-" .name) -}}true{{- end -}}
{{- end -}}

{{- define "ragline.kafka.sasl" -}}
{{- if hasPrefix "SASL_" .Values.kafka.security.protocol -}}true{{- end -}}
{{- end -}}

{{- define "ragline.kafka.tls" -}}
{{- if hasSuffix "SSL" .Values.kafka.security.protocol -}}true{{- end -}}
{{- end -}}

{{/* Name of the Secret whose CA bundle is mounted, or "" (no TLS, or the system trust
     store) */}}
{{- define "ragline.kafka.caSecret" -}}
{{- if include "ragline.kafka.tls" . -}}{{ .Values.kafka.security.tls.existingSecret }}{{- end -}}
{{- end -}}

{{- define "ragline.kafka.caDir" -}}/etc/ragline/kafka-tls{{- end -}}

{{/* Name of the Secret whose client certificate and key are mounted (mutual TLS), or ""
     (no client certificate; never the CA's Secret by default) */}}
{{- define "ragline.kafka.clientSecret" -}}
{{- if include "ragline.kafka.tls" . -}}{{ .Values.kafka.security.tls.clientSecret }}{{- end -}}
{{- end -}}

{{- define "ragline.kafka.clientDir" -}}/etc/ragline/kafka-client-tls{{- end -}}

{{/* RAGLINE_KAFKA_* transport variables (config/connections.py, runtime/kafka_security.py);
     nothing at all with PLAINTEXT, the runtime's default */}}
{{- define "ragline.env.kafka" -}}
{{- $s := .Values.kafka.security -}}
{{- if ne $s.protocol "PLAINTEXT" }}
- name: RAGLINE_KAFKA_SECURITY_PROTOCOL
  value: {{ $s.protocol | quote }}
{{- if include "ragline.kafka.sasl" . }}
- name: RAGLINE_KAFKA_SASL_MECHANISM
  value: {{ $s.sasl.mechanism | quote }}
- name: RAGLINE_KAFKA_SASL_USERNAME
  {{- include "ragline.secretRef" (dict "root" . "existing" $s.sasl.existingSecret "key" $s.sasl.usernameKey) | nindent 2 }}
- name: RAGLINE_KAFKA_SASL_PASSWORD
  {{- include "ragline.secretRef" (dict "root" . "existing" $s.sasl.existingSecret "key" $s.sasl.passwordKey) | nindent 2 }}
{{- end }}
{{- if include "ragline.kafka.caSecret" . }}
- name: RAGLINE_KAFKA_SSL_CAFILE
  value: {{ printf "%s/ca.crt" (include "ragline.kafka.caDir" .) | quote }}
{{- end }}
{{- with include "ragline.kafka.clientSecret" . }}
- name: RAGLINE_KAFKA_SSL_CERTFILE
  value: {{ printf "%s/client.crt" (include "ragline.kafka.clientDir" $) | quote }}
- name: RAGLINE_KAFKA_SSL_KEYFILE
  value: {{ printf "%s/client.key" (include "ragline.kafka.clientDir" $) | quote }}
{{- if $s.tls.keyPasswordKey }}
- name: RAGLINE_KAFKA_SSL_KEY_PASSWORD
  {{- include "ragline.secretRef" (dict "root" $ "existing" . "key" $s.tls.keyPasswordKey) | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* KEDA's names for the SASL mechanisms (kafka scaler `sasl` parameter) */}}
{{- define "ragline.kafka.kedaSasl" -}}
{{- get (dict "PLAIN" "plaintext" "SCRAM-SHA-256" "scram_sha256" "SCRAM-SHA-512" "scram_sha512") .Values.kafka.security.sasl.mechanism -}}
{{- end -}}

{{/* The TriggerAuthentication the ScaledObjects reference: rendered when there is a
     credential, a CA or a client certificate to hand to KEDA */}}
{{- define "ragline.kafka.kedaAuthName" -}}
{{- if or (include "ragline.kafka.sasl" .) (include "ragline.kafka.caSecret" .) (include "ragline.kafka.clientSecret" .) -}}
{{- printf "%s-kafka" (include "ragline.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Secret variables of one service: least privilege (the query service never gets the
     admin DSN; only the connector gets the webhook secret). */}}
{{- define "ragline.secretEnv" -}}
{{- $root := .root -}}
{{- if eq .name "query" }}
{{- include "ragline.env.pgQuery" $root }}
{{- include "ragline.env.jwt" $root }}
{{- include "ragline.env.audit" $root }}
{{- include "ragline.env.opensearchQuery" $root }}
{{- else if eq .name "migrate" }}
{{- $p := $root.Values.postgres }}
{{- $sec := default (include "ragline.hookCredentialsSecret" $root) $p.existingSecret }}
- name: RAGLINE_PG_DSN
  {{- include "ragline.secretRef" (dict "root" $root "existing" $sec "key" $p.dsnKey) | nindent 2 }}
- name: RAGLINE_PG_QUERY_DSN
  {{- include "ragline.secretRef" (dict "root" $root "existing" $sec "key" $p.queryDsnKey) | nindent 2 }}
{{- else if eq .name "topics" }}
{{- else }}
{{- include "ragline.env.pgAdmin" $root }}
{{- if eq .name "connector" }}
{{- include "ragline.env.webhook" $root }}
{{- end }}
{{- end }}
{{- if has .name (list "query" "indexer") }}
{{- include "ragline.env.opensearch" $root }}
{{- end }}
{{- if include "ragline.talksToKafka" . }}
{{- include "ragline.env.kafka" $root }}
{{- end }}
{{- end -}}

{{/* ----------------------------------------------------------------- validation */}}
{{- define "ragline.validate" -}}
{{- $parts := int .Values.kafka.partitions -}}
{{- range $name, $svc := .Values.services -}}
{{- if and $svc.enabled (include "ragline.isConsumer" (dict "root" $ "name" $name)) -}}
{{- if gt (int $svc.replicas) $parts -}}
{{- fail (printf "services.%s.replicas (%d) exceeds kafka.partitions (%d): extra consumers of a group would sit idle" $name (int $svc.replicas) $parts) -}}
{{- end -}}
{{- if and $svc.keda $svc.keda.enabled (gt (int $svc.keda.maxReplicas) $parts) -}}
{{- fail (printf "services.%s.keda.maxReplicas (%d) exceeds kafka.partitions (%d)" $name (int $svc.keda.maxReplicas) $parts) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.postgres.existingSecret) (not .Values.postgres.dsn) -}}
{{- fail "postgres: set existingSecret (recommended) or dsn + queryDsn" -}}
{{- end -}}
{{- if and (not .Values.postgres.existingSecret) (not .Values.postgres.queryDsn) -}}
{{- fail "postgres.queryDsn is required with an inline dsn: the query service connects as the RLS-bound role" -}}
{{- end -}}
{{- $ks := .Values.kafka.security -}}
{{- if and (include "ragline.kafka.sasl" .) (not $ks.sasl.existingSecret) -}}
{{- fail (printf "kafka.security.sasl.existingSecret is required with protocol %s: the SASL username and password only come from a Secret" $ks.protocol) -}}
{{- end -}}
{{- if and $ks.tls.existingSecret (not (include "ragline.kafka.tls" .)) -}}
{{- fail (printf "kafka.security.tls.existingSecret is set but protocol %s does not use TLS (SSL or SASL_SSL)" $ks.protocol) -}}
{{- end -}}
{{- if and $ks.tls.clientSecret (not (include "ragline.kafka.tls" .)) -}}
{{- fail (printf "kafka.security.tls.clientSecret (mutual TLS) is set but protocol %s does not use TLS (SSL or SASL_SSL)" $ks.protocol) -}}
{{- end -}}
{{- if and $ks.tls.keyPasswordKey (not $ks.tls.clientSecret) -}}
{{- fail "kafka.security.tls.keyPasswordKey is set without kafka.security.tls.clientSecret: the key password is read from the client certificate's Secret" -}}
{{- end -}}
{{- $a := .Values.auth -}}
{{- if and .Values.services.query.enabled (not (or $a.existingSecret $a.jwtSecret $a.jwtPublicKey $a.jwksUrl)) -}}
{{- fail "auth: the query service needs a JWT key: existingSecret, jwtSecret, jwtPublicKey or jwksUrl" -}}
{{- end -}}
{{- if and .Values.services.query.enabled (include "ragline.auth.rs256" .) (not (and $a.issuer $a.audience)) (not $a.insecureAllowAnyIssuerAndAudience) -}}
{{- fail "auth: RS256/JWKS needs auth.issuer and auth.audience (else tokens the identity provider minted for any other application are accepted); auth.insecureAllowAnyIssuerAndAudience=true overrides this, never in production" -}}
{{- end -}}
{{- $au := .Values.audit -}}
{{- if and .Values.services.query.enabled (not $au.existingSecret) (not $au.hashKey) -}}
{{- fail "audit: set existingSecret (a Secret with the audit log's HMAC key) or hashKey (evaluation only)" -}}
{{- end -}}
{{- end -}}

{{/* Non-secret settings of every pod (the ConfigMap; hook Jobs inline the same map
     because they run before the release's ConfigMap exists). */}}
{{- define "ragline.configData" -}}
{{- $v := .Values -}}
{{- $data := dict
  "RAGLINE_KAFKA_BOOTSTRAP" $v.kafka.bootstrap
  "RAGLINE_KAFKA_PARTITIONS" (toString $v.kafka.partitions)
  "RAGLINE_KAFKA_MAX_MESSAGE_BYTES" (toString $v.kafka.maxMessageBytes)
  "RAGLINE_KAFKA_TOPIC_PREFIX" $v.kafka.topicPrefix
  "RAGLINE_KAFKA_COMPRESSION" $v.kafka.compression
  "RAGLINE_TOPICS_RAW_RETENTION_HOURS" (toString $v.kafka.topics.rawRetentionHours)
  "RAGLINE_TOPICS_RETENTION_HOURS" (toString $v.kafka.topics.retentionHours)
  "RAGLINE_TOPICS_DLQ_RETENTION_HOURS" (toString $v.kafka.topics.dlqRetentionHours)
  "RAGLINE_TOPICS_COMPRESSION" $v.kafka.topics.compression
  "RAGLINE_RETENTION_KAFKA_RETENTION_DAYS" (toString (divf (max $v.kafka.topics.rawRetentionHours $v.kafka.topics.retentionHours) 24))
  "RAGLINE_RETENTION_DLQ_RETENTION_DAYS" (toString (divf $v.kafka.topics.dlqRetentionHours 24))
  "RAGLINE_OPENSEARCH_URL" $v.opensearch.url
  "RAGLINE_OPENSEARCH_INDEX_PREFIX" $v.opensearch.indexPrefix
  "RAGLINE_METRICS_HOST" "0.0.0.0"
  "RAGLINE_METRICS_PORT" (toString $v.metrics.port)
  "RAGLINE_HTTP_HOST" "0.0.0.0"
  "RAGLINE_STATE_DIR" "/tmp/ragline"
  "HF_HUB_OFFLINE" "1"
  "TRANSFORMERS_OFFLINE" "1"
-}}
{{- if $v.tracing.enabled }}
{{- $_ := set $data "RAGLINE_TRACING_ENABLED" "true" }}
{{- $_ := set $data "RAGLINE_TRACING_SAMPLE_RATIO" (toString $v.tracing.sampleRatio) }}
{{- with $v.tracing.otlpEndpoint }}{{ $_ := set $data "RAGLINE_TRACING_OTLP_ENDPOINT" . }}{{ end }}
{{- end -}}
{{- with $v.kafka.replicationFactor }}{{ $_ := set $data "RAGLINE_OPS_TOPIC_REPLICATION_FACTOR" (toString .) }}{{ end -}}
{{- with $v.kafka.topics.minInsyncReplicas }}{{ $_ := set $data "RAGLINE_TOPICS_MIN_INSYNC_REPLICAS" (toString .) }}{{ end -}}
{{- with $v.auth.jwksUrl }}{{ $_ := set $data "RAGLINE_QUERY_JWT_JWKS_URL" . }}{{ end -}}
{{- with $v.auth.issuer }}{{ $_ := set $data "RAGLINE_QUERY_JWT_ISSUER" . }}{{ end -}}
{{- with $v.auth.audience }}{{ $_ := set $data "RAGLINE_QUERY_JWT_AUDIENCE" . }}{{ end -}}
{{- if $v.auth.insecureAllowAnyIssuerAndAudience }}{{ $_ := set $data "RAGLINE_QUERY_JWT_INSECURE_ALLOW_ANY_ISSUER_AND_AUDIENCE" "true" }}{{ end -}}
{{- $_ := set $data "RAGLINE_QUERY_AUDIT_STORE_QUERY" $v.audit.storeQuery -}}
{{- $_ := set $data "RAGLINE_QUERY_MAX_BODY_BYTES" (toString $v.queryApi.maxBodyBytes) -}}
{{- $_ := set $data "RAGLINE_QUERY_MAX_HEADER_BYTES" (toString $v.queryApi.maxHeaderBytes) -}}
{{- $_ := set $data "RAGLINE_QUERY_MAX_TOP_K" (toString $v.queryApi.maxTopK) -}}
{{- $_ := set $data "RAGLINE_QUERY_MAX_QUERIES" (toString $v.queryApi.maxQueries) -}}
{{- $_ := set $data "RAGLINE_CONNECTOR_WEBHOOK_REPLAY_WINDOW_S" (toString $v.connector.webhook.replayWindowSeconds) -}}
{{- $_ := set $data "RAGLINE_CONNECTOR_WEBHOOK_LEGACY_SIGNATURE" (toString $v.connector.webhook.legacySignature) -}}
{{- with $v.models.embedderPath }}
{{- $_ := set $data "RAGLINE_EMBEDDER_MODEL" . }}
{{- $_ := set $data "RAGLINE_QUERY_EMBEDDING_MODEL_PATH" . }}
{{- end -}}
{{- with $v.models.embedderName }}{{ $_ := set $data "RAGLINE_EMBEDDER_MODEL_NAME" . }}{{ end -}}
{{- with $v.models.tokenizerPath }}{{ $_ := set $data "RAGLINE_CHUNKER_TOKENIZER_PATH" . }}{{ end -}}
{{- with $v.models.rerankPath }}{{ $_ := set $data "RAGLINE_QUERY_RERANK_MODEL_PATH" . }}{{ end -}}
{{- range $k, $val := $v.env }}{{ $_ := set $data $k (toString $val) }}{{ end -}}
{{- range $k := keys $data | sortAlpha }}
{{ $k }}: {{ get $data $k | quote }}
{{- end }}
{{- end -}}
