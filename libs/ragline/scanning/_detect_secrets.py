"""The one place that touches detect-secrets' private line scanner.

``detect_secrets.core.scan._process_line_based_plugins`` is the file-scan code path
(quoted high-entropy strings, keyword assignments, vendor token formats, its false
positive filters) run over lines we hand it, in memory. The public ``scan_line`` is the
ad-hoc mode that flags ordinary words, so it is not used. If a detect-secrets upgrade
moves the helper, only this module changes.

detect-secrets reports ``(line, value)``; some plugins report only a capture group (the
GitHub plugin reports ``ghp``), so the caller widens each located value to the whole
token around it.

Fast path (the same findings, measured ~6x cheaper on prose): detect-secrets runs its
line filters (``is_indirect_reference`` is a backtracking regex per line) and calls every
plugin through its dependency injection for every line, yet on prose almost no line
holds anything any plugin matches. Filters only ever remove a plugin's hits, and a
plugin's ``analyze_line`` reports a subset of what its ``analyze_string`` yields on the
same (right-stripped) line, so a line on which no plugin's ``analyze_string`` yields
anything cannot produce a finding. ``scan_lines`` therefore asks each plugin's
``analyze_string`` first (``_line_probe``) and hands only the windows around such
candidate lines to detect-secrets' own line scanner, each candidate with the same
``CONTEXT_LINES`` of context on each side that the whole-text call gives it (its
allowlist filter reads the previous line). A plugin whose ``analyze_line`` is not one
whose subset rule is known here makes every line a candidate (the full path).
``scan_lines(..., fast=False)`` is the full path, kept for the differential test.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = [
    "CONTEXT_LINES",
    "DISABLED_PLUGINS",
    "candidate_windows",
    "configure",
    "scan_lines",
    "slug",
]

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


# detect-secrets' ``get_code_snippet`` default: the lines around a line its filters see
CONTEXT_LINES = 5
_FILENAME = "document.txt"
_Probe = Callable[[str], bool]
_probes: tuple[tuple[Any, ...], list[_Probe]] = ((), [])


def _probe(plugin: Any) -> _Probe:
    """``line -> could plugin.analyze_line report anything on it`` (never a false "no")."""
    from detect_secrets.plugins.base import BasePlugin
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
    from detect_secrets.plugins.keyword import (
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        REGEX_BY_FILETYPE,
        KeywordDetector,
    )
    from detect_secrets.util.filetype import determine_file_type

    line_fn = type(plugin).analyze_line
    analyze = plugin.analyze_string
    if line_fn in (BasePlugin.analyze_line, HighEntropyStringsPlugin.analyze_line):
        # one PotentialSecret per value analyze_string yields (the entropy plugins then
        # drop low-entropy ones; no eager search in the line scan)
        return lambda line: next(iter(analyze(line)), None) is not None
    if line_fn is KeywordDetector.analyze_line:  # analyze_string with its file type's regexes
        groups = REGEX_BY_FILETYPE.get(
            determine_file_type(_FILENAME), QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
        )
        keyword = _keyword_gate(groups)

        def keyword_probe(line: str) -> bool:
            # its regexes backtrack over the whole line (~0.4 ms on a 700-character
            # line); each needs one of the deny-listed words, which a plain search finds
            if keyword is not None and not keyword.search(line):
                return False
            return next(iter(analyze(line, groups)), None) is not None

        return keyword_probe
    return lambda line: True  # unknown: every line is a candidate (the full path)


def _keyword_gate(groups: dict[re.Pattern[str], int]) -> re.Pattern[str] | None:
    """A search for the keyword plugin's deny-listed words, if every one of its regexes
    needs one (the words' group, mandatory, case-insensitive at most), else ``None``."""
    from detect_secrets.plugins import keyword as kw

    words = kw.DENYLIST_REGEX.removesuffix(kw.AFFIX_REGEX)  # "(api_?key|...|secret)"
    if not all(words in r.pattern and not r.flags & re.VERBOSE for r in groups):
        return None
    return re.compile(words, re.IGNORECASE)


def _line_probe() -> _Probe:
    """``line -> False only if no enabled plugin can report anything on it``, for the
    plugins enabled now (rebuilt if detect-secrets' settings change: a stale probe could
    miss a plugin)."""
    global _probes
    from detect_secrets.settings import get_plugins

    configure()
    plugins = tuple(get_plugins())
    if plugins != _probes[0]:
        _probes = (plugins, [_probe(p) for p in plugins])
    probes = _probes[1]

    def may_hit(line: str) -> bool:
        stripped = line.rstrip()  # what the line scanner hands the plugins
        return any(probe(stripped) for probe in probes)

    return may_hit


def candidate_windows(lines: Sequence[str]) -> list[tuple[int, int]]:
    """Merged ``[first, end)`` line ranges: every candidate line (``_line_probe``) with
    ``CONTEXT_LINES`` on each side, so each candidate keeps its whole context."""
    windows: list[tuple[int, int]] = []
    may_hit = _line_probe()
    for i, line in enumerate(lines):
        if not may_hit(line):
            continue
        lo, hi = max(0, i - CONTEXT_LINES), min(len(lines), i + CONTEXT_LINES + 1)
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], hi)
        else:
            windows.append((lo, hi))
    return windows


def scan_lines(lines: Sequence[str], *, fast: bool = True) -> Iterator[tuple[int, str, str]]:
    """``(line index, secret type slug, reported value)`` for each hit in ``lines``.

    The value never leaves the scanning package: callers use it only to find the span.
    ``fast=False``: detect-secrets over every line (the reference for the fast path).
    """
    from detect_secrets.core.scan import _process_line_based_plugins

    configure()
    windows = candidate_windows(lines) if fast else [(0, len(lines))]
    for first, end in windows:
        numbered = list(enumerate(lines[first:end], 1))
        hits: Iterator[Any] = _process_line_based_plugins(lines=numbered, filename=_FILENAME)
        for secret in hits:
            value = secret.secret_value
            if not value:
                continue
            yield first + secret.line_number - 1, slug(str(secret.type)), str(value)
