"""devlint on real code: per-rule precision and recall against labelled lines, on two halves.

    python bench/realcode.py                 # every source of bench/realcode/sources/, both halves
    python bench/realcode.py --half tune     # only the half devlint may be tuned on
    python bench/realcode.py --source nanogpt --findings   # one source, and list its findings with labels
    python bench/realcode.py --json out.json

Sources are pinned (bench/realcode/sources/*.toml) and fetched at run time into a cache outside the
repository (``~/.cache/devlint-bench/realcode``): PyPI artifacts with ``pip download``; GitHub snapshots from a
local mirror (``--mirror``, default ``/work/.mirror``: ``<owner>+<name>/repo``, a git directory) with
``git archive <commit>``, else downloaded from codeload.github.com. No third-party code is kept in the
repository. Labels: bench/realcode/labels/<id>.csv (see bench/realcode/GUIDE.md).

Precision = labelled findings judged ``bug`` / labelled findings; recall = labelled bugs found / labelled bugs.
Findings with no label are counted apart (they are neither right nor wrong until someone reads them). Which
half a source is in depends on its id only (holdout: the first hex digit of sha256(id) is below 8).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent / "realcode"
DEFAULT_CACHE = Path.home() / ".cache" / "devlint-bench" / "realcode"


@dataclass
class Source:
    id: str
    kind: str  # "pypi" or "github"
    name: str = ""
    version: str = ""
    artifact: str = "sdist"
    repo: str = ""
    commit: str = ""
    subdir: str = ""
    note: str = ""

    @property
    def half(self) -> str:
        return "holdout" if hashlib.sha256(self.id.encode()).hexdigest()[0] in "01234567" else "tune"

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}" if self.kind == "pypi" else f"{self.repo}@{self.commit[:12]}"


@dataclass(frozen=True)
class Label:
    path: str
    line: int
    rule: str
    verdict: str  # "bug" or "ok"
    reason: str


@dataclass
class Tally:
    tp: int = 0  # findings labelled bug
    fp: int = 0  # findings labelled ok
    fn: int = 0  # labelled bugs not found
    unlabelled: int = 0
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, other: Tally) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.unlabelled += other.unlabelled
        for k, v in other.examples.items():
            self.examples[k].extend(v)

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def load_sources() -> list[Source]:
    out = []
    for path in sorted((HERE / "sources").glob("*.toml")):
        data = tomllib.loads(path.read_text())
        out.append(Source(id=path.stem, **data))
    return out


def load_labels(source: Source) -> list[Label]:
    path = HERE / "labels" / f"{source.id}.csv"
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    labels = []
    for row in rows:
        if row["verdict"] not in ("bug", "ok"):
            raise ValueError(f"{path}: verdict must be bug or ok: {row}")
        labels.append(Label(row["path"].strip(), int(row["line"]), row["rule"].strip(), row["verdict"], row["reason"]))
    return labels


# --- fetching ------------------------------------------------------------------------------------------
def _single_top(root: Path) -> Path:
    entries = [p for p in root.iterdir() if not p.name.startswith(".")]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else root


def fetch(source: Source, cache: Path, mirror: Path) -> Path:
    """The source's tree (its root: an sdist's or archive's single top folder stripped)."""
    dest = cache / source.id / (source.version or source.commit)
    done = dest / ".complete"
    if not done.exists():
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        tree = dest / "tree"
        tree.mkdir()
        if source.kind == "pypi":
            _fetch_pypi(source, tree)
        else:
            _fetch_github(source, tree, mirror)
        done.write_text("ok\n")
    # a PyPI artifact's single top folder (name-version/) is stripped; a GitHub snapshot is the repo's root
    root = _single_top(dest / "tree") if source.kind == "pypi" else dest / "tree" / "src"
    return root / source.subdir if source.subdir else root


def _fetch_pypi(source: Source, tree: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        flag = ["--no-binary", source.name] if source.artifact == "sdist" else ["--only-binary", ":all:"]
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-build-isolation",
                        *flag, "-d", tmp, f"{source.name}=={source.version}"], check=True,
                       stdout=subprocess.DEVNULL)
        artifact = next(Path(tmp).iterdir())
        if artifact.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(artifact) as zf:
                zf.extractall(tree)
        else:
            with tarfile.open(artifact) as tf:
                tf.extractall(tree, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(tree)


def _fetch_github(source: Source, tree: Path, mirror: Path) -> None:
    local = _mirror_git_dir(mirror, source.repo)
    if local is not None:
        _extract_python_files(local, source.commit, tree)
        return
    url = f"https://codeload.github.com/{source.repo}/tar.gz/{source.commit}"
    with urllib.request.urlopen(url, timeout=120) as response:  # a pinned https URL
        data = response.read()
    unpacked = tree / "unpacked"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
        tf.extractall(unpacked, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(unpacked)
    _single_top(unpacked).rename(tree / "src")  # codeload's owner-name-commit/ folder is the repo's root


def _mirror_git_dir(mirror: Path, repo: str) -> Path | None:
    """The mirror's git directory of ``owner/name`` (``repo`` a bare git dir, or ``repo/.git``)."""
    base = mirror / repo.replace("/", "+") / "repo"
    for candidate in (base, base / ".git"):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def _extract_python_files(git_dir: Path, commit: str, tree: Path) -> None:
    """The commit's ``.py`` files (a snapshot may lack large data files: only sources are needed)."""
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
                             check=True, capture_output=True).stdout
    entries = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        _mode, kind, sha = meta.split()
        if kind == b"blob" and name.endswith(b".py"):
            entries.append((sha.decode(), name.decode("utf-8", "surrogateescape")))
    batch = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                           input="".join(f"{sha}\n" for sha, _ in entries).encode(),
                           check=True, capture_output=True).stdout
    pos = 0
    for _, name in entries:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        target = tree / "src" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[pos:pos + size])
        pos += size + 1


