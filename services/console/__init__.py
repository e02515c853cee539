"""The operator console (``ragline console``)."""
