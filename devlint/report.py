"""Output formats, as ruff has them: ``concise`` (``path:line:col: CODE message``; ``text`` is its old name),
``full`` (the same line, then the source with the span underlined and the fix as a diff), ``json`` (ruff's
fields), ``sarif`` (SARIF 2.1.0, with fixes), ``github`` (workflow commands); colour; the summary."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO

from devlint import __version__, notebook
from devlint.addnoqa import noqa_row
from devlint.diagnostics import Applicability, Edit, Finding, Fix, Position
from devlint.rules import all_rules
from devlint.source import SourceError, decode, read_bytes, split_lines

FORMATS = ("concise", "full", "json", "sarif", "github", "text")  # text: the name concise had before full existed
DEFAULT_FORMAT = "concise"
COLOR_CHOICES = ("auto", "always", "never")


def text_format(fmt: str) -> str:
    """The format's canonical name for the command line's checks: ``concise`` and its old name are ``text``."""
    return "text" if fmt == "concise" else fmt


# --- colour --------------------------------------------------------------------------------------------
def use_color(choice: str, is_terminal: bool, environ: dict[str, str] | None = None) -> bool:
    """Colour or not: ``--color always|never`` decides; with ``auto`` a non-empty ``NO_COLOR`` turns it off, a
    non-empty ``FORCE_COLOR`` (or ``CLICOLOR_FORCE``) on, else colour when stdout is a terminal (not ``dumb``)."""
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR") or env.get("CLICOLOR_FORCE", "0") not in ("", "0"):
        return True
    return is_terminal and env.get("TERM") != "dumb"


def stdout_is_terminal(stream: IO[str] | None = None) -> bool:
    """Is standard output a terminal (in click's sense, so that ``CliRunner(color=True)`` counts as one)?"""
    from click import _compat  # (CliRunner(color=True) patches its should_strip_ansi)

    return not _compat.should_strip_ansi(stream if stream is not None else sys.stdout)


@dataclass(frozen=True)
class Style:
    """ANSI SGR styling (ruff's colours), or none."""

    enabled: bool = False

    def __call__(self, text: str, *sgr: int) -> str:
        if not self.enabled or not text:
            return text
        return "".join(f"\x1b[{code}m" for code in sgr) + text + "\x1b[0m"


PLAIN = Style(False)
BOLD, RED, GREEN, CYAN, BRIGHT_RED, BRIGHT_BLUE, BRIGHT_CYAN = 1, 31, 32, 36, 91, 94, 96


# --- concise and full ----------------------------------------------------------------------------------
def location(f: Finding) -> str:
    """``path:row:col``, in a notebook ``path:cell N:row:col`` (the row in the cell)."""
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.path}:{cell}{f.start.row}:{f.start.column}"


def fixable(f: Finding, unsafe: bool) -> bool:
    """Would ``--fix`` (with ``--unsafe-fixes`` when ``unsafe``) apply the finding's fix?"""
    return f.fix is not None and (f.fix.applicability is Applicability.SAFE or unsafe)


def _line(f: Finding, style: Style, marker: bool) -> str:
    """One finding as ruff's concise line, coloured as ruff colours it (path bold, colons cyan, code red bold)."""
    colon = style(":", CYAN)
    where = style(f.path, BOLD) + colon
    if f.cell is not None:
        where += f"cell {f.cell}" + colon
    where += f"{f.start.row}{colon}{f.start.column}{colon}"
    mark = f" [{style('*', CYAN)}]" if marker else ""
    return f"{where} {style(f.code, BOLD, RED)}{mark} {f.message}"


def concise(findings: list[Finding], style: Style = PLAIN) -> str:
    return "".join(_line(f, style, False) + "\n" for f in findings)


text = concise  # the format's old name


