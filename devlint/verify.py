"""`devlint verify`: prove findings by running them.

For each finding, the rule's probe (a tiny program rebuilt from the finding's evidence) runs in a fresh
interpreter on every target this machine has, and again as the rule's fix would leave it. Nothing of the
user's code is imported into devlint's process; probes and scripts run in subprocesses with a timeout and a
scratch working directory.

Targets: ``cpu`` (this machine, evidence on the CPU), ``cuda`` / ``mps`` (evidence placed on that
accelerator, when present) and ``no-gpu`` (CUDA hidden with CUDA_VISIBLE_DEVICES="", what a laptop or a CI
runner sees).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from devlint import notebook
from devlint.diagnostics import Finding, Position, StrEnum
from devlint.probes import Needs, Probe, evidence_examples, probe_for
from devlint.rules import all_rules


class Verdict(StrEnum):
    """What running a finding's probe on a target showed."""

    CONFIRMED = "confirmed"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"
    CLEAN = "clean"  # the fixed probe ran without error
    FAILED = "failed"  # the fixed probe raised


CONFIRMED, NOT_REPRODUCED, INCONCLUSIVE = Verdict.CONFIRMED, Verdict.NOT_REPRODUCED, Verdict.INCONCLUSIVE
MARK = "DEVLINT-RESULT "

# The harness every probe runs in: each probe's body in its own function, its outcome one JSON line.
_HARNESS = '''
import json, signal, sys, traceback, warnings
warnings.simplefilter("ignore")
def _out(key, status, detail="", result=None):
    data = {"key": key, "status": status, "detail": detail, "result": result}
    print("DEVLINT-RESULT " + json.dumps(data), flush=True)
def _alarm(signum, frame):
    raise TimeoutError("probe timed out")
signal.signal(signal.SIGALRM, _alarm)
try:
    import torch
except Exception as exc:
    _out(None, "error", f"cannot import torch: {exc}")
    sys.exit(0)
ACCEL = ACCEL_VALUE
TIMEOUT = TIMEOUT_VALUE
PROBES = []
PROBE_DEFS
for _key, _fn in PROBES:
    signal.alarm(TIMEOUT)
    try:
        _result = _fn()
        _out(_key, "ok", result=_result)
    except TimeoutError:
        _out(_key, "timeout", f"timed out after {TIMEOUT} s")
    except BaseException as exc:
        _out(_key, "raised", (type(exc).__name__ + ": " + str(exc)).strip().splitlines()[0][:500])
    finally:
        signal.alarm(0)
'''


class ProbeResult(TypedDict):
    """What one probe reported: ``status`` "ok" (``result``: its RESULT), "raised", "timeout" or "died"
    (``detail``: the error, or why it did not finish)."""

    status: str
    detail: str
    result: Any  # a JSON value


@dataclass(frozen=True)
class Target:
    name: str
    accel: str | None  # where GPU evidence is placed
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class Outcome:
    verdict: Verdict
    detail: str = ""


@dataclass
class Verified:
    finding: Finding
    note: str = ""
    has_fix: bool = False
    before: dict[str, Outcome] = field(default_factory=dict)  # target -> outcome of the flagged code
    after: dict[str, Outcome] = field(default_factory=dict)  # target -> outcome of the fixed code


class VerifyError(Exception):
    """devlint verify cannot run here (exit 2)."""


def torch_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def detect_targets(timeout: int = 120) -> list[Target]:
    """The targets this machine has, asked of a fresh interpreter (devlint's own process never imports torch)."""
    code = ("import json, torch; print(json.dumps({'cuda': torch.cuda.is_available(), "
            "'mps': bool(getattr(torch.backends, 'mps', None) and torch.backends.mps.is_available())}))")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        raise VerifyError(f"cannot start torch to find the devices: {exc}") from None
    targets = [Target("cpu", None)]
    if info.get("cuda"):
        targets.append(Target("cuda", "cuda"))
    if info.get("mps"):
        targets.append(Target("mps", "mps"))
    targets.append(Target("no-gpu", None, (("CUDA_VISIBLE_DEVICES", ""),)))
    return targets


def _program(probes: list[tuple[str, str]], accel: str | None, timeout: int) -> str:
    defs = []
    for i, (key, body) in enumerate(probes):
        defs.append(f"def _p{i}():\n    RESULT = None\n{textwrap.indent(body, '    ')}\n    return RESULT\n"
                    f"PROBES.append(({key!r}, _p{i}))")
    return (_HARNESS.replace("ACCEL_VALUE", repr(accel)).replace("TIMEOUT_VALUE", str(int(timeout)))
            .replace("PROBE_DEFS", "\n".join(defs)))


