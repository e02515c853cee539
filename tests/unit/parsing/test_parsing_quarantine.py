"""Bad input is quarantined with a specific reason code, never a crash or a library error."""

from __future__ import annotations

import base64
import io
import zipfile

import pytest
from parsing_helpers import FIXTURES, parse

import ragline.parsing.dispatcher as dispatcher
import ragline.parsing.docx as docx_module
from ragline.errors import ContractError, QuarantineError
from ragline.parsing import ParserSettings, decode_payload

BAD = FIXTURES / "bad"


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("corrupt.pdf", "corrupt_pdf"),
        ("encrypted.pdf", "encrypted_pdf"),
        ("scanned.pdf", "empty_document"),
        ("zip_bomb.docx", "zip_bomb"),
        ("pdf_bomb.pdf", "decompression_bomb"),
        ("encrypted.docx", "encrypted_docx"),
        ("truncated.docx", "corrupt_docx"),
        ("invalid_encoding.txt", "invalid_encoding"),
        ("empty.md", "empty_document"),
        ("image.bin", "unsupported_type"),
        ("bad_turns.transcript.json", "invalid_transcript"),
    ],
)
def test_bad_fixture_is_quarantined(name: str, code: str) -> None:
    with pytest.raises(QuarantineError) as info:
        parse((BAD / name).read_bytes(), name)
    assert info.value.reason_code == code
    assert info.value.reason


def test_all_bad_fixtures_are_covered() -> None:
    names = {p.name for p in BAD.iterdir()}
    assert len(names) == 11


def test_zip_bomb_is_judged_before_python_docx_opens_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object, **__: object) -> None:
        raise AssertionError("python-docx must not see a zip bomb")

    monkeypatch.setattr(docx_module.docx, "Document", boom)
    with pytest.raises(QuarantineError) as info:
        parse((BAD / "zip_bomb.docx").read_bytes(), "zip_bomb.docx")
    assert info.value.reason_code == "zip_bomb"


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_zip_limits_total_size_and_member_count() -> None:
    members = {f"word/media/m{i}.bin": bytes(range(256)) * 40 for i in range(20)}  # 200 KB
    members["word/document.xml"] = b"<w:document/>"
    data = _zip(members)
    with pytest.raises(QuarantineError) as info:
        parse(data, "x.docx", settings=ParserSettings(max_zip_uncompressed_bytes=100_000))
    assert info.value.reason_code == "zip_bomb"
    assert "uncompressed" in info.value.reason
    with pytest.raises(QuarantineError) as info:
        parse(data, "x.docx", settings=ParserSettings(max_zip_members=10))
    assert info.value.reason_code == "zip_bomb"
    assert "members" in info.value.reason


def test_a_zip_that_is_not_a_word_document_is_corrupt_docx() -> None:
    with pytest.raises(QuarantineError) as info:
        parse(_zip({"hello.txt": b"hi"}), "notes.docx")
    assert info.value.reason_code == "corrupt_docx"


def test_undeclared_zip_is_unsupported() -> None:
    with pytest.raises(QuarantineError) as info:
        parse(_zip({"hello.txt": b"hi"}), "upload")
    assert info.value.reason_code == "unsupported_type"


def test_oversize_document() -> None:
    settings = ParserSettings(max_bytes=1000)
    with pytest.raises(QuarantineError) as info:
        parse(b"word " * 201, "big.txt", settings=settings)
    assert info.value.reason_code == "oversize_document"
    parse(b"word " * 200, "ok.txt", settings=settings)  # exactly at the limit passes


def test_oversize_payload_is_rejected_before_base64_decoding() -> None:
    settings = ParserSettings(max_bytes=1000)
    # not even valid base64: the size check must come first
    with pytest.raises(QuarantineError) as info:
        decode_payload("!" * 4000, settings)
    assert info.value.reason_code == "oversize_document"
    ok = base64.b64encode(b"x" * 1000).decode()
    assert decode_payload(ok, settings) == b"x" * 1000


def test_invalid_base64_is_a_contract_error() -> None:
    with pytest.raises(ContractError):
        decode_payload("not base64 at all!", ParserSettings())


def test_too_many_pages() -> None:
    data = (FIXTURES / "report.pdf").read_bytes()
    with pytest.raises(QuarantineError) as info:
        parse(data, "report.pdf", settings=ParserSettings(max_pages=2))
    assert info.value.reason_code == "too_many_pages"


