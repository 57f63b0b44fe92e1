"""``# noqa`` and ``# noqa: DEV001, DEV002`` comments, read from the tokenizer's comments."""

from __future__ import annotations

import io
import re
import tokenize

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)

ALL = frozenset({"*"})


def noqa_lines(text: str) -> dict[int, frozenset[str]]:
    """Line -> suppressed codes (``ALL`` for a bare ``# noqa``)."""
    out: dict[int, frozenset[str]] = {}
    if "noqa" not in text.lower():
        return out
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return out
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        match = _NOQA.search(tok.string)
        if not match:
            continue
        codes = match.group("codes")
        out[tok.start[0]] = frozenset(c.upper() for c in re.split(r"[\s,]+", codes.strip())) if codes else ALL
    return out


def is_suppressed(noqa: dict[int, frozenset[str]], code: str, lines: tuple[int, ...]) -> bool:
    for line in lines:
        codes = noqa.get(line)
        if codes is not None and (codes is ALL or code in codes):
            return True
    return False