def run_probes(probes: list[tuple[str, str]], target: Target, timeout: int) -> dict[str, ProbeResult]:
    """Run (key, body) probes in one fresh interpreter on ``target``; key -> {"status", "detail", "result"}.
    A probe that hangs is stopped after ``timeout`` seconds; a process that dies loses only what it had not
    reported."""
    if not probes:
        return {}
    env = {**os.environ, **dict(target.env), "PYTHONDONTWRITEBYTECODE": "1"}
    results: dict[str, ProbeResult] = {}
    with tempfile.TemporaryDirectory(prefix="devlint-probe-") as scratch:
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _program(probes, target.accel, timeout)], cwd=scratch, env=env,
                capture_output=True, text=True, timeout=timeout * len(probes) + 60,
            )
            out, err = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = "the probe process timed out"
        for line in out.splitlines():
            if line.startswith(MARK):
                data = json.loads(line[len(MARK):])
                if data["key"] is None:
                    raise VerifyError(data["detail"])
                results[data["key"]] = data
    for key, _ in probes:
        if key not in results:
            tail = (err or "").strip().splitlines()[-1:] or ["no output"]
            status = "timeout" if "timed out" in tail[0] else "died"
            results[key] = {"status": status, "detail": tail[0], "result": None}
    return results


def _judge_before(probe: Probe, target: Target, raw: ProbeResult) -> Outcome:
    status, detail = raw["status"], raw["detail"]
    if status in ("timeout", "died"):
        return Outcome(INCONCLUSIVE, detail)
    if probe.judge is not None and status == "ok":
        verdict, why = probe.judge(raw["result"])
        return Outcome(Verdict(verdict), why)
    if status == "raised":
        if re.search(probe.expect, detail):
            return Outcome(CONFIRMED, detail)
        return Outcome(INCONCLUSIVE, f"unexpected error: {detail}")
    return Outcome(NOT_REPRODUCED, "ran without error")


def _judge_after(raw: ProbeResult) -> Outcome:
    if raw["status"] == "ok":
        return Outcome(Verdict.CLEAN)
    return Outcome(Verdict.FAILED, raw["detail"])


def _absent(probe: Probe, target: Target) -> str | None:
    """Why ``target`` cannot show this probe's bug, or None."""
    if probe.needs is Needs.CUDA and target.name != "cuda":
        return "needs a CUDA GPU: without one the effect cannot be observed"
    if probe.needs is Needs.ACCELERATOR and target.accel is None:
        return "needs a GPU to put the tensor on"
    return None


def verify_findings(findings: list[Finding], targets: list[Target], timeout: int) -> list[Verified]:
    verified, probes, keys = _prepare(findings)
    # run: shared probes batched per target, isolated ones alone; identical probes once
    outcomes: dict[tuple[str, str, str], Outcome] = {}
    for target in targets:
        outcomes.update(_run_on(probes, target, timeout))
    for v, key in zip(verified, keys, strict=True):
        if key is None:
            continue
        for target in targets:
            v.before[target.name] = outcomes[(key, target.name, "b")]
            if (key, target.name, "a") in outcomes:
                v.after[target.name] = outcomes[(key, target.name, "a")]
    return verified


def _prepare(findings: list[Finding]) -> tuple[list[Verified], dict[str, Probe], list[str | None]]:
    """A :class:`Verified` per finding, the probes to run by key (a finding's code and evidence: identical
    probes share one), and each finding's key (None: no probe)."""
    verified: list[Verified] = []
    probes: dict[str, Probe] = {}
    keys: list[str | None] = []
    for f in findings:
        probe = probe_for(f)
        if probe is None or f.evidence is None:
            keys.append(None)
            verified.append(Verified(f, "no probe for this finding"))
            continue
        key = json.dumps([f.code, f.evidence.to_json()], sort_keys=True)
        probes[key] = probe
        keys.append(key)
        verified.append(Verified(f, probe.note, has_fix=probe.after is not None))
    return verified, probes, keys