class _Sources:
    """The text a finding's rows count in: the file's, or in a notebook the cell's; each file read once."""

    def __init__(self) -> None:
        self.files: dict[str, dict[int, list[str]] | None] = {}

    def lines(self, f: Finding) -> list[str] | None:
        if f.path not in self.files:
            self.files[f.path] = self._read(f.path)
        texts = self.files[f.path]
        return None if texts is None else texts.get(f.cell or 0)

    @staticmethod
    def _read(path: str) -> dict[int, list[str]] | None:
        try:
            data = read_bytes(path)
            if notebook.is_notebook(path):
                return {c.number: split_lines(c.text) for c in notebook.parse(data).cells}
            return {0: split_lines(decode(data).text)}
        except (SourceError, notebook.NotebookError, OSError):
            return None


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def _underline(line: str, start: int, end: int) -> str:
    """Carets under ``line`` from column ``start`` up to ``end`` (1-based, exclusive; at least one), the
    indentation before them copied from the line (a tab stays a tab, so that they line up)."""
    prefix = "".join(c if c == "\t" else " " for c in line[:start - 1])
    return prefix + "^" * max(1, end - start)


def _span_rows(f: Finding, lines: list[str]) -> list[tuple[int, int, int]]:
    """(row, first column, end column) under which the finding's span is underlined, per row."""
    start, end = f.start, f.end if f.end >= f.start else f.start
    out = []
    for row in range(start.row, min(end.row, len(lines)) + 1):
        body = _bare(lines[row - 1])
        first = start.column if row == start.row else len(body) - len(body.lstrip()) + 1
        last = end.column if row == end.row else len(body.rstrip()) + 1
        if row == end.row and row != start.row and end.column == 1:
            break  # the span ends at the start of this row
        out.append((row, first, max(last, first + 1)))
    return out


Hunk = tuple[int, int, list[str], list[str]]  # first old row, first new row, old lines, new lines


def _fix_hunks(lines: list[str], edits: tuple[Edit, ...]) -> list[Hunk] | None:
    """The fix's changes as hunks of whole lines, without line endings: the edits on overlapping rows applied
    together, the lines they leave as they were trimmed off (a statement moved up the file is a line added
    there and one removed here, not every line in between). None when an edit is outside ``lines``."""
    groups: list[tuple[int, int, list[Edit]]] = []
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        first = edit.start.row
        last = edit.end.row - 1 if edit.end.column == 1 and edit.end.row > edit.start.row else edit.end.row
        if first < 1 or last > len(lines):
            return None
        if groups and first <= groups[-1][1]:
            groups[-1] = (groups[-1][0], max(last, groups[-1][1]), [*groups[-1][2], edit])
        else:
            groups.append((first, last, [edit]))
    hunks: list[Hunk] = []
    delta = 0
    for first, last, group in groups:
        region = lines[first - 1:last]
        old = "".join(region)
        starts = [0]
        for line in region:
            starts.append(starts[-1] + len(line))

        def offset(pos: Position, first: int = first, starts: list[int] = starts, old: str = old) -> int:
            index = pos.row - first
            return len(old) if index >= len(starts) - 1 else min(starts[index] + pos.column - 1, len(old))

        new = old
        for edit in sorted(group, key=lambda e: (e.start, e.end), reverse=True):
            new = new[:offset(edit.start)] + edit.content + new[offset(edit.end):]
        before, after = [_bare(x) for x in split_lines(old)], [_bare(x) for x in split_lines(new)]
        head = 0
        while head < min(len(before), len(after)) and before[head] == after[head]:
            head += 1
        tail = 0
        while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
            tail += 1
        hunks.append((first + head, first + head + delta, before[head:len(before) - tail],
                      after[head:len(after) - tail]))
        delta += len(after) - len(before)
    return hunks


CONTEXT = 2  # lines shown around a finding's span, as ruff shows them


def _snippet(f: Finding, lines: list[str], style: Style) -> list[str]:
    rows = _span_rows(f, lines)
    if not rows:
        return []
    top, bottom = max(1, rows[0][0] - CONTEXT), min(len(lines), rows[-1][0] + CONTEXT)
    hunks = _fix_hunks(lines, f.fix.edits) if f.fix is not None else None
    widest = max([bottom, *(max(o + len(a), n + len(b)) for o, n, a, b in hunks or ())])
    width = len(str(widest))

    def gutter(label: object = "") -> str:
        return style(f"{label!s:>{width}}", BOLD, BRIGHT_BLUE) + " " + style("|", BOLD, BRIGHT_BLUE)

    carets = {row: (a, b) for row, a, b in rows}
    out = [gutter()]
    for row in range(top, bottom + 1):
        body = _bare(lines[row - 1])
        out.append(f"{gutter(row)} {body}".rstrip())
        if row in carets:
            out.append(f"{gutter()} {style(_underline(body, *carets[row]), BOLD, BRIGHT_RED)}")
    out.append(gutter())
    if f.fix is not None and hunks:
        out += _fix_diff(f.fix, hunks, style, width)
    return out


