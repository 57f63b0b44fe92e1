"""Benchmark devlint on a real corpus: cold, warm (cache) and `ruff check --select ALL`, same run.

    python bench/bench.py                      # transformers 5.23.0 (downloaded with pip)
    python bench/bench.py --package timm==1.0.15
    python bench/bench.py --path some/tree     # any directory
    python bench/bench.py --check-prefilter    # also: findings identical with --no-prefilter (slow)

Targets (issue: scale and robustness): transformers linted in <= 10 s cold, <= 0.5 s warm, peak memory
<= 300 MB. Prints the figures and the ratios; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path


def fetch(package: str, dest: Path) -> Path:
    wheels = dest / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels), package], check=True)
    wheel = next(wheels.glob("*.whl"))
    tree = dest / "src"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tree)
    return tree


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) of the largest process, exit code."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    peak = usage.ru_maxrss / 1024  # KB on Linux
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, max(peak, children), os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default="transformers==5.23.0")
    parser.add_argument("--path")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=3, help="cold runs (best and median reported)")
    parser.add_argument("--check-prefilter", action="store_true",
                        help="also lint every file with LibCST (--no-prefilter) and compare the findings")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="devlint-bench-"))
    try:
        tree = Path(args.path).resolve() if args.path else fetch(args.package, work)
        files = sum(1 for _ in tree.rglob("*.py"))
        lines = sum(p.read_bytes().count(b"\n") for p in tree.rglob("*.py"))
        colds = []
        for run in range(args.runs):  # each cold run with a fresh cache; the last one's cache for the warm run
            cache = work / f"cache{run}"
            devlint = [sys.executable, "-m", "devlint", "--exit-zero", "-q", "--jobs", str(args.jobs),
                       "--cache-dir", str(cache), str(tree)]
            colds.append(timed(devlint, work))
        warm = timed(devlint, work)
        cold = min(colds)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
              f"corpus: {args.path or args.package}, {files} files, {lines} lines; --jobs {args.jobs}")
        walls = sorted(c[0] for c in colds)
        print(f"devlint cold: {cold[0]:.2f} s best of {len(colds)} (median {walls[len(walls) // 2]:.2f} s), "
              f"peak {max(c[1] for c in colds):.0f} MB")
        print(f"devlint warm: {warm[0]:.2f} s, peak {warm[1]:.0f} MB")
        ruff = shutil.which("ruff")
        if ruff:
            r = timed([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", str(tree)], work)
            print(f"ruff check --select ALL (no cache): {r[0]:.2f} s")
            print(f"ratios: devlint cold / ruff = {cold[0] / r[0]:.1f}x, devlint warm / ruff = {warm[0] / r[0]:.2f}x")
        else:
            print("ruff not installed (pip install ruff) - no comparison")
        if args.check_prefilter:
            check_prefilter(tree, args.jobs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_prefilter(tree: Path, jobs: int) -> None:
    """The pre-filter (byte triggers + ast screen) must not change what devlint reports."""
    outputs = []
    for extra in ([], ["--no-prefilter"]):
        cmd = [sys.executable, "-m", "devlint", "--exit-zero", "-q", "--no-cache", "--output-format", "json",
               "--jobs", str(jobs), *extra, str(tree)]
        start = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        outputs.append(out)
        print(f"devlint {' '.join(extra) or '(pre-filter on)'}: {time.perf_counter() - start:.1f} s")
    import json

    findings = [json.loads(o) for o in outputs]
    same = outputs[0] == outputs[1]
    print(f"findings with and without the pre-filter: {'identical' if same else 'DIFFERENT'} "
          f"({len(findings[0])} vs {len(findings[1])})")


if __name__ == "__main__":
    main()
