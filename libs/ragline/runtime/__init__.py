"""Shared machinery of every service: settings, broker wiring, metrics, logging, DLQ."""
