"""The local platform, the layer above every domain: the embedded stack (``stack``), the
service supervisor, ``ragline up``/``down``/``services``/``token``/``stack``, and the
private throw-away platform of an evaluation run. It drives the domains by calling their
functions directly (docs/architecture.md); nothing below it imports it.
"""
