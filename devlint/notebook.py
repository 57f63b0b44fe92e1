"""Jupyter notebooks (``.ipynb``, nbformat 4): their code cells as one Python module, and back.

- **Read.** The notebook's JSON is walked once (C-speed ``json`` scanners); for each cell the span of its
  ``source`` value in the file is kept, and for a list source the raw JSON text of each item. Outputs are
  decoded by ``json`` and dropped, never parsed as code.
- **Mask.** IPython syntax that is not Python (``%magic``, ``!shell``, ``x = !ls``, ``?obj``, ``obj?``, a
  ``%%time`` first line) is replaced, line for line, by ``pass  # <marker>`` at the same indentation, so the
  other lines keep their rows and columns. A cell run by another program (``%%bash``, ``%%writefile``, any
  cell magic but ``%%time``-like ones) is left out whole, and so is a cell that does not parse.
- **One module.** The code cells, masked, in cell order, each after a separator comment naming its cell:
  one module, so a device chosen in one cell and used in another is understood. :func:`row_map` maps the
  module's rows back to (cell, row in the cell), for the module as built and for any fixed version of it.
- **Back.** A fixed module is split at its separators, masked lines are restored exactly, and only the
  ``source`` values of the changed cells are rewritten in the file's own text: outputs, metadata, key order,
  indentation, escapes and the trailing newline are the file's bytes, untouched.

Cells are numbered from 1 counting every cell, markdown and raw cells too (as ruff numbers them), so cell
``N`` is ``cells[N - 1]`` in the JSON.
"""

from __future__ import annotations

import ast
import codecs
import dataclasses
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from devlint.diagnostics import Finding, Fix, Position

SUFFIX = ".ipynb"
_BOM = codecs.BOM_UTF8


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


