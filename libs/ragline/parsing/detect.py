"""Which parser a document needs: declared MIME type, then file extension, then sniffing."""

from __future__ import annotations

import io
import json
import posixpath
import re
import zipfile
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote, urlsplit

from ragline.errors import QuarantineError

__all__ = ["Detected", "Format", "detect_format"]


class Format(StrEnum):
    MARKDOWN = "markdown"
    HTML = "html"
    TEXT = "text"
    PDF = "pdf"
    DOCX = "docx"
    CSV = "csv"
    TSV = "tsv"
    PYTHON = "python"
    CODE = "code"
    JSON = "json"  # a transcript if it has the shape of one, else code (json)
    TRANSCRIPT = "transcript"  # declared a transcript: a bad shape is invalid_transcript


@dataclass(frozen=True, kw_only=True)
class Detected:
    format: Format
    language: str | None = None  # source-code language
    charset: str | None = None  # declared in the MIME type
    via: str  # "mime", "extension" or "sniff"


_MIME: dict[str, tuple[Format, str | None]] = {
    "text/markdown": (Format.MARKDOWN, None),
    "text/x-markdown": (Format.MARKDOWN, None),
    "text/html": (Format.HTML, None),
    "application/xhtml+xml": (Format.HTML, None),
    "application/pdf": (Format.PDF, None),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": (Format.DOCX, None),
    "text/csv": (Format.CSV, None),
    "application/csv": (Format.CSV, None),
    "text/tab-separated-values": (Format.TSV, None),
    "text/x-python": (Format.PYTHON, "python"),
    "text/x-script.python": (Format.PYTHON, "python"),
    "application/x-python-code": (Format.PYTHON, "python"),
    "application/json": (Format.JSON, None),
    "text/json": (Format.JSON, None),
    "application/vnd.ragline.transcript+json": (Format.TRANSCRIPT, None),
    "text/javascript": (Format.CODE, "javascript"),
    "application/javascript": (Format.CODE, "javascript"),
    "application/typescript": (Format.CODE, "typescript"),
    "text/x-go": (Format.CODE, "go"),
    "text/x-java": (Format.CODE, "java"),
    "text/x-java-source": (Format.CODE, "java"),
    "text/x-c": (Format.CODE, "c"),
    "text/x-c++": (Format.CODE, "cpp"),
    "text/x-rust": (Format.CODE, "rust"),
    "text/x-shellscript": (Format.CODE, "shell"),
    "application/x-sh": (Format.CODE, "shell"),
    "application/sql": (Format.CODE, "sql"),
    "application/yaml": (Format.CODE, "yaml"),
    "text/yaml": (Format.CODE, "yaml"),
}
_GENERIC_MIME = frozenset(
    {"text/plain", "application/octet-stream", "binary/octet-stream", "application/unknown"}
)
_UNSUPPORTED_MIME = re.compile(
    r"^(image|audio|video|font|model)/|^application/(zip|gzip|x-tar|x-7z|x-rar|msword|"
    r"vnd\.ms-|vnd\.oasis|vnd\.openxmlformats-officedocument\.(spreadsheetml|presentationml)|"
    r"x-msdownload|x-executable|java-archive|rtf)"
)
_CODE_EXT: dict[str, str] = {
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".go": "go", ".java": "java", ".kt": "kotlin",
    ".scala": "scala", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".cxx": "cpp", ".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".swift": "swift", ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".sql": "sql",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini", ".cfg": "ini",
    ".xml": "xml", ".proto": "protobuf", ".tf": "terraform", ".lua": "lua", ".r": "r",
    ".pl": "perl", ".dockerfile": "dockerfile", ".css": "css", ".scss": "css",
}  # fmt: skip
_EXT: dict[str, Format] = {
    ".md": Format.MARKDOWN, ".markdown": Format.MARKDOWN, ".mdx": Format.MARKDOWN,
    ".html": Format.HTML, ".htm": Format.HTML, ".xhtml": Format.HTML,
    ".txt": Format.TEXT, ".text": Format.TEXT, ".log": Format.TEXT, ".rst": Format.TEXT,
    ".adoc": Format.TEXT, ".pdf": Format.PDF, ".docx": Format.DOCX, ".csv": Format.CSV,
    ".tsv": Format.TSV, ".tab": Format.TSV, ".py": Format.PYTHON, ".pyi": Format.PYTHON,
    ".json": Format.JSON,
}  # fmt: skip
_UNSUPPORTED_EXT = frozenset(
    {".doc", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".rtf", ".zip", ".gz",
     ".tar", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".mp3", ".mp4", ".wav", ".exe", ".bin"}
)  # fmt: skip
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG", "PNG image"), (b"\xff\xd8\xff", "JPEG image"), (b"GIF8", "GIF image"),
    (b"\x1f\x8b", "gzip archive"), (b"BZh", "bzip2 archive"), (b"7z\xbc\xaf", "7z archive"),
    (b"Rar!", "RAR archive"), (b"\x7fELF", "ELF executable"), (b"MZ", "Windows executable"),
    (b"RIFF", "RIFF media"), (b"ID3", "MP3 audio"), (b"OggS", "Ogg media"),
    (b"\xd0\xcf\x11\xe0", "OLE2 container (legacy Office or encrypted OOXML)"),
)  # fmt: skip
_MD_SIGNAL = re.compile(r"^(#{1,6}\s|```|~~~|\s{0,3}[-*+]\s|\s{0,3}\d+[.)]\s|\|.*\|\s*$|>\s)", re.M)