def test_too_many_blocks() -> None:
    data = (FIXTURES / "guide.md").read_bytes()
    with pytest.raises(QuarantineError) as info:
        parse(data, "guide.md", settings=ParserSettings(max_blocks=3))
    assert info.value.reason_code == "too_many_blocks"


def test_extracted_text_limit() -> None:
    with pytest.raises(QuarantineError) as info:
        parse(b"abc def\n\n" * 200, "t.txt", settings=ParserSettings(max_chars=500))
    assert info.value.reason_code == "oversize_document"


@pytest.mark.parametrize(
    ("data", "name", "mime"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "upload", None),
        (b"whatever", "photo.jpg", None),
        (b"whatever", "sheet.xlsx", None),
        (b"whatever", "upload", "image/png"),
        (b"whatever", "upload", "application/vnd.ms-excel"),
        (b"\x7fELF\x02\x01\x01" + bytes(100), "upload", None),
    ],
)
def test_unsupported_types(data: bytes, name: str, mime: str | None) -> None:
    with pytest.raises(QuarantineError) as info:
        parse(data, name, mime=mime)
    assert info.value.reason_code == "unsupported_type"


def test_declared_pdf_that_is_not_a_pdf() -> None:
    with pytest.raises(QuarantineError) as info:
        parse(b"hello, I am text", "x", mime="application/pdf")
    assert info.value.reason_code == "corrupt_pdf"


def test_bom_that_lies_is_invalid_encoding() -> None:
    with pytest.raises(QuarantineError) as info:
        parse(b"\xef\xbb\xbfok \xff\xfe broken", "x.txt")
    assert info.value.reason_code == "invalid_encoding"


def test_binary_content_declared_as_text_is_invalid_encoding() -> None:
    with pytest.raises(QuarantineError) as info:
        parse(bytes(range(32)) * 50, "x.txt")
    assert info.value.reason_code == "invalid_encoding"


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json",
        b'{"turns": 3}',
        b"[1, 2]",
        b'[{"text": "a", "speaker": 7}]',
        b'[{"text": "a", "timestamp": true}]',
        b'[{"text": "a"}] trailing',
    ],
)
def test_invalid_transcripts(payload: bytes) -> None:
    with pytest.raises(QuarantineError) as info:
        parse(payload, "call.transcript.json")
    assert info.value.reason_code == "invalid_transcript"


def test_empty_transcript_is_empty_document() -> None:
    with pytest.raises(QuarantineError) as info:
        parse(b'{"turns": []}', "call.transcript.json")
    assert info.value.reason_code == "empty_document"


def test_invalid_csv() -> None:
    data = b"a,b\n" + b'"' + b"x" * (11 * 1024 * 1024) + b'",y\n'
    with pytest.raises(QuarantineError) as info:
        parse(data, "huge_field.csv", settings=ParserSettings(max_bytes=64 * 1024 * 1024))
    assert info.value.reason_code == "invalid_csv"


def test_deep_html_nesting_never_escapes_as_recursion_error() -> None:
    data = b"<div>" * 20000 + b"deep" + b"</div>" * 20000
    try:
        doc = parse(data, "deep.html")
    except QuarantineError as exc:
        assert exc.reason_code == "nesting_too_deep"
    else:
        assert "deep" in doc.blocks[0].text


def test_reasons_never_quote_document_text() -> None:
    secret = "Hunter2SuperSecretValue"
    cases = [
        (f'[{{"speaker": "{secret}", "text": 5}}]'.encode(), "c.transcript.json"),
        (f"%PDF-1.4 {secret}".encode(), "x.pdf"),
        (f"PK\x03\x04{secret}".encode(), "x.docx"),
        (b"\xef\xbb\xbf" + secret.encode() + b"\xff", "x.txt"),
        ((secret + "\x00\x01\x02\x03" * 40).encode(), "x.txt"),
    ]
    for data, name in cases:
        with pytest.raises(QuarantineError) as info:
            parse(data, name)
        assert secret not in info.value.reason
        assert secret not in str(info.value)


def test_python_syntax_error_falls_back_to_generic_code() -> None:
    doc = parse(b"def broken(:\n    pass\n\nx = 1\n", "broken.py")
    assert doc.format == "code"
    assert {b.language for b in doc.blocks} == {"python"}


def test_a_bug_is_not_turned_into_a_quarantine(monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(*_: object, **__: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(dispatcher, "parse_markdown", bug)
    with pytest.raises(ZeroDivisionError):
        parse(b"# Title\n\ntext\n", "x.md")
