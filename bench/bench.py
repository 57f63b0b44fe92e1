"""devlint's speed and memory targets, measured as a user would run it: one command, every target.

    python bench/bench.py                      # every target below (downloads two wheels with pip, once)
    python bench/bench.py --only findings      # one group: findings | transformers | torch | diffusers
    python bench/bench.py --path some/tree     # any directory: cold / warm / ruff / memory / pre-filter
    python bench/bench.py --profile            # also: where the time goes (read, pre-filter, parse, index, rules)
    python bench/bench.py --check-prefilter    # also: findings identical with --no-prefilter (slow)
    python bench/bench.py --findings-out DIR   # also: each tree's findings as JSON (diff them before/after)

Targets (a 2-core machine; issue "Performance II"):

- linear in findings: 2,000 findings in one file <= 3 s lint, <= 5 s ``--fix --unsafe-fixes``; 20,000 <= 30 s;
- big trees, cold (fresh cache) / warm (nothing changed): transformers <= 3 s / <= 0.2 s, torch's own package
  (the installed torch) <= 10 s cold, diffusers <= 5 s cold;
- bounded memory: peak memory of the whole run, parent and workers summed (sampled from /proc), <= 300 MB.
  Two sums are printed: RSS, which counts a page shared by the parent and its forked workers (the
  interpreter, torch-free imports, copy-on-write data) once per process, and PSS (``Pss:`` of
  /proc/PID/smaps_rollup), which splits each shared page between the processes sharing it. PSS is the
  honest measure of the real memory a run takes, and the one held to the target; RSS is an upper bound.

Each line prints the measured value, the target, and the ratio to ``ruff check --select ALL --no-cache`` on
the same tree in the same run. Nothing is asserted: this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

CACHE = Path.home() / ".cache" / "devlint-bench" / "trees"
PACKAGES = {"transformers": "transformers==5.23.0", "diffusers": "diffusers==0.42.1"}
TARGETS = {  # tree -> (cold s, warm s or None)
    "transformers": (3.0, 0.2),
    "torch": (10.0, None),
    "diffusers": (5.0, None),
}
MEMORY_MB = 300


# --- running and measuring --------------------------------------------------------------------------
@dataclass
class Run:
    wall: float
    peak_mb: float  # the largest sum of the RSS of the process and its descendants seen while it ran
    code: int
    stdout: str = ""
    peak_pss_mb: float | None = None  # the same for PSS (None where /proc/PID/smaps_rollup cannot be read)


def _pss_kb(pid: int) -> int | None:
    """PSS (KB) of a process: its private pages plus its share of each page it shares (None: unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _tree_rss_kb(root: int) -> tuple[int, int | None]:
    """RSS and PSS (KB) of ``root`` and every process descended from it, summed, read from /proc (PSS:
    None where some process's smaps_rollup could not be read)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            with open(f"/proc/{pid}/statm", "rb") as f:
                pages = int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * (os.sysconf("SC_PAGE_SIZE") // 1024)
    total, todo = 0, [root]
    pss: int | None = 0
    while todo:
        pid = todo.pop()
        if pid in rss:
            total += rss[pid]
            share = _pss_kb(pid)
            pss = None if share is None or pss is None else pss + share
        todo.extend(children.get(pid, []))
    return total, pss


def timed(cmd: list[str], cwd: Path, capture: bool = False) -> Run:
    """Run ``cmd``; wall seconds, the peaks of its process tree's summed RSS and PSS, its exit code."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    peak = 0
    peak_pss: int | None = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, peak_pss
        while not done.is_set():
            rss, pss = _tree_rss_kb(proc.pid)
            peak = max(peak, rss)
            if pss is not None and peak_pss is not None:  # (a process gone between the reads: skip the sample)
                peak_pss = max(peak_pss, pss)
            # Every 20 ms at first (a short run's peak), backing off to 200 ms: reading smaps_rollup walks a
            # process's page tables under its memory-map lock, which stalls a worker that is allocating a
            # syntax tree (on torch, sampling every 20 ms throughout: 90.8 s against 74.1 s, the same peak);
            # a syntax tree large enough to set the peak lives for seconds.
            done.wait(min(0.2, 0.02 + (time.perf_counter() - start) / 100))

    sampler = threading.Thread(target=sample, daemon=True)
    if sys.platform.startswith("linux"):
        sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    if sampler.is_alive():
        sampler.join()
    pss_mb = peak_pss / 1024 if peak_pss else None
    return Run(wall, peak / 1024, proc.returncode, out or "", pss_mb)


def devlint_cmd(tree: Path, jobs: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "devlint", "--exit-zero", "-q", "--jobs", str(jobs), *extra, str(tree)]


def ruff_time(tree: Path, work: Path) -> float | None:
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if not ruff:
        return None
    return timed([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", str(tree)], work).wall


def verdict(value: float, target: float | None) -> str:
    if target is None:
        return ""
    return f" (target <= {target:g}: {'met' if value <= target else 'NOT met'})"


def ratio(value: float, ruff: float | None) -> str:
    return f", {value / ruff:.2f}x ruff" if ruff else ""


# --- trees ------------------------------------------------------------------------------------------
def package_tree(spec: str) -> Path:
    """A wheel from PyPI, unpacked once into the bench cache."""
    dest = CACHE / spec.replace("==", "-")
    if (dest / "src").is_dir():
        return dest / "src"
    wheels = dest / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                    "-d", str(wheels), spec], check=True)
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as zf:
        zf.extractall(dest / "src.tmp")
    (dest / "src.tmp").rename(dest / "src")
    return dest / "src"


def torch_tree() -> Path | None:
    """torch's own tree: the Python files of the installed torch package (found without importing it), copied
    once into the bench cache. Linted where it is installed, the tree sits under a virtual environment that a
    project's ``.gitignore`` (and devlint's default excludes) leave out."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    installed = Path(next(iter(spec.submodule_search_locations)))
    version = re.search(r"__version__\W*=\W*['\"]([^'\"]+)", (installed / "version.py").read_text())
    dest = CACHE / f"torch-{version.group(1) if version else 'installed'}"
    if not (dest / "src").is_dir():
        shutil.rmtree(dest / "src.tmp", ignore_errors=True)
        shutil.copytree(installed, dest / "src.tmp" / "torch",
                        ignore=lambda d, names: [n for n in names if not n.endswith(".py")
                                                 and not (Path(d) / n).is_dir()])
        (dest / "src.tmp").rename(dest / "src")
    return dest / "src"


def bench_tree(name: str, tree: Path, args: argparse.Namespace, work: Path) -> None:
    files = [p for p in tree.rglob("*.py") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    print(f"\n## {name}: {tree} ({len(files)} .py files, {size / 1e6:.1f} MB)")
    cold_target, warm_target = TARGETS.get(name, (None, None))
    colds = []
    for run in range(args.runs):  # each with a fresh cache; the last one's cache serves the warm run
        cache = work / f"{name}-cache{run}"
        capture = run == 0
        colds.append(timed(devlint_cmd(tree, args.jobs, "--cache-dir", str(cache),
                                       *(["--output-format", "json"] if capture else [])), work, capture))
    warm = timed(devlint_cmd(tree, args.jobs, "--cache-dir", str(cache)), work)
    ruff = ruff_time(tree, work)
    walls = [c.wall for c in colds]
    best = min(walls)
    print(f"devlint cold: {best:.2f} s best of {len(walls)}, median {statistics.median(walls):.2f} s"
          f"{ratio(best, ruff)}{verdict(best, cold_target)}")
    print(f"devlint warm: {warm.wall:.2f} s{ratio(warm.wall, ruff)}{verdict(warm.wall, warm_target)}")
    peak = max(c.peak_mb for c in [*colds, warm])
    psses = [c.peak_pss_mb for c in [*colds, warm] if c.peak_pss_mb is not None]
    if psses:
        pss = max(psses)
        print(f"peak PSS, parent + workers: {pss:.0f} MB{verdict(pss, MEMORY_MB)} (summed RSS {peak:.0f} MB"
              f" counts shared pages once per process)")
    else:
        print(f"peak RSS, parent + workers: {peak:.0f} MB{verdict(peak, MEMORY_MB)} (PSS not readable here)")
    print(f"ruff check --select ALL --no-cache: {ruff:.2f} s" if ruff else "ruff: not installed")
    findings = json.loads(colds[0].stdout or "[]")
    if args.findings_out:
        out = Path(args.findings_out) / f"{name}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        for f in findings:
            f["filename"] = os.path.relpath(f["filename"], tree)
        out.write_text(json.dumps(sorted(findings, key=lambda f: (f["filename"], f["location"]["row"],
                                                                   f["location"]["column"], f["code"])),
                                  indent=1), encoding="utf-8")
        print(f"findings written to {out}")
    prefilter_stats(tree, files, findings)
    if args.profile:
        profile(tree, files)
    if args.check_prefilter:
        check_prefilter(tree, args.jobs)


def prefilter_stats(tree: Path, files: list[Path], findings: list[dict[str, object]]) -> None:
    """How many files the pre-filter lets through to LibCST, and how many of those yield a finding."""
    from devlint.rules import all_rules
    from devlint.runner import applicable

    rules = [rule() for rule in all_rules().values()]
    passed = [p for p in files if applicable(p.read_bytes(), rules, path=str(p))]
    found = {os.path.realpath(str(f["filename"])) if os.path.isabs(str(f["filename"]))
             else os.path.realpath(tree / str(f["filename"])) for f in findings}
    yielding = sum(1 for p in passed if os.path.realpath(p) in found)
    print(f"pre-filter: {len(passed)} of {len(files)} files reach LibCST; {yielding} of those have a finding "
          f"({len(found)} files with findings, {len(findings)} findings)")


def profile(tree: Path, files: list[Path]) -> None:
    """Where a cold run's time goes, in one process over the whole tree (no cache, no workers)."""
    import libcst as cst

    from devlint.context import Context
    from devlint.rules import all_rules
    from devlint.runner import applicable
    from devlint.source import SourceError, decode

    rules = [rule() for rule in all_rules().values()]
    spent = dict.fromkeys(("read", "pre-filter", "parse", "index", "rules", "positions"), 0.0)
    per_rule: dict[str, float] = {}
    for p in files:
        t0 = time.perf_counter()
        data = p.read_bytes()
        t1 = time.perf_counter()
        chosen = applicable(data, rules, path=str(p))
        t2 = time.perf_counter()
        spent["read"] += t1 - t0
        spent["pre-filter"] += t2 - t1
        if not chosen:
            continue
        try:
            text = decode(data).text
            module = cst.parse_module(text)
        except (SourceError, cst.ParserSyntaxError, RecursionError):
            continue
        t3 = time.perf_counter()
        ctx = Context(module, str(p), text)
        t4 = time.perf_counter()
        spent["parse"] += t3 - t2
        spent["index"] += t4 - t3
        found = []
        for rule in chosen:
            r0 = time.perf_counter()
            with contextlib.suppress(Exception):  # a profile, not a lint: the run's own report shows crashes
                found.extend(rule.check(ctx))
            per_rule[rule.code] = per_rule.get(rule.code, 0.0) + time.perf_counter() - r0
        spent["rules"] += time.perf_counter() - t4
    total = sum(spent.values())
    print(f"profile (one process, {total:.1f} s): " + ", ".join(
        f"{k} {v:.2f} s ({100 * v / total:.0f}%)" for k, v in spent.items() if k != "positions"))
    print("  rules: " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(per_rule.items())))