# --- linting and scoring -------------------------------------------------------------------------------
def lint(root: Path, jobs: int) -> list[tuple[str, int, str, str]]:
    """(path relative to root, line, code, message) of every rule finding devlint reports under root."""
    from devlint.config import Config
    from devlint.diagnostics import INTERNAL_ERROR
    from devlint.rules import all_rules
    from devlint.runner import Options, run

    rules = all_rules()
    result = run([str(root)], Config(root=root), Options(select=set(rules), jobs=jobs))
    out = []
    for f in result.findings:
        if f.code in rules:
            out.append((os.path.relpath(f.path, root), f.start.row, f.code, f.message))
        elif f.code == INTERNAL_ERROR.code:  # a crashed rule drops its findings: the score would be wrong
            raise SystemExit(f"realcode: {os.path.relpath(f.path, root)}: {f.message}")
    return sorted(out)


def score(findings: list[tuple[str, int, str, str]], labels: list[Label]) -> dict[str, Tally]:
    by_key = {(lb.path, lb.line, lb.rule): lb for lb in labels}
    tallies: dict[str, Tally] = defaultdict(Tally)
    found = set()
    for path, line, code, message in findings:
        key = (path, line, code)
        found.add(key)
        label = by_key.get(key)
        tally = tallies[code]
        if label is None:
            tally.unlabelled += 1
            tally.examples["unlabelled"].append(f"{path}:{line}: {code} {message[:100]}")
        elif label.verdict == "bug":
            tally.tp += 1
        else:
            tally.fp += 1
            tally.examples["fp"].append(f"{path}:{line}: {code} ({label.reason})")
    for key, label in by_key.items():
        if label.verdict == "bug" and key not in found:
            tallies[label.rule].fn += 1
            tallies[label.rule].examples["fn"].append(f"{label.path}:{label.line}: {label.rule} ({label.reason})")
    return tallies


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def table(title: str, tallies: dict[str, Tally], sources: int, labels: int) -> str:
    lines = [f"{title}: {sources} sources, {labels} labelled lines",
             "| rule | findings | labelled bug | labelled ok | unlabelled | missed bugs | precision | recall |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    total = Tally()
    for code in sorted(tallies):
        t = tallies[code]
        total.add(t)
        lines.append(f"| {code} | {t.tp + t.fp + t.unlabelled} | {t.tp} | {t.fp} | {t.unlabelled} | {t.fn} | "
                     f"{_pct(t.precision)} | {_pct(t.recall)} |")
    lines.append(f"| all | {total.tp + total.fp + total.unlabelled} | {total.tp} | {total.fp} | {total.unlabelled} | "
                 f"{total.fn} | {_pct(total.precision)} | {_pct(total.recall)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=("tune", "holdout", "both"), default="both")
    parser.add_argument("--source", action="append", default=[], help="only these source ids")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("DEVLINT_MIRROR", "/work/.mirror")))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--findings", action="store_true", help="list every finding with its label")
    parser.add_argument("--details", action="store_true", help="list false positives, misses and unlabelled")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    sources = [s for s in load_sources() if (not args.source or s.id in args.source)]
    halves = ("tune", "holdout") if args.half == "both" else (args.half,)
    per_half: dict[str, dict[str, Tally]] = {h: defaultdict(Tally) for h in halves}
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    report: dict[str, object] = {"sources": _score_sources(sources, halves, args, per_half, counts)}
    out = []
    for half in halves:
        out.append(table(half, per_half[half], counts[f"{half}-sources"], counts[f"{half}-labels"]))
        if args.details:
            out += _details(half, per_half[half])
        report[half] = {code: {"tp": t.tp, "fp": t.fp, "fn": t.fn, "unlabelled": t.unlabelled,
                               "precision": t.precision, "recall": t.recall}
                        for code, t in per_half[half].items()}
    print("\n".join(out))
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _score_sources(sources: list[Source], halves: tuple[str, ...], args: argparse.Namespace,
                   per_half: dict[str, dict[str, Tally]], counts: Counter[str]) -> dict[str, object]:
    """Fetch, lint and score each source of ``halves``, adding to ``per_half`` (half -> rule -> tally) and
    ``counts``; the report's entry per source."""
    report: dict[str, object] = {}
    for source in sources:
        if source.half not in halves:
            continue
        root = fetch(source, args.cache, args.mirror)
        labels = load_labels(source)
        findings = lint(root, args.jobs)
        tallies = score(findings, labels)
        counts[f"{source.half}-sources"] += 1
        counts[f"{source.half}-labels"] += len(labels)
        for code, t in tallies.items():
            per_half[source.half][code].add(t)
        report[source.id] = {
            "half": source.half, "pin": source.pin, "labels": len(labels),
            "findings": [{"path": p, "line": n, "code": c, "message": m} for p, n, c, m in findings],
        }
        print(f"{source.id} ({source.half}, {source.pin}): {len(findings)} findings, {len(labels)} labels",
              file=sys.stderr)
        if args.findings:
            by_key = {(lb.path, lb.line, lb.rule): lb for lb in labels}
            for p, n, c, m in findings:
                lb = by_key.get((p, n, c))
                print(f"  {p}:{n}: {c} [{lb.verdict if lb else 'unlabelled'}] {m[:110]}")
    return report


def _details(half: str, tallies: dict[str, Tally]) -> list[str]:
    """The false positives, misses and unlabelled findings of one half, rule by rule."""
    return [f"  [{half} {kind}] {line}"
            for _, t in sorted(tallies.items())
            for kind in ("fp", "fn", "unlabelled")
            for line in t.examples.get(kind, [])]

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
