"""``--add-noqa``: write ``# noqa: CODE`` on the line of each finding, where devlint/noqa.py will read it.

A finding is suppressed by a noqa comment on its first or its last line (engine.lint_text). The comment goes
on the first of those lines where a comment can end the line: not a line whose end lies inside a multi-line
string (the comment would become part of the string) nor one continued by a backslash (a comment there is a
syntax error). An existing ``# noqa: X`` comment on that line is extended (``# noqa: X, CODE``, sorted, no
duplicates); another comment keeps its text and gets ``  # noqa: CODE`` after it.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from dataclasses import dataclass

from devlint.diagnostics import Finding
from devlint.noqa import _NOQA
from devlint.source import split_lines

_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+: an f-string is several tokens
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass
class _Lines:
    blocked: set[int]  # rows where no comment may end the line
    comments: dict[int, tuple[int, str]]  # row -> (column of the comment, its text)


def _scan(text: str) -> _Lines | None:
    """Where comments are and where none may go; None when the text does not tokenize."""
    blocked: set[int] = set()
    comments: dict[int, tuple[int, str]] = {}
    fstrings: list[int] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = (tok.start[1], tok.string)
            elif _FSTRING_START is not None and tok.type == _FSTRING_START:
                fstrings.append(tok.start[0])
            elif _FSTRING_END is not None and tok.type == _FSTRING_END and fstrings:
                blocked.update(range(fstrings.pop(), tok.end[0]))
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                blocked.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    for row, line in enumerate(split_lines(text), start=1):
        if row not in comments and line.rstrip("\r\n").endswith("\\"):
            blocked.add(row)  # a backslash continuation (or a line inside a string, already blocked)
    return _Lines(blocked, comments)


def _with_codes(line: str, comment: tuple[int, str] | None, codes: set[str]) -> str | None:
    """``line`` with a noqa comment for ``codes`` (None: nothing to add)."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    if comment is not None:
        column, string = comment
        match = _NOQA.search(string)
        if match is not None:
            if match.group("codes") is None:
                return None  # a bare `# noqa` suppresses everything already
            old = {c.upper() for c in re.split(r"[\s,]+", match.group("codes").strip())}
            if codes <= old:
                return None
            merged = ", ".join(sorted(old | codes))
            new = string[: match.start("codes")] + merged + string[match.end("codes"):]
            return body[:column] + new + body[column + len(string):] + ending
    return body.rstrip(" \t") + f"  # noqa: {', '.join(sorted(codes))}" + ending


def add_noqa(text: str, findings: list[Finding]) -> tuple[str, int]:
    """``text`` with noqa comments for ``findings`` (rows of ``text``); the number of lines changed."""
    if not findings:
        return text, 0
    lines = _scan(text)
    if lines is None:
        return text, 0
    physical = split_lines(text)
    wanted: dict[int, set[str]] = defaultdict(set)
    for f in findings:
        for row in dict.fromkeys((f.start.row, f.end.row)):
            if 1 <= row <= len(physical) and row not in lines.blocked:
                wanted[row].add(f.code)
                break
    changed = 0
    for row, codes in wanted.items():
        new = _with_codes(physical[row - 1], lines.comments.get(row), codes)
        if new is not None:
            physical[row - 1] = new
            changed += 1
    return "".join(physical), changed


def noqa_row(text: str, finding: Finding) -> int:
    """The row :func:`add_noqa` writes ``finding``'s comment on (rows of ``text``): its first row, or its last
    where the first ends inside a multi-line string or with a backslash; the first when neither can hold one."""
    if finding.start.row == finding.end.row:
        return finding.start.row
    lines = _scan(text)
    if lines is not None:
        for row in (finding.start.row, finding.end.row):
            if row not in lines.blocked:
                return row
    return finding.start.row