def check_prefilter(tree: Path, jobs: int) -> None:
    """The pre-filter (byte triggers + ast screen) must not change what devlint reports."""
    outputs = []
    for extra in ([], ["--no-prefilter"]):
        cmd = devlint_cmd(tree, jobs, "--no-cache", "--output-format", "json", *extra)
        start = time.perf_counter()
        outputs.append(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        print(f"devlint {' '.join(extra) or '(pre-filter on)'}: {time.perf_counter() - start:.1f} s")
    counts = [len(json.loads(o)) for o in outputs]
    print(f"findings with and without the pre-filter: {'identical' if outputs[0] == outputs[1] else 'DIFFERENT'} "
          f"({counts[0]} vs {counts[1]})")


# --- findings in one file ---------------------------------------------------------------------------
def generated(n: int, dest: Path) -> Path:
    """One module with ``n`` hard-coded ``.cuda()`` calls (``n`` DEV001 findings, each with a fix)."""
    lines = ["import torch", "", "", "def load(batches):"]
    lines += [f"    x{i} = batches[{i}].cuda()" for i in range(n)]
    path = dest / f"findings_{n}.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def bench_findings(args: argparse.Namespace, work: Path) -> None:
    print("\n## findings in one file (DEV001 .cuda() calls, each with a fix)")
    targets = {2_000: (3.0, 5.0), 20_000: (30.0, None)}
    for n, (lint_target, fix_target) in targets.items():
        path = generated(n, work)
        lint = timed([sys.executable, "-m", "devlint", "--exit-zero", "-q", "--no-cache", str(path)], work)
        fix = timed([sys.executable, "-m", "devlint", "--exit-zero", "-q", "--no-cache", "--fix", "--unsafe-fixes",
                     str(path)], work)
        print(f"{n:>6} findings: lint {lint.wall:.2f} s{verdict(lint.wall, lint_target)}; --fix --unsafe-fixes "
              f"{fix.wall:.2f} s{verdict(fix.wall, fix_target)}; peak {max(lint.peak_mb, fix.peak_mb):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["findings", "transformers", "torch", "diffusers"], action="append")
    parser.add_argument("--path", help="benchmark this tree instead")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=3, help="cold runs per tree (best and median reported)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--check-prefilter", action="store_true")
    parser.add_argument("--findings-out")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"--jobs {args.jobs}; load average {os.getloadavg()[0]:.1f} at start")
    work = Path(tempfile.mkdtemp(prefix="devlint-bench-"))
    try:
        if args.path:
            bench_tree(Path(args.path).name, Path(args.path).resolve(), args, work)
            return
        groups = args.only or ["findings", "transformers", "torch", "diffusers"]
        for group in groups:
            if group == "findings":
                bench_findings(args, work)
            elif group == "torch":
                tree = torch_tree()
                if tree is None:
                    print("\n## torch: not installed (pip install torch==2.13.0)")
                else:
                    bench_tree("torch", tree, args, work)
            else:
                bench_tree(group, package_tree(PACKAGES[group]), args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
