"""devlint on real Jupyter/Colab notebooks: what it reads, what it reports, how long it takes.

    python bench/notebooks.py                      # fetch the pinned notebooks, lint them, print the numbers
    python bench/notebooks.py --sample 30          # and 30 findings (seeded) with their cell's code, to review
    python bench/notebooks.py --review             # and the precision of the reviewed findings (review.csv)
    python bench/notebooks.py --json out.json      # the numbers (and every finding) as JSON
    python bench/notebooks.py --fetch-only         # only materialise the notebooks

The notebooks are pinned in bench/notebooks/manifest.toml (a repository, a commit and the notebook paths per
``[[source]]``) and fetched at run time into a cache outside the repository
(``~/.cache/devlint-bench/notebooks/<owner>+<name>/<commit>/<path>``): from a local mirror (``--mirror``,
default ``/work/.mirror``: ``<owner>+<name>/repo``, a git directory, as bench/realcode.py) with
``git cat-file``, else from codeload.github.com's tarball of the commit. No notebook is kept in the repository.

devlint runs once, as a subprocess (``python -m devlint --no-cache --exit-zero --output-format json``), on the
sources' folders. A finding in a notebook is placed by its cell and its line in that cell: devlint's ``cell``
when it gives one, else its row is taken as a row of the notebook's code cells joined in order (see
``locate``). Reviewed findings: bench/notebooks/review.csv (``repo,commit,path,cell,line,rule,verdict,reason``;
verdicts by bench/realcode/GUIDE.md's criteria).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realcode import DEFAULT_CACHE, _mirror_git_dir  # bench/ is not a package: its folder is on the path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent / "notebooks"
REPO_ROOT = Path(__file__).resolve().parent.parent
MANIFEST = HERE / "manifest.toml"
REVIEW = HERE / "review.csv"
DEFAULT_NB_CACHE = DEFAULT_CACHE.parent / "notebooks"
CODELOAD = "https://codeload.github.com"
REVIEW_FIELDS = ("repo", "commit", "path", "cell", "line", "rule", "verdict", "reason")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class NotebookSource:
    repo: str  # owner/name
    commit: str  # 40 hex
    paths: tuple[str, ...]  # notebook paths inside the repository
    note: str = ""

    @property
    def key(self) -> str:
        """The source's folder in the cache (and in finding paths): ``owner+name/commit``."""
        return f"{self.repo.replace('/', '+')}/{self.commit}"

    @property
    def digest(self) -> str:
        """What a complete cached copy of the source must match (its path list)."""
        return hashlib.sha256("\n".join(self.paths).encode()).hexdigest()


@dataclass(frozen=True)
class Finding:
    repo: str
    commit: str
    path: str  # notebook path inside the repository
    cell: int | None  # 1-based index of the cell among all the notebook's cells, when devlint places it
    line: int  # 1-based line in that cell (in the file when no cell)
    code: str
    message: str

    @property
    def is_diagnostic(self) -> bool:
        """An E-code: devlint could not read, parse or analyse the file (not a rule finding)."""
        return self.code.startswith("E")


# --- the manifest ---------------------------------------------------------------------------------------
def _check_path(path: str, where: str) -> str:
    odd = any(c in path for c in "\\\n\r") or any(p in ("", ".", "..") for p in path.split("/"))
    if odd or not path.endswith(".ipynb"):
        raise ValueError(f"{where}: not a relative .ipynb path inside the repository: {path!r}")
    return path


def parse_manifest(data: dict[str, object], where: str = "manifest") -> list[NotebookSource]:
    """The ``[[source]]`` tables of a manifest, checked: a repo, a full commit, unique notebook paths."""
    sources = []
    seen: set[tuple[str, str]] = set()
    entries = data.get("source")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{where}: no [[source]] tables")
    for i, entry in enumerate(entries):
        at = f"{where}: source {i + 1}"
        repo, commit, paths = entry.get("repo", ""), entry.get("commit", ""), entry.get("paths", [])
        if not _REPO.fullmatch(repo) or not _COMMIT.fullmatch(commit) or not paths:
            raise ValueError(f"{at}: needs repo = 'owner/name', a 40-hex commit and paths")
        for path in paths:
            if (repo, _check_path(path, at)) in seen:
                raise ValueError(f"{at}: {path} listed twice")
            seen.add((repo, path))
        sources.append(NotebookSource(repo, commit, tuple(paths), entry.get("note", "")))
    return sources


def load_manifest(path: Path = MANIFEST) -> list[NotebookSource]:
    return parse_manifest(tomllib.loads(path.read_text()), str(path))


