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

import base64
import binascii
import bisect
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "PATTERNS",
    "ScanDeadline",
    "SecretPattern",
    "check_deadline",
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
# a reference to a secret, not a secret: ``${X}``, ``<token>``, ``getenv(...)``, ``os.x``
_REFERENCE = re.compile(
    r"""^(?:[$%@{<\[(*]|[A-Za-z_][\w.]{0,80}[(\[]|os\.|process\.|getenv|settings\.|config\.|self\.)"""
)
_ENV_WORD = re.compile(r"\benv\b")
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
    if _REFERENCE.match(v) or _ATTR.match(v) or _ENV_WORD.search(v):
        return True
    if v[-1:] in "}>" and any(c in v for c in "{<"):
        return True  # a template: ``{{ .Values.token }}``, ``<%= token %>``
    # a plain lowercase word (``password: required``); real passphrases this simple are
    # rare enough, and keyword hits of detect-secrets still cover quoted ones
    return bool(_WORDISH.match(v) and len(v) < 16)


def _assignment_ok(value: str) -> bool:
    return not looks_like_placeholder(value)


_SENTENCE_END = ".,;:!?)"


def _prose_ok(value: str) -> bool:
    """A password named in prose (``the password is X``): the placeholder check ignores a
    sentence's closing punctuation, and a plain word is never the password."""
    v = value.rstrip(_SENTENCE_END)
    return not looks_like_placeholder(v) and not v.isalpha()


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
    trim: bool = False  # drop trailing closers the value does not open (``)`` ``>`` ``]``)
    key_check: bool = False  # the ``key`` group must name a credential (query strings)


def _p(
    type_: str,
    pattern: str,
    *triggers: str,
    flags: int = 0,
    group: str | int = "secret",
    validate: Callable[[str], bool] | None = None,
    trim: bool = False,
    key_check: bool = False,
) -> SecretPattern:
    return SecretPattern(
        type=type_,
        regex=re.compile(pattern, flags),
        triggers=triggers,
        group=group,
        validate=validate,
        trim=trim,
        key_check=key_check,
    )


_I = re.IGNORECASE
_KEY = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
_B64TOK = r"[A-Za-z0-9+/=_-]"
_PW_WORD = r"(?:password|passwd|passphrase|passcode|pwd|pass|pw)"
_VALUE = r"[^\s\"'`,;]"  # an unquoted assignment value (closers are trimmed afterwards)
_ASSIGN = r"[\"']?\s{0,32}(?::=|=>|[:=])\s{0,32}[\"'`]?"
_SECRETISH = (
    r"(?:token|api[_.-]?key|apikey|secret|passw(?:or)?d|passphrase|credentials?|"
    r"private[_.-]?key|access[_.-]?key|signing[_.-]?key)"
)

