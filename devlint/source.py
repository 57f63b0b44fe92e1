"""Reading and writing Python source without losing a byte: BOM, PEP 263 cookies, line endings, mode."""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass

_BOM = codecs.BOM_UTF8


class SourceError(Exception):
    """A file that cannot be read or decoded; the message is the diagnostic shown to the user."""


@dataclass
class Source:
    """Decoded text plus what is needed to write it back byte-for-byte."""

    text: str  # decoded, without the BOM, with the file's own line endings
    encoding: str = "utf-8"
    bom: bool = False

    def encode(self, text: str | None = None) -> bytes:
        data = (self.text if text is None else text).encode(self.encoding)
        return _BOM + data if self.bom else data


def decode(data: bytes) -> Source:
    """Decode bytes as Python does (BOM, then an encoding cookie in the first two lines, else UTF-8)."""
    if b"\x00" in data[:8192]:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "unknown encoding" in str(exc) or "encoding problem" in str(exc):
            raise SourceError(f"bad encoding declaration: {exc}") from None
        encoding = "utf-8"  # not valid UTF-8 in the first lines: the decode below says where
    bom = data.startswith(_BOM)
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    body = data[len(_BOM):] if bom else data
    try:
        codecs.lookup(encoding)
        text = body.decode(encoding)
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise SourceError(f"cannot decode line {line} as {encoding}: {exc.reason}") from None
    return Source(text=text, encoding=encoding, bom=bom)


MAX_BYTES = 64 * 1024 * 1024  # not read at all: no source file is this large
# LibCST parses ~0.4 MB/s and holds ~0.6 GB per MB of source: a larger file would stall a pre-commit hook
# and could exhaust a CI runner's memory. The largest file in torch, transformers, timm and ultralytics is
# 1.4 MB (10 s, 0.8 GB). A larger file passes the byte triggers only; where one matches it is reported as
# not checked.
LIBCST_MAX_BYTES = 2 * 1024 * 1024


def read_bytes(path: str) -> bytes:
    """The file's bytes, or :class:`SourceError` for what devlint will not or cannot read."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError("not a regular file")  # a FIFO or device would block or never end
        if st.st_size > MAX_BYTES:
            raise SourceError(f"file too large to lint ({st.st_size / 1e6:.1f} MB; the limit is "
                              f"{MAX_BYTES // (1024 * 1024)} MiB), skipped")
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SourceError(f"cannot read file: {exc.strerror or exc}") from None
    return data


def read_source(path: str) -> tuple[bytes, Source]:
    data = read_bytes(path)
    return data, decode(data)


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same directory + rename), keeping its mode."""
    directory = os.path.dirname(os.path.abspath(path))
    st = os.stat(path)
    fd, tmp = tempfile.mkstemp(prefix=".devlint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise




_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on \\r\\n, \\r and \\n only (as Python's tokenizer and LibCST do)."""
    return _LINE_RE.findall(text)
