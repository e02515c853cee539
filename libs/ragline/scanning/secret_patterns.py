"""ragline's own secret patterns: what detect-secrets lacks or reports without a span.

detect-secrets finds lines; redaction needs exact spans, and several formats matter here
that it does not know (whole private-key blocks, connection strings of every scheme,
JDBC passwords, Azure SAS signatures, GCP keys, modern token prefixes, bare high-entropy
tokens). Each pattern names the group that holds the secret, so a connection string
keeps its host and only loses the password.

A pattern runs only when one of its ``triggers`` (lowercase substrings) occurs in the
text: one lowercase copy of the text and a few substring checks decide which regexes
run at all, which keeps ordinary prose cheap.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "PATTERNS",
    "SecretPattern",
    "column_secret_type",
    "find_pattern_secrets",
    "looks_like_placeholder",
]

_PLACEHOLDER_WORDS = frozenset(
    {
        "password", "passwd", "pass", "pwd", "secret", "token", "changeme", "example",
        "redacted", "xxxxxx", "dummy", "sample", "placeholder", "none", "null", "true",
        "false", "undefined", "required", "optional", "string", "your_password",
        "yourpassword", "mypassword", "your_token", "your_api_key", "api_key", "apikey",
    }
)  # fmt: skip
_REFERENCE = re.compile(
    r"""^(?:[$%@{<\[(*]|.*[()\[\]{}<>]|.*\benv\b|os\.|process\.|getenv|settings\.|config\.|self\.)"""
)
_WORDISH = re.compile(r"^[a-z]+(?:[_-][a-z]+)*$")
_ATTR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def shannon_entropy(s: str) -> float:
    n = len(s)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def looks_like_placeholder(value: str) -> bool:
    """True for example values and references that are not secrets themselves."""
    v = value.strip("\"'`")
    low = v.lower()
    if len(v) < 6 or low in _PLACEHOLDER_WORDS or low.startswith("[redacted"):
        return True
    if len(set(low)) <= 2:  # ******, xxxxxx, 000000
        return True
    if _REFERENCE.match(v) or _ATTR.match(v):
        return True
    # a plain lowercase word (``password: required``); real passphrases this simple are
    # rare enough, and keyword hits of detect-secrets still cover quoted ones
    return bool(_WORDISH.match(v) and len(v) < 16)


def _assignment_ok(value: str) -> bool:
    return not looks_like_placeholder(value)


def _high_entropy_ok(value: str) -> bool:
    v = value.rstrip("=")
    if not (any(c.isupper() for c in v) and any(c.islower() for c in v)):
        return False
    if sum(c.isdigit() for c in v) < 2:
        return False
    if "/" in v and any(seg.isalpha() and seg.islower() for seg in v.split("/") if seg):
        return False  # a path, not a key
    return shannon_entropy(v) >= 4.2


@dataclass(frozen=True, kw_only=True, slots=True)
class SecretPattern:
    type: str
    regex: re.Pattern[str]
    triggers: tuple[str, ...] = ()  # lowercase substrings; empty = always run
    group: str | int = "secret"
    validate: Callable[[str], bool] | None = None


def _p(
    type_: str,
    pattern: str,
    *triggers: str,
    flags: int = 0,
    group: str | int = "secret",
    validate: Callable[[str], bool] | None = None,
) -> SecretPattern:
    return SecretPattern(
        type=type_,
        regex=re.compile(pattern, flags),
        triggers=triggers,
        group=group,
        validate=validate,
    )


_I = re.IGNORECASE
_KEY = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
_B64TOK = r"[A-Za-z0-9+/=_-]"

PATTERNS: tuple[SecretPattern, ...] = (
    # a whole private-key block, also inside JSON (escaped \n) such as a GCP service account
    _p("private_key", rf"-----BEGIN {_KEY}-----[\s\S]{{0,20000}}?-----END {_KEY}-----",
       "private key", group=0),
    # a truncated block: BEGIN line plus the base64/header lines that follow it
    _p("private_key",
       rf"-----BEGIN {_KEY}-----(?:(?:\\n|\s)+(?:[A-Za-z0-9+/=]{{8,}}|[A-Za-z-]+: [^\n\\]*))*",
       "private key", group=0),
    _p("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", "eyj", group=0),
    _p("connection_password",
       r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@\"']{0,256}:(?P<secret>[^\s@/\"']{1,256})@",
       "://", flags=_I, validate=_assignment_ok),
    _p("connection_password",
       r"\bjdbc:[a-z0-9]+:[^\s\"']*?[;?&](?:password|pwd)=(?P<secret>[^;&\s\"']+)",
       "jdbc:", flags=_I, validate=_assignment_ok),
    _p("connection_password", r"\bjdbc:oracle:[a-z]+:[^/\s@\"']+/(?P<secret>[^@\s\"']+)@",
       "jdbc:", flags=_I, validate=_assignment_ok),
    _p("azure_sas_signature", r"[?&;]sig=(?P<secret>[A-Za-z0-9%+/=]{16,})", "sig="),
    _p("azure_storage_key", r"\b(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/=]{20,})",
       "accountkey", "sharedaccesskey", flags=_I),
    _p("azure_sas_signature", r"\bSharedAccessSignature=(?P<secret>[^;\s\"']{16,})",
       "sharedaccesssignature", flags=_I),
    _p("url_token",
       r"[?&](?:password|passwd|pwd|token|access_token|refresh_token|api_key|apikey|"
       r"client_secret|secret|x-amz-signature|x-amz-security-token)=(?P<secret>[^&\s\"'#]{6,})",
       "=", flags=_I, validate=_assignment_ok),
    _p("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b",
       group=0),
    _p("aws_secret_key",
       r"(?:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)[\"']?\s*[:=]\s*"
       r"[\"']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", "secret", flags=_I),
    _p("aws_session_token",
       r"aws_?session_?token[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{100,})",
       "session", flags=_I),
    _p("gcp_private_key_id", r"\"private_key_id\"\s*:\s*\"(?P<secret>[a-f0-9]{40})\"",
       "private_key_id"),
    _p("gcp_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b", "aiza", group=0),
    _p("google_oauth_token", r"\bya29\.[0-9A-Za-z_-]{20,}", "ya29.", group=0),
    _p("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", "xox", group=0),
    _p("slack_webhook", r"hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9/]{20,})",
       "hooks.slack.com"),
    _p("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b", "_live_", "_test_", group=0),
    _p("stripe_key", r"\bwhsec_[A-Za-z0-9]{24,}", "whsec_", group=0),
    _p("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b", "gh", group=0),
    _p("github_token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", "github_pat_", group=0),
    _p("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20,}", "glpat-", group=0),
    _p("llm_api_key", r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}", "sk-", group=0),
    _p("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", "npm_", group=0),
    _p("pypi_token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}", "pypi-", group=0),
    _p("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", "sg.", group=0),
    _p("twilio_key", r"\bSK[0-9a-fA-F]{32}\b", "sk", group=0),
    _p("vault_token", r"\bhv[sb]\.[A-Za-z0-9_-]{24,}", "hvs.", "hvb.", group=0),
    _p("bearer_token",
       r"\b(?:authorization\s*[:=]\s*[\"']?(?:bearer|basic|token|bot)|bearer)\s+"
       rf"(?P<secret>{_B64TOK}{{16,}})", "bearer", "authorization", flags=_I,
       validate=_assignment_ok),
    _p("password",
       r"(?<![A-Za-z0-9])(?:[a-z0-9]+[_.-])*(?:password|passwd|passphrase|pwd)[\"']?\s*"
       r"(?::=|=>|[:=])\s*[\"'`]?(?P<secret>[^\s\"'`,;]{6,})",
       "pass", "pwd", flags=_I, validate=_assignment_ok),
    _p("password",
       r"\b(?:password|passwd|passphrase)\s+(?:is|was|of)\s*:?\s+[\"'`]?(?P<secret>[^\s\"'`]{6,})",
       "pass", flags=_I, validate=_assignment_ok),
    _p("api_key",
       r"(?<![A-Za-z0-9])(?:[a-z0-9]+[_.-])*(?:api[_.-]?key|apikey|access[_.-]?key|"
       r"secret[_.-]?key|client[_.-]?secret|secret|access[_.-]?token|auth[_.-]?token|token|"
       r"credentials?)[\"']?\s*(?::=|=>|[:=])\s*[\"'`]?(?P<secret>[^\s\"'`,;]{8,})",
       "key", "secret", "token", "credential", flags=_I, validate=_assignment_ok),
    _p("high_entropy_token",
       r"(?<![A-Za-z0-9+/_=-])(?P<secret>[A-Za-z0-9+/_-]{32,}={0,2})(?![A-Za-z0-9+/_=-])",
       validate=_high_entropy_ok),
)  # fmt: skip


def find_pattern_secrets(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, type)`` of every pattern secret in ``text`` (overlaps allowed)."""
    low = text.lower()
    for pat in PATTERNS:
        if pat.triggers and not any(t in low for t in pat.triggers):
            continue
        for m in pat.regex.finditer(text):
            start, end = m.span(pat.group)
            if end <= start:
                continue
            if pat.validate is not None and not pat.validate(text[start:end]):
                continue
            yield start, end, pat.type


_SECRET_COLUMN = re.compile(
    r"^\s*(?:[\w .-]*[ _.-])?(password|passwd|passphrase|pwd|secret|api[ _-]?key|apikey|"
    r"access[ _-]?key|secret[ _-]?key|token|credentials?|private[ _-]?key)\s*$",
    re.IGNORECASE,
)


def column_secret_type(header: str, cell: str) -> str | None:
    """A table cell under a ``password``/``token``/``api key`` column is a secret by position
    (``| service | password |`` puts key and value on different lines, out of reach of
    every line-based pattern). Returns its type, or ``None``."""
    m = _SECRET_COLUMN.match(header)
    if m is None or looks_like_placeholder(cell.strip()):
        return None
    word = m.group(1).lower()
    return "password" if word.startswith("pass") or word == "pwd" else "api_key"
