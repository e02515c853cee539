"""Bytes to text: BOM, declared charset, UTF-8, then charset-normalizer detection."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

import charset_normalizer

from ragline.errors import QuarantineError

__all__ = ["DecodedText", "decode_text"]

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# single-byte Latin code pages charset-normalizer confuses on short Western text
_LATIN_SINGLE_BYTE = frozenset(
    {
        "cp1250", "cp1252", "cp1254", "cp1257", "latin_1", "iso8859_2", "iso8859_3",
        "iso8859_4", "iso8859_9", "iso8859_10", "iso8859_13", "iso8859_14", "iso8859_15",
        "iso8859_16", "mac_latin2", "mac_roman",
    }
)  # fmt: skip
_BINARY_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")
_MAX_CONTROL_RATIO = 0.05
_NUL_RATIO_FOR_DETECTION = 0.10


@dataclass(frozen=True, kw_only=True)
class DecodedText:
    text: str
    encoding: str


def _codec_name(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _check_not_binary(text: str, encoding: str) -> DecodedText:
    if text:
        controls = len(_BINARY_CONTROL.findall(text[:65536]))
        if controls / min(len(text), 65536) > _MAX_CONTROL_RATIO:
            raise QuarantineError(
                "invalid_encoding",
                f"decoded as {encoding} but {controls} control characters remain: binary content",
            )
    return DecodedText(text=text, encoding=encoding)


def _strict(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_text(data: bytes, declared: str | None = None) -> DecodedText:
    """Decode ``data``; the encoding that won is returned with the text.

    Order: byte-order mark (authoritative), the declared charset if it decodes
    strictly, UTF-8 if it decodes strictly (and is not UTF-16 in disguise), then
    charset-normalizer. Anything undecodable or binary is ``invalid_encoding``.
    """
    for bom, enc in _BOMS:
        if data.startswith(bom):
            text = _strict(data[len(bom) :], enc)
            if text is None:
                raise QuarantineError(
                    "invalid_encoding", f"byte-order mark says {enc} but the bytes do not decode"
                )
            return _check_not_binary(text, enc)
    if declared:
        codec = _codec_name(declared)
        if codec is not None:
            text = _strict(data, codec)
            if text is not None:
                return _check_not_binary(text, codec)
    sample_nuls = data[:65536].count(0)
    if sample_nuls <= _NUL_RATIO_FOR_DETECTION * min(len(data), 65536):
        text = _strict(data, "utf-8")
        if text is not None:
            return _check_not_binary(text, "utf-8")
    return _detect(data)


def _detect(data: bytes) -> DecodedText:
    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None:
        raise QuarantineError(
            "invalid_encoding", "no text encoding decodes the bytes (binary or corrupt)"
        )
    encoding = best.encoding
    # Western European default: charset-normalizer often ranks cp1257/cp1250 first on
    # short French/German text; prefer cp1252 when it is a candidate too
    if (
        encoding in _LATIN_SINGLE_BYTE
        and any(m.encoding == "cp1252" for m in matches)
        and _strict(data, "cp1252") is not None
    ):
        encoding = "cp1252"
    text = _strict(data, encoding)
    if text is None:  # charset-normalizer may have judged a prefix only
        raise QuarantineError("invalid_encoding", f"bytes do not decode as detected {encoding}")
    return _check_not_binary(text, encoding)