# Every regex below runs in time linear in the text: no repeat contains another unbounded
# repeat (``tests/unit/scanning/test_linear_patterns.py`` checks the parsed patterns), a
# repeat whose class can contain the pattern's own start is bounded, and the one
# multi-kilobyte construct (a private-key block) is found by ``_private_keys`` instead.
PATTERNS: tuple[SecretPattern, ...] = (
    _p("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", "eyj", group=0),
    # basic-auth userinfo in any URL: ``scheme://user:pw@host``
    _p("connection_password",
       r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@\"'<>()\[\]]{0,256}:(?P<secret>[^\s@/\"'<>]{1,256})@",
       "://", flags=_I, validate=_assignment_ok, trim=True),
    _p("connection_password",
       r"\bjdbc:[a-z0-9]{1,20}:[^\s\"']{0,512}?[;?&](?:password|pwd)=(?P<secret>[^;&\s\"']{1,256})",
       "jdbc:", flags=_I, validate=_assignment_ok, trim=True),
    _p("connection_password",
       r"\bjdbc:oracle:[a-z]{1,10}:[^/\s@\"']{1,256}/(?P<secret>[^@\s\"']{1,256})@",
       "jdbc:", flags=_I, validate=_assignment_ok),
    _p("azure_sas_signature", r"[?&;]sig=(?P<secret>[A-Za-z0-9%+/=]{16,})", "sig="),
    _p("azure_storage_key", r"\b(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/=]{20,})",
       "accountkey", "sharedaccesskey", flags=_I),
    _p("azure_sas_signature", r"\bSharedAccessSignature=(?P<secret>[^;\s\"']{16,1024})",
       "sharedaccesssignature", flags=_I),
    # query-string credentials in any URL format (markdown link, autolink, href, literal):
    # the value stops at ``& # < >`` and quotes; an unbalanced ``)`` or ``]`` is trimmed
    _p("url_token",
       r"[?&;#](?P<key>[A-Za-z0-9_.\-\[\]]{1,40})=(?P<secret>[^&\s\"'#<>`]{6,1024})",
       "=", validate=_assignment_ok, trim=True, key_check=True),
    _p("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b",
       group=0),
    _p("aws_secret_key",
       r"(?:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)[\"']?\s{0,32}[:=]"
       r"\s{0,32}[\"']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", "secret", flags=_I),
    _p("aws_session_token",
       r"aws_?session_?token[\"']?\s{0,32}[:=]\s{0,32}[\"']?(?P<secret>[A-Za-z0-9/+=]{100,4096})",
       "session", flags=_I),
    _p("gcp_private_key_id", r"\"private_key_id\"\s{0,8}:\s{0,8}\"(?P<secret>[a-f0-9]{40})\"",
       "private_key_id"),
    _p("gcp_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b", "aiza", group=0),
    _p("google_oauth_token", r"\bya29\.[0-9A-Za-z_-]{20,1024}", "ya29.", group=0),
    _p("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,256}", "xox", group=0),
    _p("slack_webhook", r"hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9/]{20,256})",
       "hooks.slack.com"),
    _p("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,256}", "_live_", "_test_",
       group=0),
    _p("stripe_key", r"\bwhsec_[A-Za-z0-9]{24,256}", "whsec_", group=0),
    _p("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b", "gh", group=0),
    _p("github_token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", "github_pat_", group=0),
    _p("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20,256}", "glpat-", group=0),
    _p("llm_api_key", r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,256}", "sk-", group=0),
    _p("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", "npm_", group=0),
    _p("pypi_token", r"\bpypi-AgE[A-Za-z0-9_-]{50,1024}", "pypi-", group=0),
    _p("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{16,256}\.[A-Za-z0-9_-]{16,256}", "sg.", group=0),
    _p("twilio_key", r"\bSK[0-9a-fA-F]{32}\b", "sk", group=0),
    _p("vault_token", r"\bhv[sb]\.[A-Za-z0-9_-]{24,512}", "hvs.", "hvb.", group=0),
    _p("bearer_token",
       r"\b(?:authorization\s{0,8}[:=]\s{0,8}[\"']?(?:bearer|basic|token|bot)|bearer)\s{1,8}"
       rf"(?P<secret>{_B64TOK}{{16,4096}})", "bearer", "authorization", flags=_I,
       validate=_assignment_ok),
    # ``db_password = ...``, ``DB_PASS: ...``, ``pw=...``, ``password_prod => ...``
    _p("password",
       rf"(?<![A-Za-z0-9]){_PW_WORD}(?![A-Za-z])(?:[_.-][A-Za-z0-9]{{1,16}}){{0,2}}{_ASSIGN}"
       rf"(?P<secret>{_VALUE}{{6,512}})",
       "pass", "pwd", "pw", flags=_I, validate=_assignment_ok, trim=True),
    # prose: ``the password is X``, ``password for the admin account: X``
    _p("password",
       rf"(?<![A-Za-z0-9]){_PW_WORD}(?![A-Za-z])[^.\n]{{0,40}}?\b(?:is|was|to|of|are)\s{{0,4}}:?"
       r"\s{1,8}[\"'`]?(?P<secret>[^\s\"'`]{6,256})",
       "pass", "pwd", "pw", flags=_I, validate=_prose_ok, trim=True),
    _p("api_key",
       r"(?<![A-Za-z0-9])(?:api[_.-]?key|apikey|access[_.-]?key|secret[_.-]?key|client[_.-]?secret|"
       r"secret|access[_.-]?token|auth[_.-]?token|token|credentials?|auth[_.-]?key|"
       r"session[_.-]?(?:key|token|secret)|signing[_.-]?key|encryption[_.-]?key)"
       rf"{_ASSIGN}(?P<secret>{_VALUE}{{8,512}})",
       "key", "secret", "token", "credential", flags=_I, validate=_assignment_ok, trim=True),
    # a name/value pair: ``<meta name="api-key" content="...">``, a Kubernetes env entry
    # ``- name: DB_PASSWORD`` / ``value: ...``, ``{"key": "token", "value": "..."}``
    _p("api_key",
       r"\b(?:name|id|key|property)[\"']?\s{0,4}[:=]\s{0,4}[\"']?[A-Za-z0-9_.:-]{0,40}"
       rf"{_SECRETISH}[A-Za-z0-9_.:-]{{0,40}}[\"']?[\s,]{{1,40}}[\"']?(?:content|value)[\"']?"
       r"\s{0,4}[:=]\s{0,4}[\"']?(?P<secret>[^\s\"'<>]{6,512})",
       "value", "content", flags=_I, validate=_assignment_ok, trim=True),
    _p("high_entropy_token",
       r"(?<![A-Za-z0-9+/_=-])(?P<secret>[A-Za-z0-9+/_-]{32,}={0,2})(?![A-Za-z0-9+/_=-])",
       validate=_high_entropy_ok),
)  # fmt: skip

