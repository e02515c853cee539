"""Operator tooling: dead-letter queues (``ragline dlq``), topic creation against an
external Kafka (``ragline topics``) and the container health probe."""
