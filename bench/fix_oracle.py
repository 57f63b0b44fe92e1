"""Run the fix oracle (devlint/oracle.py) over real PyTorch projects: does `--fix --unsafe-fixes` ever break
working code?

    python bench/fix_oracle.py                          # every package of bench/corpus.toml
    python bench/fix_oracle.py --package timm           # one (or more: repeat) of them
    python bench/fix_oracle.py --path some/tree         # any local tree (repeatable; no download)
    python bench/fix_oracle.py --jobs 2 --json out.json

Each pinned artifact (sdist or wheel) is downloaded with pip into a cache outside the repository
(``~/.cache/devlint-bench/`` or ``--cache DIR``), checked against its sha256 where the manifest gives one,
and extracted there; later runs reuse it. Every ``.py`` file then goes through devlint's pre-filter (a file no
rule may report on cannot be fixed: it counts as checked with 0 fixes) and, if it passes, through the oracle.
Files that changed are also compiled, in one batch, by a real ``python3.10`` when one can be found, and
counted as failures where the original compiled there and the fixed text does not.

Prints per package and in total: files, skipped (undecodable), passing the pre-filter, changed, fixes applied,
failures by kind, each failure (path:line: message), wall time. Exit 1 if any failure.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devlint import oracle  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE_TIMEOUT = 300  # seconds for one file (fix + checks); over it the file counts as a crash

KIND_ORDER = [oracle.CRASH, oracle.GRAMMAR, oracle.COMPILE, oracle.UNBOUND, oracle.NOT_IDEMPOTENT, oracle.OFFERED,
              oracle.ORACLE_ERROR]


# --- the corpus --------------------------------------------------------------------------------------------
def load_manifest(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    packages = data.get("package", [])
    for p in packages:
        if p.get("kind") not in ("sdist", "wheel"):
            raise SystemExit(f"{path}: {p.get('name')}: kind must be sdist or wheel")
    return packages


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(entry: dict, cache: Path) -> Path:
    """Download (once) and extract (once) one pinned artifact; the directory of its files."""
    name, version, kind = entry["name"], entry["version"], entry["kind"]
    tag = f"{name}-{version}-{kind}"
    dl, src = cache / "downloads" / tag, cache / "src" / tag
    if (src / ".complete").exists():
        return src
    artifacts = [p for p in dl.glob("*") if p.is_file()] if dl.exists() else []
    if not artifacts:
        dl.mkdir(parents=True, exist_ok=True)
        how = ["--only-binary", ":all:"] if kind == "wheel" else ["--no-binary", name]
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *how, "-d", str(dl),
                        f"{name}=={version}"], check=True)
        artifacts = [p for p in dl.glob("*") if p.is_file()]
    if len(artifacts) != 1:
        raise SystemExit(f"{tag}: expected one artifact in {dl}, found {[a.name for a in artifacts]}")
    artifact = artifacts[0]
    if entry.get("sha256") and sha256(artifact) != entry["sha256"]:
        raise SystemExit(f"{tag}: sha256 mismatch for {artifact} (delete it to download again)")
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    if artifact.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(artifact) as zf:
            for member in zf.namelist():
                target = (src / member).resolve()
                if not str(target).startswith(str(src.resolve()) + os.sep):
                    raise SystemExit(f"{artifact}: unsafe member {member!r}")
            zf.extractall(src)
    else:
        with tarfile.open(artifact) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(src, filter="data")
            else:  # pragma: no cover - old Pythons
                tf.extractall(src)
    (src / ".complete").write_text(artifact.name + "\n")
    return src


def python_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.py") if p.is_file() and not p.is_symlink())


# --- the workers -------------------------------------------------------------------------------------------
_RULES: list = []


def _init_worker() -> None:
    global _RULES
    _RULES = oracle.default_rules()


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> NoReturn:
    raise _Timeout()


def check_file(task: tuple[str, str, str]) -> dict:
    """One file: skipped, filtered (no rule may report: 0 fixes) or run through the oracle."""
    from devlint.runner import applicable
    from devlint.source import LIBCST_MAX_BYTES, SourceError, decode

    package, path, shown = task
    out: dict = {"package": package, "path": shown, "status": "checked", "fixes": 0, "changed": False,
                 "failures": [], "oracle_errors": [], "seconds": 0.0}
    start = time.perf_counter()
    try:
        data = Path(path).read_bytes()
        source = decode(data)
    except (OSError, SourceError) as exc:
        out.update(status="skipped", reason=str(exc))
        return out
    if not applicable(data, _RULES):
        out["status"] = "filtered"
        return out
    if len(data) > LIBCST_MAX_BYTES:
        out.update(status="skipped", reason="too large for LibCST")
        return out
    out["status"] = "oracle"
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(FILE_TIMEOUT)
    try:
        result = oracle.run(source.text, shown, _RULES)
    except _Timeout:
        out["failures"] = [oracle.failure(oracle.CRASH, None, f"fixing and checking took over {FILE_TIMEOUT} s")]
        return out
    except Exception as exc:  # noqa: BLE001 - oracle.run catches the fixer's errors; this is its own
        out["oracle_errors"] = [f"{oracle.ORACLE_ERROR}: oracle.run raised {type(exc).__name__}: {exc}"]
        return out
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        out["seconds"] = round(time.perf_counter() - start, 3)
    out.update(fixes=result.fixes, changed=result.changed, failures=result.failures,
               oracle_errors=result.oracle_errors)
    if result.changed:
        out["original"] = source.text
        out["fixed"] = result.fixed_text
    return out


# --- python3.10 -----------------------------------------------------------------------------------------
_COMPILE_LOOP = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
for line in open(sys.argv[1]):
    item = json.loads(line)
    def ok(path):
        try:
            compile(open(path, encoding="utf-8").read(), path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return f"{exc.msg} (line {exc.lineno})", exc.lineno
        except (ValueError, RecursionError, MemoryError) as exc:
            return f"{type(exc).__name__}: {exc}", None
        return None
    if ok(item["original"]) is None:
        bad = ok(item["fixed"])
        if bad is not None:
            print(json.dumps({"index": item["index"], "message": bad[0], "line": bad[1]}), flush=True)
print(json.dumps({"done": True}))
"""


