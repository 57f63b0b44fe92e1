"""Text and JSON output of `devlint verify`."""

from __future__ import annotations

import json

from devlint.report import location
from devlint.verify import (
    CONFIRMED,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    MatrixRow,
    Outcome,
    RunOutcome,
    Target,
    Verified,
)


def _outcome(o: Outcome | None) -> dict[str, str] | None:
    return None if o is None else {"verdict": o.verdict, "detail": o.detail}


def _fix_cell(v: Verified) -> str:
    if not v.after:
        return "not run" if v.has_fix else "no fix"
    states = {o.verdict for o in v.after.values()}
    return "clean" if states == {"clean"} else "FAILED"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in rows)


def render_verified(verified: list[Verified], targets: list[Target], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([{
            "code": v.finding.code,
            "filename": v.finding.path,
            "cell": v.finding.cell,
            "location": {"row": v.finding.start.row, "column": v.finding.start.column},
            "message": v.finding.message,
            "probe": v.note,
            "targets": {t.name: _outcome(v.before.get(t.name)) for t in targets},
            "fixed": {t.name: _outcome(v.after.get(t.name)) for t in targets} if v.has_fix else None,
        } for v in verified], indent=2) + "\n"
    if not verified:
        return "No findings to verify.\n"
    rows = [["finding", "code", *[t.name for t in targets], "after fix"]]
    details: list[str] = []
    for v in verified:
        f = v.finding
        rows.append([location(f), f.code,
                     *[v.before[t.name].verdict if t.name in v.before else "-" for t in targets], _fix_cell(v)])
    out = _table(rows)
    seen: set[tuple[str, str, str]] = set()  # (code, verdict or "fix", detail) already told
    for v in verified:
        for t in targets:
            o = v.before.get(t.name)
            if o is not None and o.detail and (v.finding.code, o.verdict, o.detail) not in seen:
                seen.add((v.finding.code, o.verdict, o.detail))
                details.append(f"  {v.finding.code} {o.verdict} on {t.name}: {o.detail}")
        for name, o in v.after.items():
            if o.verdict != "clean" and (v.finding.code, "fix", o.detail) not in seen:
                seen.add((v.finding.code, "fix", o.detail))
                details.append(f"  {v.finding.code} fixed probe failed on {name}: {o.detail}")
    counts = {k: sum(1 for v in verified if any(o.verdict == k for o in v.before.values()))
              for k in (CONFIRMED, NOT_REPRODUCED, INCONCLUSIVE)}
    summary = (f"{len(verified)} findings: {counts[CONFIRMED]} confirmed on at least one target, "
               f"{counts[NOT_REPRODUCED]} not reproduced on some target, "
               f"{counts[INCONCLUSIVE]} inconclusive on some target.\n")
    return out + ("\n" + "\n".join(details) + "\n" if details else "") + "\n" + summary


def render_matrix(matrix: list[MatrixRow], targets: list[Target], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([{
            "code": code, "evidence": evidence, "probe": note,
            "targets": {t.name: _outcome(before.get(t.name)) for t in targets},
            "fixed": {t.name: _outcome(after.get(t.name)) for t in targets} if after else None,
        } for code, evidence, note, before, after in matrix], indent=2) + "\n"
    rows = [["rule", "probe", *[t.name for t in targets], "after fix"]]
    details = []
    for code, evidence, _note, before, after in matrix:
        label = ", ".join(f"{k}={v!r}" for k, v in evidence.items())
        fixed = "no fix" if not after else ("clean" if {o.verdict for o in after.values()} == {"clean"} else "FAILED")
        rows.append([code, label, *[before[t.name].verdict for t in targets], fixed])
        for t in targets:
            if before[t.name].detail:
                details.append(f"  {code} [{label}] on {t.name}: {before[t.name].detail}")
    return _table(rows) + "\n" + "\n".join(details) + "\n"


def render_runs(script: str, runs: list[tuple[RunOutcome, RunOutcome, int]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([{
            "script": script, "target": before.target, "fixes_applied": fixed,
            "before": {"returncode": before.returncode, "error": before.error},
            "after": {"returncode": after.returncode, "error": after.error},
        } for before, after, fixed in runs], indent=2) + "\n"
    lines = []
    for before, after, fixed in runs:
        change = "crash -> clean run" if not before.clean and after.clean else (
            "still fails" if not after.clean else "clean before and after")
        lines.append(f"{script} on {before.target}: before: {before.describe()}; after {fixed} fixes: "
                     f"{after.describe()} [{change}]")
    return "\n".join(lines) + "\n"
