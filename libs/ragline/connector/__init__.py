"""The connector domain: intake of source changes, fetching, the filesystem and webhook
sources, and the resync path that rebuilds the event stream from a source and Postgres.
"""