_BEGIN = re.compile(rf"-----BEGIN {_KEY}-----")
_END = re.compile(rf"-----END {_KEY}-----")
_KEY_LINE = re.compile(r"(?:\\n|\s){1,8}(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]{1,40}: [^\n\\]{0,256})")
_MAX_KEY_BLOCK = 20_000


def _private_keys(text: str) -> Iterator[tuple[int, int]]:
    """Whole ``BEGIN ... END`` blocks (also JSON-escaped, as in a GCP service account) and
    truncated ones (the BEGIN line plus the base64/header lines after it). Every END is
    found once and each BEGIN looks up the next one, so many BEGINs without an END cost
    one pass, not one 20 KB search each."""
    ends = [(m.start(), m.end()) for m in _END.finditer(text)]
    starts = [s for s, _ in ends]
    covered = 0
    for m in _BEGIN.finditer(text):
        if m.start() < covered:
            continue
        i = bisect.bisect_left(starts, m.end())
        if i < len(ends) and ends[i][0] - m.end() <= _MAX_KEY_BLOCK:
            covered = ends[i][1]
        else:
            covered = m.end()
            while (line := _KEY_LINE.match(text, covered)) is not None:
                covered = line.end()
        yield m.start(), covered


_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
_PRINTABLE = frozenset(range(32, 127)) | {9, 10, 13}
# bytes.translate deletes these: what remains is the printable bytes (counted in C; a
# generator over every decoded byte was most of this pattern's cost on prose)
_NON_PRINTABLE = bytes(b for b in range(256) if b not in _PRINTABLE)


def printable_count(data: bytes) -> int:
    """How many bytes of ``data`` are in ``_PRINTABLE``."""
    return len(data.translate(None, _NON_PRINTABLE))


def _decoded(run: str) -> str | None:
    """``run`` base64-decoded (standard or URL-safe) when that gives printable ASCII."""
    raw = run.rstrip("=")
    if len(raw) % 4 == 1:
        return None
    padded = raw + "=" * (-len(raw) % 4)
    try:
        if "-" in raw or "_" in raw:
            data = base64.urlsafe_b64decode(padded)
        else:
            data = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(data) < 12 or printable_count(data) < 0.95 * len(data):
        return None
    return data.decode("ascii", "replace")


def _base64_wrapped(text: str, deadline: float | None) -> Iterator[tuple[int, int, str]]:
    """A base64 run whose decoded text holds a secret (``echo QUtJQV...= | base64 -d``,
    a Kubernetes ``data:`` value, a basic-auth blob) is redacted whole."""
    for m in _B64_RUN.finditer(text):
        plain = _decoded(m.group(0))
        if plain is None:
            continue
        for _s, _e, type_ in _find(plain, deadline, nested=True):
            yield m.start(), m.end(), f"base64_{type_}"
            break


def _trimmed(value: str) -> str:
    """``value`` without trailing closers it does not open: the ``)`` of a markdown link,
    the ``>`` of an autolink or a tag, the ``]`` of a wiki link."""
    while (
        value
        and value[-1] in _CLOSERS
        and value.count(value[-1]) > value.count(_CLOSERS[value[-1]])
    ):
        value = value[:-1]
    return value


_CLOSERS = {")": "(", ">": "<", "]": "[", "}": "{"}
_URL_SECRET_KEY = re.compile(
    r"token|secret|passw|pwd|^pass$|^pw$|api[_.-]?key|^key$|[_.-]key$|signature|^sig$|^auth|"
    r"credential|session|^code$",
    re.IGNORECASE,
)


class ScanDeadline(Exception):
    """The per-document scan deadline passed (checked between patterns and windows)."""


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise ScanDeadline


def _find(text: str, deadline: float | None, *, nested: bool) -> Iterator[tuple[int, int, str]]:
    low = text.lower()
    for s, e in _private_keys(text):
        yield s, e, "private_key"
    for pat in PATTERNS:
        if nested and pat.type == "high_entropy_token":
            continue
        if pat.triggers and not any(t in low for t in pat.triggers):
            continue
        check_deadline(deadline)
        for m in pat.regex.finditer(text):
            start, end = m.span(pat.group)
            if pat.trim:
                end = start + len(_trimmed(text[start:end]))
            if end <= start:
                continue
            if pat.key_check and not _URL_SECRET_KEY.search(m.group("key")):
                continue
            if pat.validate is not None and not pat.validate(text[start:end]):
                continue
            yield start, end, pat.type
    if not nested:
        check_deadline(deadline)
        yield from _base64_wrapped(text, deadline)


def find_pattern_secrets(
    text: str, *, deadline: float | None = None
) -> Iterator[tuple[int, int, str]]:
    """``(start, end, type)`` of every pattern secret in ``text`` (overlaps allowed).

    ``deadline`` (``time.monotonic()``): raises ``ScanDeadline`` once it has passed."""
    yield from _find(text, deadline, nested=False)


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
