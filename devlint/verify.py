"""`devlint verify`: prove findings by running them.

For each finding, the rule's probe (a tiny program rebuilt from the finding's evidence: facts such as a
device string, a device index or the name of a torch API, never the flagged source text) runs in a fresh
interpreter on every target this machine has, and again as the rule's fix would leave it. Nothing of the
user's code is imported into devlint's process, and probes never run the user's expressions (only
``--run`` executes the user's script, in a copy of its project). Probes and scripts run in subprocesses of
their own session (process group) with a timeout, killed as a group when it passes, in a scratch working
directory: a ``torch.py`` or ``torch/`` of the linted project cannot shadow the installed torch (the scratch
directory is empty and PYTHONPATH entries inside the working directory are dropped), and a torch found
inside the working directory (outside any site-packages) is an error.

Targets, named by what the probe ran with:

- ``cpu``: the CPU device selected: torch's default device set to ``"cpu"``, GPU evidence left on the CPU
  and every CUDA/ROCm GPU hidden (``CUDA_VISIBLE_DEVICES=""``, ``HIP_VISIBLE_DEVICES=""``), so that nothing
  in the probe can reach a GPU even on a machine that has one (MPS cannot be hidden from the environment: on
  a Mac the ``cpu`` probe's evidence stays on the CPU, but a hard-coded ``"mps"`` would still run);
- ``cuda`` / ``mps`` (when present): GPU evidence placed on that accelerator, the GPUs visible;
- ``no-gpu``: CUDA hidden with ``CUDA_VISIBLE_DEVICES=""`` and torch's defaults otherwise: what the program
  sees on a laptop or a CI runner without a GPU (on torch 2.13 its verdicts agree with ``cpu``'s; it is kept
  as the machine-level view, the column scripts and ``--run`` are usually read by).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from devlint import notebook
from devlint.diagnostics import Finding, Position, StrEnum
from devlint.probes import Needs, Probe, evidence_examples, probe_for
from devlint.progress import Progress
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
START = "DEVLINT-START "
GRACE_S = 2  # after a probe's own SIGALRM timeout, how long before its process group is killed
STARTUP_S = 60  # on top of the timeout: how long `import torch` may take before the first probe starts

# The harness every probe runs in: each probe's body in its own function, its outcome one JSON line (and a
# START line before it, which the parent times the probe from: a probe that ignores SIGALRM is killed).
_HARNESS = """
import json, os, signal, sys, traceback, warnings
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
_where = os.path.realpath(torch.__file__)
_installed = {"site-packages", "dist-packages"} & set(_where.split(os.sep))
for _root in PROJECT_ROOTS:
    if _where.startswith(os.path.join(_root, "")) and not _installed:
        _out(None, "error", f"torch would be imported from {_where}, inside the project: not the installed torch")
        sys.exit(0)
ACCEL = ACCEL_VALUE
if DEFAULT_DEVICE_VALUE is not None:
    torch.set_default_device(DEFAULT_DEVICE_VALUE)
