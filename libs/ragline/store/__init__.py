"""Postgres schema and access: versioned migrations (``migrate``), the RLS-bound query
role (``query_role``), pools and repositories. Nothing here connects at import time.
"""
