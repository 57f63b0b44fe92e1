"""Output formats: text (ruff's ``path:line:col: CODE message``), JSON (ruff's fields), SARIF 2.1.0, GitHub."""

from __future__ import annotations

import json
import os
from collections import Counter

from devlint import __version__
from devlint.diagnostics import Finding, Position
from devlint.rules import all_rules

FORMATS = ("text", "json", "sarif", "github")


def _loc(pos: Position) -> dict[str, int]:
    return {"column": pos.column, "row": pos.row}


def text(findings: list[Finding]) -> str:
    return "".join(f"{f.path}:{f.start.row}:{f.start.column}: {f.code} {f.message}\n" for f in findings)


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
            "cell": None,
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
    for f in findings:
        result: dict[str, object] = {
            "ruleId": f.code,
            "level": "error",
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path)},
                    "region": {
                        "startLine": f.start.row, "startColumn": f.start.column,
                        "endLine": f.end.row, "endColumn": f.end.column,
                    },
                }
            }],
        }
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
    for f in findings:
        props = (
            f"file={_gh_escape(f.path, True)},line={f.start.row},col={f.start.column},"
            f"endLine={f.end.row},endColumn={f.end.column},title={_gh_escape(f.code, True)}"
        )
        lines.append(f"::error {props}::{_gh_escape(f'{f.code} {f.message}')}\n")
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
