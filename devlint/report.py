"""Output formats: text (ruff's ``path:line:col: CODE message``), JSON (ruff's fields), SARIF 2.1.0, GitHub."""

from __future__ import annotations

import json
import os
from collections import Counter

from devlint import __version__, notebook
from devlint.diagnostics import Finding, Position
from devlint.rules import all_rules

FORMATS = ("text", "json", "sarif", "github")


def _loc(pos: Position) -> dict[str, int]:
    return {"column": pos.column, "row": pos.row}


def location(f: Finding) -> str:
    """``path:row:col``, in a notebook ``path:cell N:row:col`` (the row in the cell)."""
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.path}:{cell}{f.start.row}:{f.start.column}"


def text(findings: list[Finding]) -> str:
    return "".join(f"{location(f)}: {f.code} {f.message}\n" for f in findings)


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
                with open(f.path, "rb") as fh:
                    self.rows[f.path] = notebook.file_rows(notebook.parse(fh.read()))
            except (OSError, notebook.NotebookError):
                self.rows[f.path] = {}
        return self.rows[f.path].get((f.cell, pos.row), 1)


def _region(f: Finding, file_row: _FileRows) -> dict[str, int]:
    if f.cell is None:
        return {"startLine": f.start.row, "startColumn": f.start.column,
                "endLine": f.end.row, "endColumn": f.end.column}
    return {"startLine": file_row(f, f.start), "endLine": file_row(f, f.end)}  # (columns: of the JSON, unknown)


def to_json(findings: list[Finding]) -> str:
    items = []
    for f in findings:
        fix: dict[str, object] | None = None
        if f.fix is not None:
            fix = {
                "applicability": f.fix.applicability.value,
                "edits": [
                    {"content": e.content, "end_location": _loc(e.end), "location": _loc(e.start)}
                    for e in f.fix.edits
                ],
                "message": f.fix.message or None,
            }
        items.append({
            "cell": f.cell,
            "code": f.code,
            "end_location": _loc(f.end),
            "filename": os.path.abspath(f.path),
            "fix": fix,
            "location": _loc(f.start),
            "message": f.message,
            "noqa_row": f.start.row,
            "url": None,
        })
    return json.dumps(items, indent=2) + "\n"


def _uri(path: str) -> str:
    rel = os.path.relpath(path) if not os.path.isabs(path) else path
    return rel.replace(os.sep, "/")


def sarif(findings: list[Finding]) -> str:
    rules = all_rules()
    rule_list = [
        {
            "id": code,
            "name": cls.name,
            "shortDescription": {"text": cls.summary},
            "fullDescription": {"text": cls.page()},
            "help": {"text": cls.summary, "markdown": cls.page()},
            "properties": {"fixAvailability": cls.fix_availability.value},
        }
        for code, cls in rules.items()
    ]
    index = {code: i for i, code in enumerate(rules)}
    results = []
    file_row = _FileRows()
    for f in findings:
        result: dict[str, object] = {
            "ruleId": f.code,
            "level": "error",
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path)},
                    "region": _region(f, file_row),
                }
            }],
        }
        if f.cell is not None:
            result["properties"] = {"cell": f.cell, "cellLocation": _loc(f.start), "cellEndLocation": _loc(f.end)}
            result["message"] = {"text": f"cell {f.cell}:{f.start.row}:{f.start.column}: {f.message}"}
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "devlint",
                "version": __version__,
                "rules": rule_list,
            }},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2) + "\n"


def _gh_escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(findings: list[Finding]) -> str:
    lines = []
    file_row = _FileRows()
    for f in findings:
        if f.cell is None:
            where = f"line={f.start.row},col={f.start.column},endLine={f.end.row},endColumn={f.end.column}"
            text = f"{f.code} {f.message}"
        else:  # the lines of the notebook file holding the code; the cell's own position in the message
            where = f"line={file_row(f, f.start)},endLine={file_row(f, f.end)}"
            text = f"cell {f.cell}:{f.start.row}:{f.start.column}: {f.code} {f.message}"
        props = f"file={_gh_escape(f.path, True)},{where},title={_gh_escape(f.code, True)}"
        lines.append(f"::error {props}::{_gh_escape(text)}\n")
    return "".join(lines)


def render(fmt: str, findings: list[Finding]) -> str:
    return {"text": text, "json": to_json, "sarif": sarif, "github": github}[fmt](findings)


def statistics(findings: list[Finding], unsafe: bool) -> str:
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = Counter(
        f.code for f in findings
        if f.fix is not None and (f.fix.applicability.value == "safe" or unsafe)
    )
    width = max((len(str(c)) for c in counts.values()), default=1)
    out = []
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        marker = "[*]" if fixable[code] else "[ ]"
        out.append(f"{count:>{width}}\t{code}\t{marker} {names[code]}\n")
    return "".join(out)