# --- fetching -------------------------------------------------------------------------------------------
def materialise(source: NotebookSource, cache: Path, mirror: Path, codeload: str = CODELOAD) -> Path:
    """The source's folder in the cache, holding exactly its notebooks (fetched unless already complete)."""
    dest = cache / source.key
    done = dest / ".complete"
    if done.exists() and done.read_text().strip() == source.digest:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    missing = set(source.paths)
    git_dir = _mirror_git_dir(mirror, source.repo)
    if git_dir is not None:
        missing = _from_mirror(git_dir, source, dest)
    if missing:  # no mirror, or the mirror's snapshot lacks some (files of 4 MiB and more)
        missing = _from_codeload(f"{codeload}/{source.repo}/tar.gz/{source.commit}", missing, dest)
    if missing:
        raise FileNotFoundError(f"{source.repo}@{source.commit[:12]}: not found: {', '.join(sorted(missing))}")
    done.write_text(source.digest + "\n")
    return dest


def _from_mirror(git_dir: Path, source: NotebookSource, dest: Path) -> set[str]:
    """Write the notebooks found in the mirror at the commit; the paths it lacks."""
    specs = "".join(f"{source.commit}:{path}\n" for path in source.paths).encode()
    batch = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"], input=specs,
                           check=True, capture_output=True).stdout
    missing, pos = set(), 0
    for path in source.paths:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":  # "<spec> missing" (or not a file)
            missing.add(path)
            continue
        size = int(header[2])
        _write(dest, path, batch[pos:pos + size])
        pos += size + 1
    return missing


def _from_codeload(url: str, wanted: set[str], dest: Path) -> set[str]:
    """Stream the commit's tarball (``<top>/<path>`` members) and write the wanted notebooks; those absent."""
    missing = set(wanted)
    with urllib.request.urlopen(url, timeout=300) as response, tarfile.open(fileobj=response, mode="r|gz") as tf:
        for member in tf:
            path = member.name.partition("/")[2]  # codeload's top folder is owner-name-commit/
            if path in missing and member.isfile():
                data = tf.extractfile(member)
                if data is not None:
                    _write(dest, path, data.read())
                    missing.discard(path)
    return missing


def _write(dest: Path, path: str, data: bytes) -> None:
    target = dest / path  # path is checked by the manifest: relative, no '..'
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


# --- notebooks ------------------------------------------------------------------------------------------
def cells(notebook: dict[str, object]) -> list[tuple[str, list[str]]]:
    """(cell type, source lines) of every cell, in order (nbformat 4; a v3 notebook's worksheets too)."""
    raw = notebook.get("cells")
    if raw is None:  # nbformat 3
        raw = [c for ws in notebook.get("worksheets", []) for c in ws.get("cells", [])]
    out = []
    for cell in raw:
        text = cell.get("source", cell.get("input", ""))
        text = "".join(text) if isinstance(text, list) else str(text)
        out.append((cell.get("cell_type", ""), text.splitlines()))
    return out


def locate(notebook: dict[str, object], row: int, cell: int | None) -> tuple[int | None, int]:
    """(cell, line in the cell) of a finding at ``row`` (and ``cell`` when devlint gives one, then ``row`` is
    already the cell's). Without a cell, ``row`` is a row of the code cells' sources joined in order."""
    if cell is not None:
        return cell, row
    remaining = row
    for index, (kind, lines) in enumerate(cells(notebook), start=1):
        if kind != "code":
            continue
        if remaining <= max(len(lines), 1):
            return index, remaining
        remaining -= max(len(lines), 1)
    return None, row


def accelerator(notebook: dict[str, object]) -> str:
    """Colab's accelerator metadata ("GPU", "TPU") or ""."""
    meta = notebook.get("metadata")
    value = meta.get("accelerator", "") if isinstance(meta, dict) else ""
    return value if isinstance(value, str) else ""


def notebook_stats(roots: dict[str, Path], sources: list[NotebookSource]) -> Counter[str]:
    """notebooks, unreadable (not JSON), code cells, code lines, Colab GPU notebooks."""
    stats: Counter[str] = Counter()
    for source in sources:
        for path in source.paths:
            stats["notebooks"] += 1
            try:
                notebook = json.loads((roots[source.key] / path).read_bytes())
            except (OSError, ValueError):
                stats["not json"] += 1
                continue
            code = [lines for kind, lines in cells(notebook) if kind == "code"]
            stats["code cells"] += len(code)
            stats["code lines"] += sum(len(lines) for lines in code)
            stats["colab gpu"] += accelerator(notebook) == "GPU"
    return stats


