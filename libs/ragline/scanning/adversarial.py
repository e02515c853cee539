"""Pathological inputs for the scanner: one class per pattern family, any size.

Each input is built to make one detector do the most work per character: keyword
prefixes repeated so every position could start a match, runs a repeat could cover
from many starts, a header whose terminator never comes, thousands of distinct
secrets (propagation), invisible characters between every letter (normalization),
digit runs (phone windows). ``bench/scan_adversarial.py`` prints the throughput of each
beside the throughput on ordinary prose, and ``tests/unit/scanning/test_linear_time.py``
scans each at a size where a quadratic pattern would not finish. Secret-looking values
here are generated, never real.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

__all__ = ["ADVERSARIAL", "adversarial_inputs"]


def _repeat(unit: str) -> Callable[[int, random.Random], str]:
    return lambda n, _rng: (unit * (n // len(unit) + 1))[:n]


def _distinct_keys(n: int, rng: random.Random) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        key = "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))
        out.append(f"key {key} and again {key}.")
        size += len(out[-1]) + 1
    return "\n".join(out)[:n]


def _b64_blob(n: int, rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits + "+/", k=n))


def _long_token(n: int, _rng: random.Random) -> str:
    return "A" * (n - 3) + "==="


ADVERSARIAL: dict[str, Callable[[int, random.Random], str]] = {
    "keyword_then_dash_run": lambda n, _r: "token\n" + ("a-" * n)[: n - 6],  # issue 13
    "prefix_chain_password": _repeat("a_"),
    "password_assign_repeat": _repeat("password="),
    "db_pass_near_miss_repeat": _repeat("db_pass: "),
    "prose_password_lazy": _repeat("the password for pw is "),
    "api_key_assign_repeat": _repeat("api_key: token="),
    "name_value_pairs": _repeat('name: "api_token", '),
    "url_query_tokens": _repeat("?token="),
    "url_many_params": _repeat("&a=b"),
    "userinfo_no_at": _repeat("a://b:"),
    "jdbc_repeat": _repeat("jdbc:a:"),
    "jdbc_oracle_repeat": _repeat("jdbc:oracle:thin:"),
    "private_key_begin_no_end": _repeat("-----BEGIN RSA PRIVATE KEY-----\n"),
    "private_key_header_run": lambda n, _r: "-----BEGIN " + ("A " * n)[: n - 11],
    "bearer_repeat": _repeat("Authorization: Bearer "),
    "jwt_prefix_run": lambda n, _r: "eyJ" + "a" * (n - 3),
    "slack_prefix_repeat": _repeat("xoxb-"),
    "llm_prefix_repeat": _repeat("sk-"),
    "gitlab_prefix_repeat": _repeat("glpat-"),
    "pypi_prefix_repeat": _repeat("pypi-AgE"),
    "github_prefix_repeat": _repeat("ghp_"),
    "sendgrid_prefix_repeat": _repeat("SG."),
    "sas_sig_repeat": _repeat("?sig="),
    "azure_key_repeat": _repeat("AccountKey="),
    "single_huge_token": _long_token,
    "base64_blob": _b64_blob,
    "distinct_secrets_propagation": _distinct_keys,
    "zero_width_between_letters": _repeat("a\u200b"),
    "fullwidth_text": _repeat("Ａｂｃ１ "),
    "email_like_repeat": _repeat("a.b@c."),
    "at_signs": _repeat("a@"),
    "digit_runs_phone": _repeat("1 2-3 "),
    "card_like_groups": _repeat("4111 1111 "),
    "long_line_no_spaces": _repeat("x"),
}


def adversarial_inputs(size: int, *, seed: int = 13) -> dict[str, str]:
    """Every class at ``size`` characters."""
    rng = random.Random(seed)
    return {name: make(size, rng) for name, make in ADVERSARIAL.items()}