def _split_mime(mime: str | None) -> tuple[str | None, str | None]:
    if not mime:
        return None, None
    base, *params = (p.strip() for p in mime.split(";"))
    charset = None
    for p in params:
        key, _, value = p.partition("=")
        if key.strip().lower() == "charset" and value:
            charset = value.strip().strip('"')
    return base.lower() or None, charset


def _extension(uri: str | None) -> tuple[str, bool]:
    """(extension, is a ``.transcript.json``) of the uri's path, lower case."""
    if not uri:
        return "", False
    path = unquote(urlsplit(uri).path or uri).lower()
    name = posixpath.basename(path.replace("\\", "/"))
    if name == "dockerfile":
        return ".dockerfile", False
    return posixpath.splitext(name)[1], name.endswith(".transcript.json")


def detect_format(data: bytes, mime_type: str | None, uri: str | None) -> Detected:
    """Decide the format; raise ``unsupported_type`` for what no parser handles.

    A specific MIME type we parse wins, then a known file extension, then content
    sniffing (for generic types such as text/plain or application/octet-stream).
    """
    mime, charset = _split_mime(mime_type)
    if mime in _MIME:
        fmt, lang = _MIME[mime]
        return Detected(format=fmt, language=lang, charset=charset, via="mime")
    ext, transcript = _extension(uri)
    if transcript:
        return Detected(format=Format.TRANSCRIPT, charset=charset, via="extension")
    if ext in _EXT:
        fmt = _EXT[ext]
        lang = "python" if fmt is Format.PYTHON else None
        return Detected(format=fmt, language=lang, charset=charset, via="extension")
    if ext in _CODE_EXT:
        lang = _CODE_EXT[ext]
        return Detected(format=Format.CODE, language=lang, charset=charset, via="extension")
    if ext in _UNSUPPORTED_EXT:
        raise QuarantineError("unsupported_type", f"no parser for {ext} files")
    # after the extension: guessers map source files to odd types (.ts -> video/mp2t)
    if mime and _UNSUPPORTED_MIME.search(mime):
        raise QuarantineError("unsupported_type", f"no parser for MIME type {mime}")
    return Detected(format=_sniff(data), charset=charset, via="sniff")


def _sniff(data: bytes) -> Format:
    head = data[:8192]
    if b"%PDF-" in head[:1024]:
        return Format.PDF
    if head.startswith(b"PK\x03\x04"):
        if _is_docx(data):
            return Format.DOCX
        raise QuarantineError("unsupported_type", "zip archive that is not a DOCX document")
    for magic, what in _BINARY_MAGIC:
        if head.startswith(magic):
            raise QuarantineError("unsupported_type", f"content looks like a {what}")
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n").lower()
    if text.startswith(("<!doctype html", "<html")) or "<body" in text[:2048]:
        return Format.HTML
    if text.startswith(("{", "[")):
        try:
            json.loads(data)
        except ValueError:  # UnicodeDecodeError is a ValueError
            pass
        else:
            return Format.JSON
    if text.startswith("#!") and "python" in text.split("\n", 1)[0]:
        return Format.PYTHON
    if len(_MD_SIGNAL.findall(text)) >= 2:
        return Format.MARKDOWN
    return Format.TEXT


def _is_docx(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return "word/document.xml" in zf.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
