"""The operator console's logic: who may use it, CSRF, its audit trail and the data
behind each page. The FastAPI wiring is ``services/console``; every page calls the same
functions a script would (``ragline.ops``, ``ragline.store.spaces``, ``runtime.lag``)."""