def _fix_diff(fix: Fix, hunks: list[Hunk], style: Style, width: int) -> list[str]:
    """``help: <the fix>`` and its change as ruff shows it: removed lines ``N - old`` (red), added ``N + new``
    (green; N counts in the fixed file), ``...`` between hunks."""
    out = [style("help", BOLD, BRIGHT_CYAN) + style(f": {fix.message or 'Apply the fix'}", BOLD)]
    sep = style(" " * width, BOLD, BRIGHT_BLUE) + " " + style("|", BOLD, BRIGHT_BLUE)
    out.append(sep)
    for k, (old_first, new_first, old, new) in enumerate(hunks):
        if k:
            out.append(style("...", BOLD, BRIGHT_BLUE))
        for i, line in enumerate(old):
            out.append(f"{style(f'{old_first + i:>{width}}', BOLD, BRIGHT_BLUE)} {style('-', BOLD, RED)} "
                       f"{style(line, RED)}".rstrip())
        for i, line in enumerate(new):
            out.append(f"{style(f'{new_first + i:>{width}}', BOLD, BRIGHT_BLUE)} {style('+', BOLD, GREEN)} "
                       f"{style(line, GREEN)}".rstrip())
    out.append(sep)
    if fix.applicability is Applicability.UNSAFE:
        out.append(style("note", BOLD) + ": This is an unsafe fix and may change runtime behavior")
    return out


def full(findings: list[Finding], style: Style = PLAIN, unsafe: bool = False) -> str:
    """Each finding's concise line (with ``[*]`` when ``--fix`` would apply its fix), then its source rows
    with the span underlined, then its fix (``help: ...`` and the rows before and after), then a blank line."""
    sources = _Sources()
    out = []
    for f in findings:
        out.append(_line(f, style, fixable(f, unsafe)))
        lines = sources.lines(f)
        if lines is not None and f.code not in ("E902", "E903"):
            out += _snippet(f, lines, style)
        out.append("")
    return "".join(line + "\n" for line in out)


# --- JSON ----------------------------------------------------------------------------------------------
def _loc(pos: Position) -> dict[str, int]:
    return {"column": pos.column, "row": pos.row}


@lru_cache(maxsize=1)
def _repository_url() -> str | None:
    """The project's repository (``[project.urls]`` Repository / Source / Homepage of the installed package)."""
    try:
        from importlib.metadata import PackageNotFoundError, metadata

        entries = metadata("devlint").get_all("Project-URL") or []
    except (PackageNotFoundError, ImportError):
        return None
    urls: dict[str, str] = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        urls[label.strip().lower()] = url.strip().rstrip("/")
    for label in ("repository", "source", "source code", "homepage"):
        url = urls.get(label, "")
        if url.startswith("https://"):
            return url
    return None


def rule_url(code: str) -> str | None:
    """The rule's reference page (``rules/CODE.md`` in the repository, what ``devlint rule CODE`` prints); None
    for a code that is no rule (E902, E999, ...) or when the package names no repository."""
    base = _repository_url()
    if code not in all_rules() or base is None:
        return None
    return f"{base}/blob/main/rules/{code}.md"


def _fix_json(fix: Fix | None) -> dict[str, object] | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "edits": [{"content": e.content, "end_location": _loc(e.end), "location": _loc(e.start)} for e in fix.edits],
        "message": fix.message or None,
    }