# --- linting --------------------------------------------------------------------------------------------
def run_devlint(folders: list[Path], cwd: Path) -> tuple[list[dict[str, object]], float]:
    """devlint's JSON findings on ``folders`` (this checkout's devlint), and the run's wall time in seconds."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "devlint", "--no-cache", "--exit-zero", "--output-format", "json",
               *map(str, folders)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"devlint exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout or "[]"), wall


def to_findings(records: list[dict[str, object]], roots: dict[str, Path],
                sources: list[NotebookSource]) -> list[Finding]:
    """devlint's JSON records as findings placed in their notebook (repo, commit, path, cell, line)."""
    by_key = {s.key: s for s in sources}
    loaded: dict[Path, dict[str, object]] = {}
    out = []
    for record in records:
        filename = Path(str(record["filename"])).resolve()
        source, rel = _owner(filename, roots, by_key)
        row = int(record.get("location", {}).get("row", 1))  # type: ignore[union-attr]
        cell = record.get("cell")
        cell = int(cell) if isinstance(cell, int) else None
        if rel.endswith(".ipynb"):
            if filename not in loaded:
                loaded[filename] = _read_json(filename)
            cell, row = locate(loaded[filename], row, cell)
        out.append(Finding(source.repo, source.commit, rel, cell, row, str(record["code"]),
                           str(record.get("message", ""))))
    return sorted(out, key=_order)


def _order(f: Finding) -> tuple[str, str, int, int, str, str]:
    return (f.repo, f.path, f.cell or 0, f.line, f.code, f.message)


def _owner(filename: Path, roots: dict[str, Path],
           by_key: dict[str, NotebookSource]) -> tuple[NotebookSource, str]:
    for key, root in roots.items():
        if filename.is_relative_to(root.resolve()):
            return by_key[key], filename.relative_to(root.resolve()).as_posix()
    raise ValueError(f"devlint reported a file outside the linted folders: {filename}")


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# --- report ---------------------------------------------------------------------------------------------
def summarise(findings: list[Finding], stats: Counter[str], wall: float) -> dict[str, object]:
    diagnostics = [f for f in findings if f.is_diagnostic]
    rules = [f for f in findings if not f.is_diagnostic]
    by_code: dict[str, set[str]] = defaultdict(set)
    for f in diagnostics:
        by_code[f.code].add(f"{f.repo}/{f.path}")
    return {
        "notebooks": stats["notebooks"], "code_cells": stats["code cells"], "code_lines": stats["code lines"],
        "colab_gpu_notebooks": stats["colab gpu"], "not_json": stats["not json"],
        "notebooks_with_diagnostics": len({f"{f.repo}/{f.path}" for f in diagnostics}),
        "diagnostics": len(diagnostics),
        "diagnostics_by_code": {code: len(paths) for code, paths in sorted(by_code.items())},
        "notebooks_with_findings": len({f"{f.repo}/{f.path}" for f in rules}),
        "findings_by_rule": dict(sorted(Counter(f.code for f in rules).items())),
        "wall_s": round(wall, 2),
    }


def format_summary(summary: dict[str, object], per_repo: dict[str, Counter[str]]) -> str:
    lines = [f"notebooks read: {summary['notebooks']} ({summary['code_cells']} code cells, "
             f"{summary['code_lines']} code lines; {summary['colab_gpu_notebooks']} with Colab GPU metadata, "
             f"{summary['not_json']} not JSON)",
             f"notebooks with parse diagnostics: {summary['notebooks_with_diagnostics']} "
             f"{_counts(summary['diagnostics_by_code'])}, {summary['diagnostics']} diagnostics (a cell each)",
             f"notebooks with findings: {summary['notebooks_with_findings']}",
             f"findings by rule: {_counts(summary['findings_by_rule'])}",
             f"devlint wall time: {summary['wall_s']:.1f} s",
             "", "| repository | notebooks | findings | diagnostics |", "| --- | --- | --- | --- |"]
    for repo, c in per_repo.items():
        lines.append(f"| {repo} | {c['notebooks']} | {c['findings']} | {c['diagnostics']} |")
    return "\n".join(lines)


def _counts(counts: object) -> str:
    items = counts.items() if isinstance(counts, dict) else []
    return "(" + (", ".join(f"{k}: {v}" for k, v in items) or "none") + ")"


