"""The one place that touches detect-secrets' private line scanner.

``detect_secrets.core.scan._process_line_based_plugins`` is the file-scan code path
(quoted high-entropy strings, keyword assignments, vendor token formats, its false
positive filters) run over lines we hand it, in memory. The public ``scan_line`` is the
ad-hoc mode that flags ordinary words, so it is not used. If a detect-secrets upgrade
moves the helper, only this module changes.

detect-secrets reports ``(line, value)``; some plugins report only a capture group (the
GitHub plugin reports ``ghp``), so the caller widens each located value to the whole
token around it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["DISABLED_PLUGINS", "configure", "scan_lines", "slug"]

# public IPs are PII-policy territory (IP_ADDRESS), not secrets
DISABLED_PLUGINS = frozenset({"IPPublicDetector"})

_TYPE_NAMES = {
    "AWS Access Key": "aws_access_key",
    "Base64 High Entropy String": "high_entropy_string",
    "Hex High Entropy String": "high_entropy_string",
    "Basic Auth Credentials": "connection_password",
    "Secret Keyword": "password",
    "JSON Web Token": "jwt",
    "Private Key": "private_key",
    "Slack Token": "slack_token",
    "Stripe Access Key": "stripe_key",
    "GitHub Token": "github_token",
    "GitLab Token": "gitlab_token",
    "Azure Storage Account access key": "azure_storage_key",
}
_configured = False


def slug(type_name: str) -> str:
    """detect-secrets' display type -> our snake_case secret type."""
    known = _TYPE_NAMES.get(type_name)
    if known:
        return known
    return re.sub(r"[^a-z0-9]+", "_", type_name.lower()).strip("_") or "secret"


def configure() -> None:
    """Enable every plugin except ``DISABLED_PLUGINS`` with the default filters; once per process.

    Also silences detect-secrets' own logger: its skip messages are written to stderr and
    are not something our logs should carry.
    """
    global _configured
    if _configured:
        return
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import cache_bust, configure_settings_from_baseline

    plugin_types: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = [cls.__name__ for cls in plugin_types if cls.__name__ not in DISABLED_PLUGINS]
    cache_bust()
    configure_settings_from_baseline({"plugins_used": [{"name": n} for n in names]})
    for name in ("detect-secrets", "detect_secrets"):
        lg = logging.getLogger(name)
        lg.setLevel(logging.CRITICAL)
        lg.propagate = False
    _configured = True


def scan_lines(lines: Sequence[str]) -> Iterator[tuple[int, str, str]]:
    """``(line index, secret type slug, reported value)`` for each hit in ``lines``.

    The value never leaves the scanning package: callers use it only to find the span.
    """
    from detect_secrets.core.scan import _process_line_based_plugins

    configure()
    numbered = list(enumerate(lines, 1))
    hits: Iterator[Any] = _process_line_based_plugins(lines=numbered, filename="document.txt")
    for secret in hits:
        value = secret.secret_value
        if not value:
            continue
        yield secret.line_number - 1, slug(str(secret.type)), str(value)