def to_json(findings: list[Finding]) -> str:
    """ruff's ``--output-format json`` fields, in its (alphabetical) order, plus nothing of devlint's own but
    the rule ``name`` ruff also writes; positions of a notebook's finding are in its ``cell``; ``noqa_row`` is
    where ``--add-noqa`` puts the finding's comment."""
    sources = _Sources()

    def noqa(f: Finding) -> int:
        if f.start.row == f.end.row:
            return f.start.row
        lines = sources.lines(f)
        return f.start.row if lines is None else noqa_row("".join(lines), f)

    items = [{
        "cell": f.cell,
        "code": f.code,
        "end_location": _loc(f.end),
        "filename": os.path.abspath(f.path),
        "fix": _fix_json(f.fix),
        "location": _loc(f.start),
        "message": f.message,
        "name": f.name,
        "noqa_row": noqa(f),
        "severity": "error",
        "url": rule_url(f.code),
    } for f in findings]
    return json.dumps(items, indent=2) + "\n"


# --- SARIF ---------------------------------------------------------------------------------------------
class _FileRows:
    """Where a notebook finding's row is in the notebook file (the line of the JSON string holding that code
    line), for the formats that point into files (SARIF, GitHub); each notebook read once."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[tuple[int, int], int]] = {}

    def __call__(self, f: Finding, pos: Position) -> int:
        if f.cell is None:
            return pos.row
        if f.path not in self.rows:
            try:
                self.rows[f.path] = notebook.file_rows(notebook.parse(read_bytes(f.path)))
            except (SourceError, notebook.NotebookError):
                self.rows[f.path] = {}
        return self.rows[f.path].get((f.cell, pos.row), 1)


def _region(f: Finding, file_row: _FileRows) -> dict[str, int]:
    if f.cell is None:
        return {"startLine": f.start.row, "startColumn": f.start.column,
                "endLine": f.end.row, "endColumn": f.end.column}
    return {"startLine": file_row(f, f.start), "endLine": file_row(f, f.end)}  # (columns: of the JSON, unknown)


SRCROOT = "%SRCROOT%"


def _artifact(path: str, root: str) -> dict[str, str]:
    """A file as SARIF names it: relative to ``root`` (the working directory, what code scanning resolves
    against at the checkout's root) under ``%SRCROOT%``, or an absolute ``file:`` URI when outside it."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return {"uri": Path(absolute).as_uri()}
    from urllib.parse import quote

    return {"uri": quote(rel.replace(os.sep, "/")), "uriBaseId": SRCROOT}


def _sarif_fix(f: Finding, artifact: dict[str, str]) -> list[dict[str, object]]:
    """The finding's fix as a SARIF ``fix`` (only for a module: a notebook's edits are in cell rows)."""
    if f.fix is None or f.cell is not None:
        return []
    replacements = []
    for e in f.fix.edits:
        replacement: dict[str, object] = {"deletedRegion": {
            "startLine": e.start.row, "startColumn": e.start.column, "endLine": e.end.row, "endColumn": e.end.column,
        }}
        if e.content:
            replacement["insertedContent"] = {"text": e.content}
        replacements.append(replacement)
    return [{
        "description": {"text": f.fix.message or "Apply the fix"},
        "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}],
        "properties": {"applicability": f.fix.applicability.value},
    }]


def sarif(findings: list[Finding], root: str | None = None) -> str:
    """SARIF 2.1.0: every rule (id, name, summary, page, ``helpUri``), every finding with its fix; paths
    relative to ``root`` (default: the working directory) under ``%SRCROOT%``; columns in code points."""
    root = os.path.abspath(root if root is not None else os.getcwd())
    rules = all_rules()
    rule_list = []
    for code, cls in rules.items():
        rule: dict[str, object] = {
            "id": code,
            "name": cls.name,
            "shortDescription": {"text": cls.summary},
            "fullDescription": {"text": cls.page()},
            "help": {"text": cls.summary, "markdown": cls.page()},
            "defaultConfiguration": {"level": "error"},
            "properties": {"fixAvailability": cls.fix_availability.value},
        }
        url = rule_url(code)
        if url is not None:
            rule["helpUri"] = url
        rule_list.append(rule)
    index = {code: i for i, code in enumerate(rules)}
    results = []
    file_row = _FileRows()
    for f in findings:
        artifact = _artifact(f.path, root)
        result: dict[str, object] = {
            "ruleId": f.code,
            "level": "error",
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": _region(f, file_row)}}],
        }
        if f.cell is not None:
            result["properties"] = {"cell": f.cell, "cellLocation": _loc(f.start), "cellEndLocation": _loc(f.end)}
            result["message"] = {"text": f"cell {f.cell}:{f.start.row}:{f.start.column}: {f.message}"}
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        fixes = _sarif_fix(f, artifact)
        if fixes:
            result["fixes"] = fixes
        results.append(result)
    driver: dict[str, object] = {"name": "devlint", "version": __version__, "rules": rule_list}
    if _repository_url() is not None:
        driver["informationUri"] = _repository_url()
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "originalUriBaseIds": {SRCROOT: {"uri": Path(root).as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2) + "\n"


# --- GitHub workflow commands --------------------------------------------------------------------------
def _gh_escape(value: str, prop: bool = False) -> str:
    """GitHub's escaping of a workflow command's message (``%``, CR, LF) and, in a property, ``:`` and ``,``."""
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(findings: list[Finding]) -> str:
    """``::error file=F,line=L,col=C,endLine=L,endColumn=C,title=CODE name::CODE message`` per finding."""
    lines = []
    file_row = _FileRows()
    for f in findings:
        if f.cell is None:
            where = f"line={f.start.row},col={f.start.column},endLine={f.end.row},endColumn={f.end.column}"
            message = f"{f.code} {f.message}"
        else:  # the lines of the notebook file holding the code; the cell's own position in the message
            where = f"line={file_row(f, f.start)},endLine={file_row(f, f.end)}"
            message = f"cell {f.cell}:{f.start.row}:{f.start.column}: {f.code} {f.message}"
        title = f"{f.code} {f.name}" if f.name else f.code
        props = f"file={_gh_escape(f.path, True)},{where},title={_gh_escape(title, True)}"
        lines.append(f"::error {props}::{_gh_escape(message)}\n")
    return "".join(lines)


def render(fmt: str, findings: list[Finding], style: Style = PLAIN, unsafe: bool = False) -> str:
    if fmt in ("concise", "text"):
        return concise(findings, style)
    if fmt == "full":
        return full(findings, style, unsafe)
    return {"json": to_json, "sarif": sarif, "github": github}[fmt](findings)


# --- the summary ---------------------------------------------------------------------------------------
def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else ('es' if word.endswith('x') else 's')}"


def summary(findings: list[Finding], fixed: list[Finding], fix: bool, unsafe: bool, style: Style = PLAIN) -> str:
    """ruff's summary: ``Found N errors (M fixed, K remaining).``, then what ``--fix`` would fix and the
    unsafe fixes it leaves out, each fix counted once (a fixed finding is not among those remaining)."""
    n, m = len(findings), len(fixed)
    if n == 0 and m == 0:
        return "All checks passed!\n"
    lines = [f"Found {_plural(n + m, 'error')} ({m} fixed, {n} remaining)." if fix and m else
             f"Found {_plural(n, 'error')}."]
    applicable = sum(1 for f in findings if fixable(f, unsafe))
    hidden = sum(1 for f in findings if f.fix is not None and not fixable(f, unsafe))
    star = f"[{style('*', CYAN)}]"
    hint = f"{_plural(hidden, 'unsafe fix')} available with `--fix --unsafe-fixes`"
    if applicable:
        lines.append(f"{star} {applicable} fixable with `--fix`" + (f" ({hint})." if hidden else "."))
    elif hidden:
        lines.append(f"{hint}.")
    return "".join(line + "\n" for line in lines)


def statistics(findings: list[Finding], unsafe: bool) -> str:
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable_codes = Counter(f.code for f in findings if fixable(f, unsafe))
    width = max((len(str(c)) for c in counts.values()), default=1)
    out = []
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        marker = "[*]" if fixable_codes[code] else "[ ]"
        out.append(f"{count:>{width}}\t{code}\t{marker} {names[code]}\n")
    return "".join(out)
