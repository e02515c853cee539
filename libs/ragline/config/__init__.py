"""Settings, the bottom layer: pydantic-settings classes read from ``RAGLINE_*``
variables. Imports nothing of ragline's, so every layer above may depend on it.

A process reads its environment once, where it starts (a service's ``build()``, a CLI
command's top), and passes the values down; library code never constructs settings.
"""

from ragline.config.connections import Settings
from ragline.config.models import EmbeddingModelSettings, TokenizerSettings
from ragline.config.tracing import TracingSettings

__all__ = [
    "EmbeddingModelSettings",
    "Settings",
    "TokenizerSettings",
    "TracingSettings",
]