def find_python310(explicit: str | None) -> list[str] | None:
    candidates = [explicit] if explicit else []
    which = shutil.which("python3.10")
    if which:
        candidates.append(which)
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python3.10")))
    for c in candidates:
        try:
            proc = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.stdout.strip() == "True":
            return [c]
    return None


def compile_310(python: list[str], changed: list[dict]) -> dict[int, str]:
    """index into ``changed`` -> why python3.10 rejects the fixed text (where it accepts the original)."""
    out: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="devlint-oracle-") as tmp:
        listing = Path(tmp) / "list.jsonl"
        with open(listing, "w", encoding="utf-8") as fh:
            for i, r in enumerate(changed):
                orig, fixed = Path(tmp) / f"{i}.orig.py", Path(tmp) / f"{i}.fixed.py"
                orig.write_text(r["original"], encoding="utf-8")
                fixed.write_text(r["fixed"], encoding="utf-8")
                fh.write(json.dumps({"index": i, "original": str(orig), "fixed": str(fixed)}) + "\n")
        proc = subprocess.run([*python, "-c", _COMPILE_LOOP, str(listing)], capture_output=True, text=True,
                              timeout=3600)
        done = False
        for line in proc.stdout.splitlines():
            item = json.loads(line)
            if item.get("done"):
                done = True
            else:
                out[item["index"]] = oracle.failure(oracle.COMPILE, item["line"],
                                                    f"python3.10 cannot compile the fixed text: {item['message']}")
        if not done:
            raise RuntimeError(f"python3.10 compile loop failed: {proc.stderr[-2000:]}")
    return out


# --- report ------------------------------------------------------------------------------------------------
def summarise(results: list[dict]) -> dict:
    kinds: Counter = Counter()
    for r in results:
        for f in r["failures"] + r["oracle_errors"]:
            kinds[oracle.kind_of(f)] += 1
    return {
        "files": len(results),
        "skipped": sum(r["status"] == "skipped" for r in results),
        "prefilter_passed": sum(r["status"] == "oracle" for r in results),
        "changed": sum(r["changed"] for r in results),
        "fixes": sum(r["fixes"] for r in results),
        "failures": {k: kinds.get(k, 0) for k in KIND_ORDER},
    }