def _batches(probes: dict[str, Probe], target: Target) -> list[list[tuple[str, str]]]:
    """The probes ``target`` can show, as runs of (key, body): "b|KEY" for the flagged code, "a|KEY" for the
    fixed; the shared ones in two batches, each isolated one alone."""
    runnable = {k: p for k, p in probes.items() if _absent(p, target) is None}
    batches: list[list[tuple[str, str]]] = []
    shared_before = [(f"b|{k}", p.before) for k, p in runnable.items() if not p.isolated]
    shared_after = [(f"a|{k}", p.after) for k, p in runnable.items() if not p.isolated and p.after]
    batches += [shared_before, shared_after]
    for k, p in runnable.items():
        if p.isolated:
            batches.append([(f"b|{k}", p.before)])
            if p.after:
                batches.append([(f"a|{k}", p.after)])
    return batches


def _run_on(probes: dict[str, Probe], target: Target, timeout: int) -> dict[tuple[str, str, str], Outcome]:
    """Run ``probes`` on ``target``: (key, target, "b" before / "a" after the fix) -> outcome."""
    raw: dict[str, ProbeResult] = {}
    for batch in _batches(probes, target):
        raw.update(run_probes(batch, target, timeout))
    outcomes: dict[tuple[str, str, str], Outcome] = {}
    for k, p in probes.items():
        why = _absent(p, target)
        if why is not None:
            outcomes[(k, target.name, "b")] = Outcome(INCONCLUSIVE, why)
            continue
        outcomes[(k, target.name, "b")] = _judge_before(p, target, raw[f"b|{k}"])
        if p.after:
            outcomes[(k, target.name, "a")] = _judge_after(raw[f"a|{k}"])
    return outcomes


# One row of `devlint verify --rules`: (code, evidence, probe note, outcome per target, outcome of the fix
# per target)
MatrixRow = tuple[str, dict[str, Any], str, dict[str, Outcome], dict[str, Outcome]]


def rule_matrix(targets: list[Target], timeout: int, codes: set[str] | None = None) -> list[MatrixRow]:
    """Every (selected) rule's own evidence probes on every target: (code, evidence, note, before, after)."""
    findings = []
    nowhere = Position(0, 0)
    for code in all_rules():
        if codes is not None and code not in codes:
            continue
        for evidence in evidence_examples(code):
            findings.append(Finding(code, "", nowhere, nowhere, evidence=evidence))
    return [(v.finding.code, v.finding.evidence.to_json() if v.finding.evidence else {}, v.note, v.before, v.after)
            for v in verify_findings(findings, targets, timeout)]


# --- whole scripts -----------------------------------------------------------------------------
@dataclass
class RunOutcome:
    target: str
    returncode: int | None
    error: str  # the last line of stderr when it failed, "timed out after N s", or ""

    @property
    def clean(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        if self.returncode is None:
            return f"did not finish ({self.error})"
        if self.returncode == 0:
            return "ran clean (exit 0)"
        return f"crashed (exit {self.returncode}: {self.error})"


def run_script(path: str, target: Target, timeout: int) -> RunOutcome:
    env = {**os.environ, **dict(target.env), "PYTHONDONTWRITEBYTECODE": "1"}
    cwd = os.path.dirname(os.path.abspath(path))
    try:
        proc = subprocess.run([sys.executable, os.path.basename(path)], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return RunOutcome(target.name, None, f"timed out after {timeout} s")
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    return RunOutcome(target.name, proc.returncode, lines[-1].strip() if lines and proc.returncode else "")


def verify_script(path: str, targets: list[Target], timeout: int,
                  fix: Callable[[str], int]) -> list[tuple[RunOutcome, RunOutcome, int]]:
    """Run a copy of the script before and after ``fix(copy_path) -> fixes applied`` on each target. A
    notebook (.ipynb) runs as the script of its code cells in order (:func:`notebook_script`)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="devlint-run-") as scratch:
        copy = os.path.join(scratch, os.path.basename(path))
        shutil.copy(path, copy)
        script = notebook_script(copy) if notebook.is_notebook(copy) else copy
        befores = [run_script(script, t, timeout) for t in targets]
        fixed = fix(copy)
        if script != copy:
            notebook_script(copy)
        for target, before in zip(targets, befores, strict=True):
            out.append((before, run_script(script, target, timeout), fixed))
    return out


def notebook_script(path: str) -> str:
    """Write the notebook at ``path`` as a script beside it (``NAME.ipynb.py``: the code cells in order,
    IPython's magics and shell lines dropped, see devlint.notebook.to_script); its path."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = notebook.to_script(notebook.parse(data))
    except notebook.NotebookError as exc:
        raise VerifyError(f"--run: {os.path.basename(path)}: {exc}") from None
    script = path + ".py"
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(text)
    return script
