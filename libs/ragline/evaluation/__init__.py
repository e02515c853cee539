"""Evaluation: datasets (BEIR, the golden set), IR metrics, ingest through the real
pipeline, queries over HTTP against the real query service, reports and the CI gate.

Modules import one way: ``datasets`` <- ``golden``; ``metrics`` <- ``summary`` <-
``report`` <- ``gate`` / ``plot``; ``client``, ``ingest`` and ``runner`` talk to the
running platform; ``evaluate`` runs one evaluation, ``platform`` starts a private one;
``cli`` wires ``ragline eval``. Nothing here is imported by a service.
"""