TIMEOUT = TIMEOUT_VALUE
PROBES = []
PROBE_DEFS
for _key, _fn in PROBES:
    print("DEVLINT-START " + json.dumps(_key), flush=True)
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
"""


class ProbeResult(TypedDict):
    """What one probe reported: ``status`` "ok" (``result``: its RESULT), "raised", "timeout" or "died"
    (``detail``: the error, or why it did not finish)."""

    status: str
    detail: str
    result: Any  # a JSON value


# the environment variables that hide every CUDA (and ROCm) GPU from torch
HIDE_GPUS = (("CUDA_VISIBLE_DEVICES", ""), ("HIP_VISIBLE_DEVICES", ""))


@dataclass(frozen=True)
class Target:
    """Where a probe runs: ``accel``, the accelerator GPU evidence is placed on (None: it stays on the CPU);
    ``env``, settings of the probe's environment; ``default_device``, torch's default device in the probe
    (``torch.set_default_device``; None: torch's own)."""

    name: str
    accel: str | None  # where GPU evidence is placed
    env: tuple[tuple[str, str], ...] = ()
    default_device: str | None = None


CPU = Target("cpu", None, HIDE_GPUS, "cpu")
NO_GPU = Target("no-gpu", None, (("CUDA_VISIBLE_DEVICES", ""),))


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


def _project_roots() -> list[str]:
    """Directories a probe must not import torch from: the working directory devlint runs in."""
    return [os.path.realpath(os.getcwd())]


def _inside(path: str, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(os.path.join(root, "")) for root in roots)


def child_env(target: Target) -> dict[str, str]:
    """The environment of a probe (or of the device question) on ``target``: the target's settings, no
    bytecode written, and PYTHONPATH without relative entries or entries inside the project (a ``torch.py``
    there must not shadow the installed torch)."""
    env = {**os.environ, **dict(target.env), "PYTHONDONTWRITEBYTECODE": "1"}
    if "PYTHONPATH" in env:
        roots = _project_roots()
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and os.path.isabs(p) and not _inside(p, roots)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    return env


_DEVICES = """
import json, os, sys
import torch
print(json.dumps({"cuda": torch.cuda.is_available(), "torch": os.path.realpath(torch.__file__),
                  "mps": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())}))
"""


def device_info(timeout: int = 120) -> dict[str, Any]:
    """What a fresh interpreter's torch finds here: {"cuda": bool, "mps": bool, "torch": torch's __init__.py},
    asked in a scratch directory (devlint's own process never imports torch)."""
    with tempfile.TemporaryDirectory(prefix="devlint-probe-") as scratch:
        try:
            proc = subprocess.run([sys.executable, "-c", _DEVICES], capture_output=True, text=True, cwd=scratch,
                                  timeout=timeout, env=child_env(Target("devices", None)),
                                  stdin=subprocess.DEVNULL, start_new_session=True)
            info: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
            tail = locals().get("proc")
            why = tail.stderr.strip().splitlines()[-1] if isinstance(tail, subprocess.CompletedProcess) and \
                tail.stderr.strip() else str(exc)
            raise VerifyError(f"cannot start torch to find the devices: {why}") from None
    where = str(info.get("torch", ""))
    if _inside(where, _project_roots()) and not {"site-packages", "dist-packages"} & set(where.split(os.sep)):
        raise VerifyError(f"torch would be imported from {where}, inside the project: install torch "
                          "(pip install 'devlint[verify]') rather than a local torch module")
    return info


def targets_for(info: dict[str, Any]) -> list[Target]:
    """The targets of a machine whose torch answered ``info`` (:func:`device_info`)."""
    targets = [CPU]
    if info.get("cuda"):
        targets.append(Target("cuda", "cuda"))
    if info.get("mps"):
        targets.append(Target("mps", "mps"))
    targets.append(NO_GPU)
    return targets


def detect_targets(timeout: int = 120) -> list[Target]:
    """The targets this machine has, asked of a fresh interpreter (devlint's own process never imports torch)."""
    return targets_for(device_info(timeout))


def program(probes: list[tuple[str, str]], target: Target, timeout: int) -> str:
    """The program that runs (key, body) ``probes`` on ``target``."""
    defs = []
    for i, (key, body) in enumerate(probes):
        defs.append(f"def _p{i}():\n    RESULT = None\n{textwrap.indent(body, '    ')}\n    return RESULT\n"
                    f"PROBES.append(({key!r}, _p{i}))")
    return (_HARNESS.replace("ACCEL_VALUE", repr(target.accel))
            .replace("DEFAULT_DEVICE_VALUE", repr(target.default_device))
            .replace("PROJECT_ROOTS", repr(_project_roots()))
            .replace("TIMEOUT_VALUE", str(int(timeout))).replace("PROBE_DEFS", "\n".join(defs)))


def kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc``'s whole process group (its session: started with ``start_new_session``), children and
    all; nothing is left behind even when the process ignores SIGALRM or SIGTERM."""
    _kill(proc)
    proc.wait()


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _reader(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def run_probes(probes: list[tuple[str, str]], target: Target, timeout: int) -> dict[str, ProbeResult]:
    """Run (key, body) probes in fresh interpreters on ``target``; key -> {"status", "detail", "result"}.
    A probe that hangs is stopped by SIGALRM after ``timeout`` seconds, or, when it ignores that, its process
    group is killed :data:`GRACE_S` later and the probes after it run in a new process. A process that dies
    loses only the probe it was running."""
    results: dict[str, ProbeResult] = {}
    remaining = list(probes)
    while remaining:
        stopped, err = _run_batch(remaining, target, timeout, results)
        if stopped is None:  # died or ended outside any probe: what is left did not run
            for key, _ in remaining:
                if key not in results:
                    tail = err.strip().splitlines()[-1:] or ["no output"]
                    results[key] = {"status": "died", "detail": tail[0], "result": None}
            break
        remaining = [(k, b) for k, b in remaining if k not in results]
    return results


def _run_batch(probes: list[tuple[str, str]], target: Target, timeout: int,
               results: dict[str, ProbeResult]) -> tuple[str | None, str]:
    """One process running ``probes`` in order, its reports added to ``results``. Returns the key of the
    probe it was stopped or died in (None: it ended, or failed before any probe) and its stderr."""
    with tempfile.TemporaryDirectory(prefix="devlint-probe-") as scratch:
        proc = subprocess.Popen(
            [sys.executable, "-c", program(probes, target, timeout)], cwd=scratch, env=child_env(target),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        watch = _Watch(proc, timeout, results)
        try:
            killed = watch.run()
        finally:
            kill_group(proc)
        err = "".join(watch.errors)
        if killed:
            return watch.current, err
        if watch.current is not None:  # the process died inside this probe
            tail = err.strip().splitlines()[-1:] or [f"the probe process died (exit {proc.returncode})"]
            results[watch.current] = {"status": "died", "detail": tail[0], "result": None}
        return watch.current, err


class _Watch:
    """Reads a probe process's reports as they come and times each probe from its START line."""

    def __init__(self, proc: subprocess.Popen[str], timeout: int, results: dict[str, ProbeResult]) -> None:
        self.proc, self.timeout, self.results = proc, timeout, results
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        self.current: str | None = None  # the probe running now
        self.deadline = time.monotonic() + timeout + STARTUP_S
        self.ended: float | None = None  # when the process exited (its output may still be in the pipe)
        threading.Thread(target=_reader, args=(proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(proc.stderr or ()), daemon=True).start()

    def run(self) -> bool:
        """Read until the output ends; True when a probe overran its time and the process was killed."""
        while True:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self._waiting():
                    continue
                return self._overdue()
            if line is None:
                return False
            self._take(line)

    def _waiting(self) -> bool:
        """Whether to go on waiting for output."""
        if self.proc.poll() is not None:
            self.ended = self.ended or time.monotonic()
            _kill(self.proc)  # a child it left holding the pipe open
            return time.monotonic() - self.ended < 5
        return time.monotonic() < self.deadline

    def _overdue(self) -> bool:
        _kill(self.proc)
        if self.current is None or self.ended is not None:
            if self.ended is None:
                self.errors.append(f"the probe process did not start within {self.timeout + STARTUP_S} s\n")
            return False
        self.results[self.current] = {"status": "timeout", "result": None,
                                      "detail": f"timed out after {self.timeout} s (its process was killed)"}
        return True

    def _take(self, line: str) -> None:
        if line.startswith(START):
            self.current = json.loads(line[len(START):])
        elif line.startswith(MARK):
            data = json.loads(line[len(MARK):])
            if data["key"] is None:
                raise VerifyError(data["detail"])
            self.results[data["key"]] = data
            self.current = None
        else:
            return
        self.deadline = time.monotonic() + self.timeout + GRACE_S


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


def verify_findings(findings: list[Finding], targets: list[Target], timeout: int,
                    progress: bool | None = None) -> list[Verified]:
    """Each finding's probe, and its fixed probe, on each target. ``progress``: show the probes run per
    target on the terminal (None: when stderr and stdout are terminals, see devlint.progress; False for
    machine output)."""
    verified, probes, keys = _prepare(findings)
    # run: shared probes batched per target, isolated ones alone; identical probes once
    outcomes: dict[tuple[str, str, str], Outcome] = {}
    for target in targets:
        outcomes.update(_run_on(probes, target, timeout, progress))
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


def _run_on(probes: dict[str, Probe], target: Target, timeout: int,
            progress: bool | None = None) -> dict[tuple[str, str, str], Outcome]:
    """Run ``probes`` on ``target``: (key, target, "b" before / "a" after the fix) -> outcome."""
    raw: dict[str, ProbeResult] = {}
    batches = [b for b in _batches(probes, target) if b]
    with Progress(f"devlint verify: probes on {target.name}", sum(map(len, batches)), enabled=progress) as shown:
        for batch in batches:
            raw.update(run_probes(batch, target, timeout))
            shown.advance(len(batch))
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


def rule_matrix(targets: list[Target], timeout: int, codes: set[str] | None = None,
                progress: bool | None = None) -> list[MatrixRow]:
    """Every (selected) rule's own evidence probes on every target: (code, evidence, note, before, after)."""
    findings = []
    nowhere = Position(0, 0)
    for code in all_rules():
        if codes is not None and code not in codes:
            continue
        for evidence in evidence_examples(code):
            findings.append(Finding(code, "", nowhere, nowhere, evidence=evidence))
    return [(v.finding.code, v.finding.evidence.to_json() if v.finding.evidence else {}, v.note, v.before, v.after)
            for v in verify_findings(findings, targets, timeout, progress)]


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
    """Run ``path`` as ``python NAME`` in its directory on ``target`` (its environment settings: the ``cpu``
    and ``no-gpu`` targets hide the GPUs), in a session of its own: at the timeout the whole process group
    is killed."""
    env = {**os.environ, **dict(target.env), "PYTHONDONTWRITEBYTECODE": "1"}
    cwd = os.path.dirname(os.path.abspath(path))
    proc = subprocess.Popen([sys.executable, os.path.basename(path)], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return RunOutcome(target.name, None, f"timed out after {timeout} s")
    finally:
        _kill(proc)  # whatever it started and left running
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return RunOutcome(target.name, proc.returncode, lines[-1].strip() if lines and proc.returncode else "")


# directories never copied with a script's project (besides the default excludes: virtualenvs, caches, VCS)
_NOT_COPIED = ("__pycache__", "*.egg-info")
MAX_PROJECT_BYTES = 1 << 30  # a project larger than this (not counting what is not copied) is not copied


def project_root(path: str) -> str:
    """The directory tree ``verify --run`` copies with the script at ``path``: the configured project root
    (the directory of the nearest pyproject.toml with [tool.devlint]) when the script is inside it, else the
    script's own directory."""
    from devlint.config import find_config

    here = os.path.dirname(os.path.realpath(path))
    found = find_config([path])
    if found is not None:
        root = os.path.dirname(os.path.realpath(found))
        if here == root or here.startswith(os.path.join(root, "")):
            return root
    return here


def copy_project(path: str, scratch: str) -> str:
    """Copy the project of the script at ``path`` (:func:`project_root`) into ``scratch``, leaving out
    virtualenvs, caches and VCS directories (devlint's default excludes) and keeping symbolic links as links;
    the path of the script's copy."""
    from devlint.config import DEFAULT_EXCLUDE

    root = project_root(path)
    patterns = shutil.ignore_patterns(*DEFAULT_EXCLUDE, *_NOT_COPIED)
    scratch_real = os.path.realpath(scratch)

    def ignore(directory: str, names: list[str]) -> set[str]:  # and the scratch directory (a script in /tmp)
        skipped = set(patterns(directory, names))
        return skipped | {n for n in names if os.path.realpath(os.path.join(directory, n)) == scratch_real}

    size = 0
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ignore(directory, dirs)]
        for name in files:
            try:
                size += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
        if size > MAX_PROJECT_BYTES:
            raise VerifyError(f"--run: the project of {path} ({root}) is over {MAX_PROJECT_BYTES >> 20} MB; "
                              "run the script from a smaller directory or configure a project root")
    copy_root = os.path.join(scratch, os.path.basename(root) or "project")
    shutil.copytree(root, copy_root, symlinks=True, ignore=ignore)
    return os.path.join(copy_root, os.path.relpath(os.path.realpath(path), root))


def verify_script(path: str, targets: list[Target], timeout: int,
                  fix: Callable[[str], int]) -> list[tuple[RunOutcome, RunOutcome, int]]:
    """Run the script before and after ``fix(copy_path) -> fixes applied`` on each target, in a copy of its
    project (:func:`copy_project`: its sibling modules import as they do at home; the original is never
    written). A notebook (.ipynb) runs as the script of its code cells in order (:func:`notebook_script`)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="devlint-run-") as scratch:
        copy = copy_project(path, scratch)
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
