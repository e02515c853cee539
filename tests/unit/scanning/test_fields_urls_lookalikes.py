"""Defects 2-5 of issue 13: every field that reaches an index, identities that block,
URLs in every format, near-miss keys, zero-width and look-alike splits, known gaps."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ragline.events import Block, BlockKind, DocumentMeta
from ragline.scanning.layout import Layout
from ragline.scanning.scanner import ScanBlocked, Scanner
from ragline.scanning.secret_patterns import find_pattern_secrets
from ragline.scanning.secrets import SecretDetector

from .helpers import make_event

AWS = "AKIAPTGZ4JFEBZ9SDO78"


def _with_meta(**meta: object) -> object:
    ev = make_event(["Plain text."], doc_id="wiki:doc-1")
    return ev.model_copy(update={"meta": ev.meta.model_copy(update=meta)})


async def test_turn_timestamp_version_mime_and_block_language_are_redacted(
    make_scanner: Callable[..., Scanner],
) -> None:
    turn = Block(kind=BlockKind.TURN, text="hello", speaker="ann", timestamp=f"t {AWS}")
    code = Block(kind=BlockKind.CODE, text="x = 1", language=f"py {AWS}")
    ev = make_event([turn, code])
    ev = ev.model_copy(
        update={
            "meta": ev.meta.model_copy(
                update={"version": f"v1 {AWS}", "mime_type": f"text/x; k={AWS}"}
            )
        }
    )
    out = await make_scanner().scan(ev)
    dumped = out.model_dump_json()
    assert AWS not in dumped
    assert out.meta.version == "v1 [REDACTED:aws_access_key]"
    assert out.document.blocks[0].timestamp == "t [REDACTED:aws_access_key]"
    assert out.findings.counts["secret:aws_access_key"] == 4


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("uri", f"https://git.acme.io/{AWS}/readme.md"),
        ("uri", "https://deploy:c6NqfaDRtOP5DJ@git.acme.io/r.md"),
        ("supersedes", (f"wiki:{AWS}",)),
        ("acl_groups", (f"g-{AWS}",)),
    ],
)
async def test_a_secret_in_an_identity_blocks_with_a_reason(
    make_scanner: Callable[..., Scanner], field: str, value: object
) -> None:
    ev = _with_meta(**{field: value})
    with pytest.raises(ScanBlocked) as info:
        await make_scanner().scan(ev)  # type: ignore[arg-type]
    assert info.value.reason_code == "secret_in_identity"
    assert AWS not in info.value.reason and "c6Nq" not in info.value.reason
    assert AWS not in info.value.meta.model_dump_json()
    assert "c6NqfaDRtOP5DJ" not in info.value.meta.model_dump_json()


async def test_secret_in_document_id_and_metadata_key_block(
    make_scanner: Callable[..., Scanner],
) -> None:
    with pytest.raises(ScanBlocked, match="document_id"):
        await make_scanner().scan(make_event(["text"], doc_id=f"fs:notes/{AWS}.md"))
    with pytest.raises(ScanBlocked, match="metadata_key"):
        await make_scanner().scan(make_event(["text"], metadata={AWS: "x"}))


async def test_pii_in_identities_is_not_a_block(make_scanner: Callable[..., Scanner]) -> None:
    ev = _with_meta(acl_groups=("alice@example.com",), uri="https://h/u/bob@example.com/doc")
    out = await make_scanner().scan(ev)  # type: ignore[arg-type]
    assert out.meta.acl_groups == ("alice@example.com",)
    assert out.meta.uri == "https://h/u/[REDACTED:EMAIL_ADDRESS]/doc"


URL_CASES = [
    ("[docs](https://x.io/api?token=Zq8Rt2Lm5Wn7Kp3)", "Zq8Rt2Lm5Wn7Kp3"),
    ("<https://x.io/cb?access_token=Jk4Rt7Yp2Wq9Zx5Cv8>", "Jk4Rt7Yp2Wq9Zx5Cv8"),
    ("![img](https://cdn.x.io/a.png?sig=Yq2Wv8Ln4Kx7Rt3Zs9Pm)", "Yq2Wv8Ln4Kx7Rt3Zs9Pm"),
    ('<a href="https://x.io/?api_key=Lk2Jd9Qw8Rt5Zx1Cv7Bn">x</a>', "Lk2Jd9Qw8Rt5Zx1Cv7Bn"),
    ('<img src="https://x.io/p.png?X-Amz-Signature=9a8b7c6d5e4f3a2b1c0d">', "9a8b7c6d5e4f3a2b1c0d"),
    ("<!-- password: Hq7vR2kP9zXy -->", "Hq7vR2kP9zXy"),
    ("<!--token=Mn3Bv6Cx9Zl2Kj5H-->", "Mn3Bv6Cx9Zl2Kj5H"),
    ('fetch("https://api.x.io/v1?session=Pz4Xc8Vb2Nm6Qa1S")', "Pz4Xc8Vb2Nm6Qa1S"),
    ("const url = 'https://deploy:Tr0ub4dor3x@git.acme.io/repo.git';", "Tr0ub4dor3x"),
    ("[clone](https://bot:Gh7Yt5Rd3Ew1@git.acme.io/r.git)", "Gh7Yt5Rd3Ew1"),
    ("[wiki](https://w.io/p?client_secret=Cs5Df8Gh2Jk4Lm7N)", "Cs5Df8Gh2Jk4Lm7N"),
    ('<meta name="api-key" content="Vb8Nm3Qw1Er5Ty7U">', "Vb8Nm3Qw1Er5Ty7U"),
    ("env:\n  - name: DB_PASSWORD\n    value: Hx5Gt7Jk2Lp9", "Hx5Gt7Jk2Lp9"),
    ("db_pass = Pq9Lm2Xz7Wv4", "Pq9Lm2Xz7Wv4"),
    ("DB_PASS: Pq9Lm2Xz7Wv5", "Pq9Lm2Xz7Wv5"),
    ("redis_pw=Pq9Lm2Xz7Wv6", "Pq9Lm2Xz7Wv6"),
]


@pytest.mark.parametrize(("text", "value"), URL_CASES, ids=[str(i) for i in range(len(URL_CASES))])
def test_urls_in_every_format_and_near_miss_keys_are_redacted(text: str, value: str) -> None:
    """Before: a ``)`` or ``>`` after the value made it look like a reference and it was
    kept; ``db_pass`` was no keyword."""
    start = text.index(value)
    spans = [(s, e) for s, e, _t in find_pattern_secrets(text)]
    assert any(s <= start and e >= start + len(value) for s, e in spans), spans


@pytest.mark.parametrize(
    "text",
    [
        "see [the docs](https://example.com/guide?page=2)",
        "see https://example.com/search?keywords=running+shoes&page=2",
        "The password is stored in Vault.",
        "passwords are hashed with bcrypt; the password of at least 12 characters",
        "pass the value to the next stage: pw = None",
        '<a href="https://example.com/?ref=homepage">home</a>',
    ],
)
def test_ordinary_urls_and_prose_stay(text: str) -> None:
    d = SecretDetector()
    d.load()
    assert d.detect(Layout([text])) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("key AKIA\u200bPTGZ4JFE\u200cBZ9SDO78 here", "AKIA\u200bPTGZ4JFE\u200cBZ9SDO78"),
        (
            "ＡＫＩＡＰＴＧＺ４ＪＦＥＢＺ９ＳＤＯ７８ fullwidth",
            "ＡＫＩＡＰＴＧＺ４ＪＦＥＢＺ９ＳＤＯ７８",
        ),
        ("mail ops\u200b-oncall@acme\u200b-corp.com now", "ops\u200b-oncall@acme\u200b-corp.com"),
        ("Contact аdmin@exаmple.com please", "аdmin@exаmple.com"),
        # folding can also hide a match (``fipassword``): the original is scanned too
        ("\ufb01\ufb01password=Hq7vR2kP9zXy", "Hq7vR2kP9zXy"),
        (
            "token ghp_DOrHIPESvjRmeA6mOOCrl\u2060wBVLuOJm5ug1dTo",
            "ghp_DOrHIPESvjRmeA6mOOCrl\u2060wBVLuOJm5ug1dTo",
        ),
    ],
)
async def test_zero_width_and_look_alike_splits_are_redacted_in_the_original(
    make_scanner: Callable[..., Scanner], text: str, value: str
) -> None:
    out = await make_scanner().scan(make_event([text]))
    red = out.document.blocks[0].text
    assert value not in red and "[REDACTED:" in red
    # the redaction covers the original characters, invisible ones included
    stripped = "".join(c for c in value if c not in "\u200b\u200c\u2060")
    assert stripped not in red
    assert not any(c in red for c in "\u200b\u200c\u2060")


def test_normalized_spans_map_back_exactly() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ragline.scanning.normalize import normalize

    @settings(max_examples=300, deadline=None)
    @given(
        st.text(alphabet=st.sampled_from(list("ab AK\u200bＡé\ufeffﬁа\U0001f600\x00")), max_size=60)
    )
    def prop(text: str) -> None:
        view = normalize(text)
        for s in range(len(view.text) + 1):
            for e in range(s, len(view.text) + 1):
                lo, hi = view.to_original(s, e)
                assert 0 <= lo <= hi <= len(text)
                if e > s:  # the original span normalizes to a superset of the view span
                    assert view.text[s:e] in normalize(text[lo:hi]).text

    prop()


# ---------------------------------------------------------------- known gaps (measured)

SPLIT_LINES = [  # (text, value): a secret broken over two lines
    (
        "aws_secret_access_key =\n    UJwnHBdHIyvNLVlRXFwF8JlMaLNy02K35uDNHfkf",
        "UJwnHBdHIyvNLVlRXFwF8JlMaLNy02K35uDNHfkf",
    ),
    ("password:\n  Hq7vR2kP9zXy", "Hq7vR2kP9zXy"),
    (
        'token = (\n    "ghp_DOrHIPESvjRmeA6mOOCrlwBVLuOJm5ug1dTo"\n)',
        "ghp_DOrHIPESvjRmeA6mOOCrlwBVLuOJm5ug1dTo",
    ),
    ('key = "AKIAPTGZ4J" +\n      "FEBZ9SDO78"', "FEBZ9SDO78"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA7",
    ),
]
PROSE_NO_KEYWORD = [
    ("the admin one for staging is Wint3r-Is-C0ming!", "Wint3r-Is-C0ming!"),
    ("log in as root with Tr0ub4dor&3 and rotate it", "Tr0ub4dor&3"),
    ("the password for staging is Wint3r-Is-C0ming!", "Wint3r-Is-C0ming!"),
    ("your pw was Sup3rS3cret99 until Monday", "Sup3rS3cret99"),
]
BASE64_WRAPPED = [
    ("echo QUtJQVBUR1o0SkZFQlo5U0RPNzg= | base64 -d", "QUtJQVBUR1o0SkZFQlo5U0RPNzg="),
    (
        "data:\n  token: Z2hwX0RPckhJUEVTdmpSbWVBNm1PT0NybHdCVkx1T0ptNXVnMWRUbw==",
        "Z2hwX0RPckhJUEVTdmpSbWVBNm1PT0NybHdCVkx1T0ptNXVnMWRUbw==",
    ),
    (
        "blob eyJ1cmwiOiAicG9zdGdyZXM6Ly9hcHA6YzZOcWZhRFJ0T1A1REpAZGI6NTQzMi94In0=",
        "eyJ1cmwiOiAicG9zdGdyZXM6Ly9hcHA6YzZOcWZhRFJ0T1A1REpAZGI6NTQzMi94In0=",
    ),
]


def _caught(text: str, value: str) -> bool:
    d = SecretDetector()
    d.load()
    start = text.index(value)
    return any(f.start <= start and f.end >= start + len(value) for f in d.detect(Layout([text])))


def test_known_gaps_are_measured() -> None:
    """docs/scanning.md reports these rates; the asserted floors are what is closed."""
    rates = {
        name: sum(_caught(t, v) for t, v in cases) / len(cases)
        for name, cases in (
            ("split", SPLIT_LINES),
            ("prose", PROSE_NO_KEYWORD),
            ("base64", BASE64_WRAPPED),
        )
    }
    print(f"known-gap detection rates: {rates}")
    assert rates["base64"] == 1.0
    assert rates["split"] >= 0.8  # string concatenation across lines is the open case
    assert rates["prose"] >= 0.5  # a password with no keyword near it is the open case


def test_meta_fields_are_collected() -> None:
    from ragline.scanning.fields import collect

    ev = _with_meta(version="9", mime_type="text/plain", supersedes=("wiki:a",))
    texts = collect(ev)  # type: ignore[arg-type]
    paths = {r.path[:2] for r in texts.refs}
    assert {("meta", "version"), ("meta", "mime_type"), ("document_id",)} <= paths
    _ = DocumentMeta