def per_repo_counts(sources: list[NotebookSource], findings: list[Finding]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {s.repo: Counter(notebooks=len(s.paths)) for s in sources}
    for f in findings:
        out[f.repo]["diagnostics" if f.is_diagnostic else "findings"] += 1
    return out


def sample(findings: list[Finding], n: int, seed: int) -> list[Finding]:
    """``n`` rule findings drawn with ``seed`` (the same findings, in any order, give the same sample), in
    path order."""
    rules = sorted((f for f in findings if not f.is_diagnostic), key=_order)
    return sorted(random.Random(seed).sample(rules, min(n, len(rules))), key=_order)


def context(notebook: dict[str, object], finding: Finding, around: int = 3) -> list[str]:
    """The finding's line in its cell with ``around`` lines either side, numbered, the line marked."""
    all_cells = cells(notebook)
    if finding.cell is None or not 1 <= finding.cell <= len(all_cells):
        return []
    lines = all_cells[finding.cell - 1][1]
    lo, hi = max(1, finding.line - around), min(len(lines), finding.line + around)
    return [f"{'>' if n == finding.line else ' '} {n:4} | {lines[n - 1]}" for n in range(lo, hi + 1)]


def print_sample(picked: list[Finding], roots: dict[str, Path], sources: list[NotebookSource]) -> None:
    keys = {(s.repo, s.commit): s.key for s in sources}
    for f in picked:
        notebook = _read_json(roots[keys[f.repo, f.commit]] / f.path)
        gpu = accelerator(notebook)
        print(f"\n{f.repo}@{f.commit[:12]} {f.path} cell {f.cell} line {f.line}: {f.code} "
              f"{'[Colab ' + gpu + '] ' if gpu else ''}{f.message[:140]}")
        print("\n".join(context(notebook, f)))


# --- review ---------------------------------------------------------------------------------------------
def load_review(path: Path = REVIEW) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        if tuple(row) != REVIEW_FIELDS or row["verdict"] not in ("bug", "ok"):
            raise ValueError(f"{path}: expected columns {','.join(REVIEW_FIELDS)} and verdict bug|ok: {row}")
    return rows


def review_precision(rows: list[dict[str, str]], findings: list[Finding]) -> dict[str, dict[str, int]]:
    """Per rule, as bench/realcode.py scores labels (a verdict is about a line: two findings of a rule on one
    line take its verdict twice): findings on lines reviewed ``bug`` / ``ok``, findings on no reviewed line,
    and reviewed lines devlint no longer reports."""
    verdicts = {(r["repo"], r["commit"], r["path"], r["cell"], r["line"], r["rule"]): r["verdict"] for r in rows}
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"bug": 0, "ok": 0, "unreviewed": 0, "gone": 0})
    reported = set()
    for f in findings:
        if f.is_diagnostic:
            continue
        key = (f.repo, f.commit, f.path, str(f.cell or ""), str(f.line), f.code)
        reported.add(key)
        out[f.code][verdicts.get(key, "unreviewed")] += 1
    for key in verdicts.keys() - reported:
        out[key[5]]["gone"] += 1
    return dict(sorted(out.items()))


def format_review(precision: dict[str, dict[str, int]]) -> str:
    lines = ["| rule | findings | reviewed bug | reviewed ok | precision | unreviewed | reviewed, no longer reported |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for rule, c in precision.items():
        judged = c["bug"] + c["ok"]
        pct = f"{100 * c['bug'] / judged:.0f}%" if judged else "-"
        lines.append(f"| {rule} | {judged + c['unreviewed']} | {c['bug']} | {c['ok']} | {pct} | {c['unreviewed']} | "
                     f"{c['gone']} |")
    return "\n".join(lines)


# --- main -----------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--repo", action="append", default=[], help="only these repositories (owner/name)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_NB_CACHE)
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("DEVLINT_MIRROR", "/work/.mirror")))
    parser.add_argument("--codeload", default=os.environ.get("DEVLINT_CODELOAD", CODELOAD),
                        help="base URL of the commit tarballs (default: %(default)s)")
    parser.add_argument("--fetch-only", action="store_true", help="materialise the notebooks and stop")
    parser.add_argument("--sample", type=int, default=0, metavar="N", help="list N findings with their code")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--review", action="store_true", help="the precision of the findings in review.csv")
    parser.add_argument("--json", type=Path, help="write the numbers and the findings here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sources = [s for s in load_manifest(args.manifest) if not args.repo or s.repo in args.repo]
    started = time.perf_counter()
    roots = {s.key: materialise(s, args.cache, args.mirror, args.codeload) for s in sources}
    print(f"fetched {sum(len(s.paths) for s in sources)} notebooks from {len(sources)} repositories "
          f"({time.perf_counter() - started:.1f} s) into {args.cache}", file=sys.stderr)
    if args.fetch_only:
        return 0
    records, wall = run_devlint(list(roots.values()), args.cache)
    findings = to_findings(records, roots, sources)
    summary = summarise(findings, notebook_stats(roots, sources), wall)
    print(format_summary(summary, per_repo_counts(sources, findings)))
    if summary["notebooks_with_findings"] == 0 and summary["notebooks_with_diagnostics"] == 0:
        print("warning: devlint reported nothing on any notebook: does this devlint read .ipynb files?",
              file=sys.stderr)
    report: dict[str, object] = {"summary": summary, "findings": [vars(f) for f in findings]}
    if args.review:
        precision = review_precision(load_review(), findings)
        print("\nreviewed findings (bench/notebooks/review.csv):\n" + format_review(precision))
        report["review"] = precision
    if args.sample:
        print_sample(sample(findings, args.sample, args.seed), roots, sources)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