def line(label: str, s: dict, seconds: float | None = None) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in s["failures"].items() if n) or "none"
    wall = f"; {seconds:.1f} s" if seconds is not None else ""
    return (f"{label}: {s['files']} files ({s['skipped']} skipped), {s['prefilter_passed']} past the pre-filter, "
            f"{s['changed']} changed, {s['fixes']} fixes; failures: {kinds}{wall}")


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    t0 = time.perf_counter()
    trees = _trees(args)
    tasks = _tasks(trees)
    print(f"{len(tasks)} .py files in {len(trees)} trees; --jobs {args.jobs}", flush=True)

    t1 = time.perf_counter()
    results = _check_all(tasks, args.jobs)
    check_seconds = time.perf_counter() - t1
    compile_note = _compile_changed(results, args)

    summaries = _print_packages([label for label, _ in trees], results)
    total = summarise(results)
    wall = time.perf_counter() - t0
    print(line("TOTAL", total, wall) + f" (checking {check_seconds:.1f} s, --jobs {args.jobs})")
    print(f"python3.10 compile: {compile_note}")
    slowest = sorted(results, key=lambda r: -r["seconds"])[:3]
    print("slowest: " + ", ".join(f"{r['path']} {r['seconds']:.1f} s" for r in slowest))

    failed = _print_failures(results)
    if args.json:
        for r in results:
            r.pop("original", None)
            r.pop("fixed", None)
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"packages": summaries, "total": total, "wall_seconds": round(wall, 1),
                       "python310": compile_note, "files": sorted(results, key=lambda r: r["path"])}, fh, indent=1)
    return 1 if failed else 0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--manifest", default=str(ROOT / "bench" / "corpus.toml"))
    parser.add_argument("--package", action="append", default=[], help="only this manifest package (repeatable)")
    parser.add_argument("--path", action="append", default=[], help="a local tree instead of the manifest")
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/devlint-bench"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write the full results here")
    parser.add_argument("--python310", help="a Python 3.10 interpreter (default: python3.10 on PATH, pyenv)")
    parser.add_argument("--no-compile", action="store_true", help="skip the python3.10 compile check")
    return parser.parse_args(argv)


def _trees(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """(label, directory) of every tree to check: the --path trees, and the manifest's packages (all of them,
    or those named by --package), downloaded and extracted as needed."""
    trees: list[tuple[str, Path]] = []
    if args.path:
        trees += [(p, Path(p).resolve()) for p in args.path]
    if args.package or not args.path:
        manifest = load_manifest(Path(args.manifest))
        wanted = {p.lower() for p in args.package}
        unknown = wanted - {e["name"].lower() for e in manifest}
        if unknown:
            raise SystemExit(f"not in {args.manifest}: {', '.join(sorted(unknown))}")
        for entry in manifest:
            if wanted and entry["name"].lower() not in wanted:
                continue
            label = f"{entry['name']}=={entry['version']} ({entry['kind']})"
            trees.append((label, fetch(entry, Path(args.cache))))
    return trees


def _tasks(trees: list[tuple[str, Path]]) -> list[tuple[str, str, str]]:
    """(package label, path, path shown) of every file, the largest first: no straggler at the end."""
    tasks = []
    for label, tree in trees:
        for p in python_files(tree):
            tasks.append((label, str(p), f"{label.split(' ')[0]}/{p.relative_to(tree)}"))
    tasks.sort(key=lambda t: -os.path.getsize(t[1]))
    return tasks


def _check_all(tasks: list[tuple[str, str, str]], jobs: int) -> list[dict[str, Any]]:
    """:func:`check_file` on every task, in ``jobs`` processes where that is more than one."""
    if jobs <= 1:
        _init_worker()
        return [check_file(t) for t in tasks]
    import multiprocessing

    results: list[dict[str, Any]] = []
    t1 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_init_worker) as pool:
        for i, r in enumerate(pool.imap_unordered(check_file, tasks, chunksize=4), 1):
            results.append(r)
            if i % 2000 == 0:
                print(f"  {i}/{len(tasks)} files, {time.perf_counter() - t1:.0f} s", flush=True)
    return results


def _compile_changed(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """Compile the changed files with python3.10 (unless --no-compile), adding its failures to ``results``;
    what was done, for the report."""
    changed = [r for r in results if r["changed"]]
    python310 = None if args.no_compile else find_python310(args.python310)
    compile_note = "not run (--no-compile)" if args.no_compile else "not run (no python3.10 found)"
    if python310 and changed:
        for i, message in compile_310(python310, changed).items():
            changed[i]["failures"].append(message)
        compile_note = f"{len(changed)} changed files compiled with {python310[0]}"
    elif python310:
        compile_note = f"nothing changed to compile ({python310[0]})"
    return compile_note


def _print_packages(order: list[str], results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Print each package's summary line (in ``order``); the summaries."""
    by_package: dict[str, list[dict[str, Any]]] = {label: [] for label in order}
    for r in results:
        by_package[r["package"]].append(r)
    summaries = {}
    for label in order:
        rs = by_package[label]
        summaries[label] = summarise(rs)
        secs = sum(r["seconds"] for r in rs)
        print(line(label, summaries[label]) + f"; {secs:.1f} s in the oracle (CPU)")
    return summaries


def _print_failures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Print every failure, by path; the results that have one."""
    failed = [r for r in results if r["failures"] or r["oracle_errors"]]
    failed.sort(key=lambda r: r["path"])
    if failed:
        print("\nfailures:")
        for r in failed:
            for f in r["failures"] + r["oracle_errors"]:
                where = oracle.line_of(f)
                print(f"  {r['path']}{':' + str(where) if where else ''}: {f}")
    return failed

if __name__ == "__main__":
    sys.exit(main())