class NotebookError(Exception):
    """Not a notebook devlint can read (the message is the diagnostic); ``row``/``column``: where in the file."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.row = row
        self.column = column


# --- reading the JSON with the spans of the sources ------------------------------------------------------
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass
class Cell:
    number: int  # 1-based, counting every cell
    kind: str  # cell_type
    source: object  # the decoded source value (a str or a list of str when valid)
    span: tuple[int, int] = (0, 0)  # where the source value lies in the notebook's text
    items: list[str] | None = None  # the raw JSON text of each list item; None: not a list
    layout: tuple[str, str, str] = ("", ",", "")  # between "[" and the 1st item, between items, before "]"

    @property
    def text(self) -> str:
        """The source, joined."""
        return self.source if isinstance(self.source, str) else "".join(_strings(self.source))


def _strings(source: object) -> list[str]:
    return [s for s in source if isinstance(s, str)] if isinstance(source, list) else []


@dataclass
class Notebook:
    text: str  # the file, decoded (without its BOM)
    bom: bool
    cells: list[Cell]
    ascii: bool  # the file writes non-ASCII characters as \\u escapes

    @property
    def code_cells(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "code"]

    def encode(self, sources: dict[int, str]) -> bytes:
        """The file's bytes with the code of the cells in ``sources`` (number -> new text) replaced."""
        text = self.text
        for cell in sorted((c for c in self.cells if c.number in sources), key=lambda c: -c.span[0]):
            start, end = cell.span
            text = text[:start] + self._dump(cell, sources[cell.number]) + text[end:]
        data = text.encode("utf-8", "surrogatepass")
        return _BOM + data if self.bom else data

    def _dump(self, cell: Cell, new: str) -> str:
        if cell.items is None:
            return json.dumps(new, ensure_ascii=self.ascii)
        raw = dict(zip(_strings(cell.source), cell.items, strict=True))
        items = [raw.get(line) or json.dumps(line, ensure_ascii=self.ascii) for line in _lines(new)]
        first, between, close = cell.layout
        return "[" + first + between.join(items) + close + "]" if items else "[]"


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def ws(self) -> str:
        match = _WS.match(self.text, self.pos)
        self.pos = match.end() if match is not None else self.pos
        return self.text[self.pos: self.pos + 1]

    def fail(self, message: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(message, self.text, self.pos)

    def value(self) -> object:
        self.ws()
        value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        return value

    def string(self) -> str:
        if self.ws() != '"':
            raise self.fail("Expecting property name enclosed in double quotes")
        value = self.value()
        assert isinstance(value, str)
        return value

    def members(self) -> Iterator[str]:
        """The keys of the object starting here; the caller reads each value."""
        if self.ws() != "{":
            raise self.fail("Expecting '{'")
        self.pos += 1
        if self.ws() == "}":
            self.pos += 1
            return
        while True:
            key = self.string()
            if self.ws() != ":":
                raise self.fail("Expecting ':' delimiter")
            self.pos += 1
            self.ws()
            yield key
            char = self.ws()
            self.pos += 1
            if char == "}":
                return
            if char != ",":
                self.pos -= 1
                raise self.fail("Expecting ',' delimiter")

    def elements(self) -> Iterator[None]:
        """Each element of the array starting here; the caller reads it."""
        if self.ws() != "[":
            raise self.fail("Expecting '['")
        self.pos += 1
        if self.ws() == "]":
            self.pos += 1
            return
        while True:
            self.ws()
            yield None
            char = self.ws()
            self.pos += 1
            if char == "]":
                return
            if char != ",":
                self.pos -= 1
                raise self.fail("Expecting ',' delimiter")


def _source_list(r: _Reader, cell: Cell) -> None:
    """A list source: its items' values and raw text, and the whitespace around them."""
    text = r.text
    values: list[object] = []
    items: list[str] = []
    gaps: list[str] = []
    end = r.pos + 1
    for _ in r.elements():
        gaps.append(text[end: r.pos])
        start = r.pos
        values.append(r.value())
        items.append(text[start: r.pos])
        end = r.pos
    close = text[end: r.pos - 1] if items else ""
    first = gaps[0] if gaps else ""
    between = gaps[1] if len(gaps) > 1 else "," + first
    cell.source, cell.items, cell.layout = values, items, (first, between, close)


def _cell(r: _Reader, number: int) -> Cell:
    cell = Cell(number, "", None)
    kind: object = None
    for key in r.members():
        if key == "source":
            start = r.pos
            if r.text[r.pos: r.pos + 1] == "[":
                _source_list(r, cell)
            else:
                cell.source, cell.items = r.value(), None
            cell.span = (start, r.pos)
        elif key == "cell_type":
            kind = r.value()
        else:
            r.value()
    cell.kind = kind if isinstance(kind, str) else ""
    return cell


def _top(r: _Reader) -> tuple[dict[str, object], list[Cell] | None]:
    top: dict[str, object] = {}
    cells: list[Cell] | None = None
    for key in r.members():
        if key == "cells" and r.text[r.pos: r.pos + 1] == "[":
            cells = []
            for _ in r.elements():
                if r.text[r.pos: r.pos + 1] != "{":
                    r.value()  # (invalid JSON is reported as such)
                    raise NotebookError(f"invalid notebook: cell {len(cells) + 1} is not a JSON object")
                cells.append(_cell(r, len(cells) + 1))
        else:
            top[key] = r.value()
    if r.ws():
        raise r.fail("Extra data")
    return top, cells


def parse(data: bytes) -> Notebook:
    """The notebook in ``data``, or :class:`NotebookError` saying why it is not one devlint reads."""
    bom = data.startswith(_BOM)
    try:
        text = data[len(_BOM) if bom else 0:].decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise NotebookError(f"invalid notebook: cannot decode line {line} as UTF-8: {exc.reason}", line) from None
    reader = _Reader(text)
    if reader.ws() != "{":
        raise NotebookError("invalid notebook: " + ("empty file" if not text.strip() else "not a JSON object"))
    try:
        top, cells = _top(reader)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook: not valid JSON: {exc.msg} (line {exc.lineno}, column "
                            f"{exc.colno})", exc.lineno, exc.colno) from None
    _check(top, cells)
    assert cells is not None
    return Notebook(text, bom, cells, ascii=text.isascii() and re.search(r"\\u[0-9a-fA-F]{4}", text) is not None)


def _check(top: dict[str, object], cells: list[Cell] | None) -> None:
    version = top.get("nbformat")
    if isinstance(version, bool) or version != 4:
        shown = "none" if version is None else json.dumps(version)
        raise NotebookError(f"unsupported notebook: nbformat {shown}; devlint reads nbformat 4 (convert with "
                            "`jupyter nbconvert --to notebook --nbformat 4`)")
    if cells is None:
        why = "is not a list" if "cells" in top else "is missing"
        raise NotebookError(f"invalid notebook: the 'cells' key {why}")
    for cell in cells:
        if not cell.kind:
            raise NotebookError(f"invalid notebook: cell {cell.number} has no 'cell_type'")
        if cell.source is None and cell.kind == "code":
            raise NotebookError(f"invalid notebook: code cell {cell.number} has no 'source'")
        if cell.source is not None and not _text_source(cell.source):
            raise NotebookError(f"invalid notebook: the 'source' of cell {cell.number} is neither a string nor "
                                "a list of strings")


def _text_source(source: object) -> bool:
    return isinstance(source, str) or (isinstance(source, list) and all(isinstance(s, str) for s in source))


# --- masking IPython syntax ------------------------------------------------------------------------------
# Cell magics whose body is Python run in the kernel: their first line is masked, the body analysed.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_CELL_MAGIC = re.compile(r"\s*%%(\w*)")
_MAGIC_ASSIGN = re.compile(r"[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")
_HELP_END = re.compile(r"[A-Za-z_*][\w.*]*(?:\(\))?\?\??\s*")  # obj?, obj.method??, torch.*Tensor?
_TOKEN = re.compile(r"""(?P<comment>\#)|(?P<triple>'''|\"\"\")|(?P<quote>['"])|(?P<open>[(\[{])|(?P<close>[)\]}])""")


def _ipython_line(line: str) -> bool:
    """Is this line, at the start of a statement, IPython syntax rather than Python?"""
    stripped = line.strip()
    return (stripped[:1] in ("%", "!", "?") or _MAGIC_ASSIGN.match(stripped) is not None
            or _HELP_END.fullmatch(stripped) is not None)


@dataclass
class _Lexer:
    """Just enough of Python's tokenizer to know where statements start: brackets, strings, backslashes."""

    depth: int = 0
    quote: str | None = None  # an open triple quote
    continued: bool = False  # the previous line ended in a backslash

    @property
    def at_statement(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        body = line.rstrip("\r\n")
        pos = 0
        if self.quote is not None:
            pos = self._close(body, 0)
        while pos >= 0:
            match = _TOKEN.search(body, pos)
            if match is None:
                break
            pos = self._token(body, match)
        self.continued = pos >= 0 and self.quote is None and body.endswith("\\")

    def _close(self, body: str, pos: int) -> int:
        """Past the closing triple quote, or -1 (still inside)."""
        end = _find_quote(body, pos, self.quote or "")
        if end < 0:
            return -1
        self.quote = None
        return end

    def _token(self, body: str, match: re.Match[str]) -> int:
        kind = match.lastgroup
        if kind == "comment":
            return -1
        if kind == "triple":
            self.quote = match.group()
            return self._close(body, match.end())
        if kind == "quote":
            end = _find_quote(body, match.end(), match.group())
            return end if end >= 0 else len(body)
        self.depth = max(0, self.depth + (1 if kind == "open" else -1))
        return match.end()


def _find_quote(body: str, pos: int, quote: str) -> int:
    """The index just past ``quote`` in ``body`` from ``pos`` (backslash escapes skipped), or -1."""
    while True:
        end = body.find(quote, pos)
        if end < 0:
            return -1
        backslashes = len(body[:end]) - len(body[:end].rstrip("\\"))
        if backslashes % 2 == 0:
            return end + len(quote)
        pos = end + 1


@dataclass
class Masked:
    """A code cell as analysed: its lines with IPython syntax masked (``None``: left out whole)."""

    cell: Cell
    text: str | None
    originals: dict[str, str] = field(default_factory=dict)  # marker -> the line it stands for
    newline_added: bool = False  # the cell's last line had no newline; the module gives it one
    why: str = ""  # why the cell is left out


def mask(cell: Cell, nonce: str) -> Masked:
    text = cell.text
    magic = _CELL_MAGIC.match(text)
    if magic is not None and magic.group(1) not in PYTHON_CELL_MAGICS:
        return Masked(cell, None, why=f"%%{magic.group(1)} cell")
    lines = _lines(text)
    out = Masked(cell, "")
    lexer = _Lexer()
    masked: list[str] = []
    for i, line in enumerate(lines):
        if lexer.at_statement and (_ipython_line(line) or (i == 0 and magic is not None)):
            marker = f"{nonce}{cell.number}.{i + 1}"
            body = line.rstrip("\r\n")
            indent = body[: len(body) - len(body.lstrip())]
            masked.append(f"{indent}pass  # {marker}{line[len(body):]}")
            out.originals[marker] = line
            continue
        lexer.feed(line)
        masked.append(line)
    text = "".join(masked)
    if text and not text.endswith(("\n", "\r")):
        text += "\n"
        out.newline_added = True
    out.text = text
    return out


def unmask(masked: Masked, text: str) -> str | None:
    """The cell's code from its (fixed) masked ``text``: markers restored, the added newline removed; None
    when a masked line is not there exactly once (a fix touched it)."""
    out: list[str] = []
    seen: set[str] = set()
    for line in _lines(text):
        match = _MARKER.fullmatch(line.rstrip("\r\n"))
        marker = match.group(1) if match else None
        if marker is not None and marker in masked.originals:
            if marker in seen:
                return None
            seen.add(marker)
            out.append(masked.originals[marker])
        else:
            out.append(line)
    if seen != set(masked.originals):
        return None
    restored = "".join(out)
    if masked.newline_added and restored.endswith("\n"):
        restored = restored[:-1]
    return restored


_MARKER = re.compile(r"[ \t]*pass  # (\S+)")


def syntax_error(text: str) -> Exception | None:
    """Why a masked cell does not parse, or None. CPython's parser answers first (top-level ``await``
    allowed, as IPython runs it); where it refuses, LibCST is asked too, which also reads newer grammars: a
    cell neither parses is reported with CPython's error ("Missing parentheses in call to 'print'")."""
    try:
        compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        return None
    except (SyntaxError, ValueError) as exc:
        error: Exception = exc
    except (RecursionError, MemoryError):
        return None  # too deep for this check: the module's parse decides
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception as exc:  # noqa: BLE001 - whatever LibCST raises, the cell does not parse
        return error if isinstance(error, SyntaxError) else exc  # (CPython's message says more)
    return None


# --- the module of the code cells --------------------------------------------------------------------------
@dataclass
class Module:
    """The code cells as one module: ``text``, and each code cell as masked (by cell number)."""

    text: str
    nonce: str
    cells: dict[int, Masked]

    @property
    def included(self) -> list[int]:
        return [n for n, m in self.cells.items() if m.text is not None]


def _nonce(cells: list[Cell]) -> str:
    texts = [c.text for c in cells]
    n = 0
    while any(f"devlint-ipython{n or ''}:" in t for t in texts):
        n += 1
    return f"devlint-ipython{n or ''}:"


def _separator(nonce: str, number: int) -> str:
    return f"# {nonce}cell {number}\n"


def build(nb: Notebook, excluded: dict[int, str] | None = None) -> Module:
    """The module of ``nb``'s code cells; ``excluded``: cells left out (number -> why)."""
    code = nb.code_cells
    nonce = _nonce(code)
    cells: dict[int, Masked] = {}
    parts: list[str] = []
    for cell in code:
        masked = mask(cell, nonce)
        if excluded and cell.number in excluded:
            masked = Masked(cell, None, why=excluded[cell.number])
        cells[cell.number] = masked
        parts.append(_separator(nonce, cell.number))
        parts.append(masked.text or "")
    return Module("".join(parts), nonce, cells)


def parsed(nb: Notebook) -> tuple[Module, dict[int, Exception]]:
    """The module of ``nb``'s code cells without the cells that do not parse, and why each does not."""
    module = build(nb)
    errors: dict[int, Exception] = {}
    for number, masked in module.cells.items():
        error = syntax_error(masked.text) if masked.text is not None else None
        if error is not None:
            errors[number] = error
    if errors:
        module = build(nb, dict.fromkeys(errors, "does not parse"))
    return module, errors


def row_map(module: Module, text: str) -> list[tuple[int, int]]:
    """(cell, row in the cell) for each row of ``text`` (the module or a fixed version of it), 1-based; a
    separator row counts as the row after the end of the cell before it."""
    out: list[tuple[int, int]] = []
    cell, row = 0, 0
    prefix = f"# {module.nonce}cell "
    for line in _lines(text):
        number = _separator_number(line, prefix)
        if number is not None:
            out.append((cell or number, row + 1 if cell else 1))
            cell, row = number, 0
            continue
        row += 1
        out.append((cell, row))
    return out


def _separator_number(line: str, prefix: str) -> int | None:
    if not line.startswith(prefix):
        return None
    rest = line[len(prefix):].rstrip("\r\n")
    return int(rest) if rest.isdigit() else None


def split(module: Module, text: str) -> dict[int, str] | None:
    """The code of each included cell in ``text`` (a fixed version of the module), masked lines restored;
    None when the separators or the masked lines are not as built (a fix crossed them)."""
    prefix = f"# {module.nonce}cell "
    parts: dict[int, list[str]] = {}
    order: list[int] = []
    current: list[str] | None = None
    for line in _lines(text):
        number = _separator_number(line, prefix)
        if number is not None:
            order.append(number)
            current = parts.setdefault(number, [])
        elif current is None:
            return None
        else:
            current.append(line)
    if order != list(module.cells):
        return None
    out: dict[int, str] = {}
    for number, masked in module.cells.items():
        code = "".join(parts[number])
        if masked.text is None:
            if code:
                return None
            continue
        restored = unmask(masked, code)
        if restored is None:
            return None
        out[number] = restored
    return out


# --- findings in cells ------------------------------------------------------------------------------------
def _place(rows: list[tuple[int, int]], pos: Position) -> tuple[int, Position]:
    if not rows:
        return 0, pos
    if pos.row < 1:
        return rows[0][0], pos
    if pos.row > len(rows):
        cell = rows[-1][0]
        last = max(r for c, r in rows if c == cell)
        return cell, Position(last + 1, 1)
    cell, row = rows[pos.row - 1]
    return cell, Position(row, pos.column)


def _place_fix(rows: list[tuple[int, int]], fix: Fix | None) -> Fix | None:
    if fix is None:
        return None
    edits = tuple(dataclasses.replace(e, start=_place(rows, e.start)[1], end=_place(rows, e.end)[1])
                  for e in fix.edits)
    return dataclasses.replace(fix, edits=edits)


def in_cells(module: Module, text: str, findings: list[Finding]) -> list[Finding]:
    """``findings`` on the module ``text`` with their rows in their cells (``cell`` set); a fix's edits keep
    their (row, column) in the cell they fall in."""
    rows = row_map(module, text)
    out = []
    for f in findings:
        cell, start = _place(rows, f.start)
        end_cell, end = _place(rows, f.end)
        if end_cell != cell:
            end = start
        out.append(dataclasses.replace(f, start=start, end=end, cell=cell or None, fix=_place_fix(rows, f.fix),
                                       message=_ON_LINE.sub(functools.partial(_on_line, rows, cell), f.message)))
    return out


_ON_LINE = re.compile(r"\bon line (\d+)\b")


def _on_line(rows: list[tuple[int, int]], cell: int, match: re.Match[str]) -> str:
    """A message's "on line N" (a row of the module, as DEV004 names where CUDA started) in cell terms."""
    row = int(match.group(1))
    if not 1 <= row <= len(rows):
        return match.group()
    other, line = rows[row - 1]
    return f"on line {line}" if other == cell else f"in cell {other}, line {line}"


def cell_diff(path: str, old: str, new: str, number: int) -> str:
    """A unified diff of one cell's code, headed ``path:cell N``."""
    import difflib

    def lines(text: str) -> list[str]:
        out = _lines(text)
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += "\n"
        return out

    name = f"{path}:cell {number}"
    return "".join(difflib.unified_diff(lines(old), lines(new), fromfile=name, tofile=name))


# --- where a cell's line is in the file --------------------------------------------------------------------
def file_rows(nb: Notebook) -> dict[tuple[int, int], int]:
    """(cell, row in the cell) -> the line of the notebook file that holds that row's code, for every code
    row (a list source's item, or the line where a string source starts)."""
    out: dict[tuple[int, int], int] = {}
    for cell in nb.code_cells:
        start = cell.span[0]
        line = nb.text.count("\n", 0, start) + 1
        if cell.items is None:
            for row in range(1, cell.text.count("\n") + 2):
                out[(cell.number, row)] = line
            continue
        _item_rows(nb.text, cell, line, out)
    return out


def _item_rows(text: str, cell: Cell, line: int, out: dict[tuple[int, int], int]) -> None:
    """The file line of each row of a list source: the line of the item where the row starts."""
    pos, row = cell.span[0], 1
    for item, value in zip(cell.items or [], _strings(cell.source), strict=True):
        at = text.index(item, pos)
        line += text.count("\n", pos, at)
        pos = at
        breaks = len(re.findall(r"\r\n|\r|\n", value))
        last = row + breaks - (1 if value.endswith(("\n", "\r")) else 0)
        for r in range(row, last + 1):
            out.setdefault((cell.number, r), line)
        row += breaks


def to_script(nb: Notebook) -> str:
    """The code cells in order as a script, magics dropped (``pass``), cells that are not Python left out,
    and IPython's ``display`` defined where it is missing: what ``devlint verify --run`` runs."""
    module, _ = parsed(nb)
    prelude = ("import builtins as _devlint_builtins\n"
               "if not hasattr(_devlint_builtins, 'display'):\n"
               "    _devlint_builtins.display = lambda *objs, **kwargs: print(*objs)\n")
    originals = {k: v for m in module.cells.values() for k, v in m.originals.items()}
    return prelude + "".join(_script_line(line, originals) for line in _lines(module.text))


def _script_line(line: str, originals: dict[str, str]) -> str:
    """A masked line in the script: ``pass``, or for ``x = !ls`` / ``x = %sx ls`` an empty list bound to
    ``x`` (the shell does not run, but later cells may read ``x``)."""
    match = _MARKER.fullmatch(line.rstrip("\r\n"))
    original = originals.get(match.group(1), "") if match else ""
    assign = _MAGIC_ASSIGN.match(original.strip())
    if assign is None:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    targets = assign.group().rstrip("!%").rstrip().rstrip("=").rstrip()
    values = ", ".join("[]" for _ in targets.split(","))
    return f"{indent}{targets} = {values}\n"
