"""bench/notebooks.py without the network: the manifest, fetching from a local git mirror and from a tarball
URL (file://), placing findings in cells, the sample and the review's precision."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from benchload import load_bench

BENCH = Path(__file__).resolve().parent.parent / "bench"


nb = load_bench("notebooks")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def notebook(*cells: tuple[str, str], **metadata: str) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": metadata,
            "cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
                      for kind, text in cells]}


# --- the manifest --------------------------------------------------------------------------------------
def test_the_pinned_manifest_has_at_least_100_notebooks_from_6_repositories():
    sources = nb.load_manifest()
    assert len({s.repo for s in sources}) >= 6
    assert sum(len(s.paths) for s in sources) >= 100
    assert all(len(s.commit) == 40 for s in sources)


@pytest.mark.parametrize("entry", [
    {"repo": "a/b", "commit": "abc", "paths": ["x.ipynb"]},  # short commit
    {"repo": "ab", "commit": COMMIT, "paths": ["x.ipynb"]},  # not owner/name
    {"repo": "a/b", "commit": COMMIT, "paths": []},
    {"repo": "a/b", "commit": COMMIT, "paths": ["../x.ipynb"]},
    {"repo": "a/b", "commit": COMMIT, "paths": ["/x.ipynb"]},
    {"repo": "a/b", "commit": COMMIT, "paths": ["x.py"]},
    {"repo": "a/b", "commit": COMMIT, "paths": ["a\nb.ipynb"]},
    {"repo": "a/b", "commit": COMMIT, "paths": ["x.ipynb", "x.ipynb"]},
])
def test_a_manifest_entry_that_is_not_pinned_or_not_a_notebook_path_is_rejected(entry):
    with pytest.raises(ValueError):
        nb.parse_manifest({"source": [entry]})


def test_a_path_with_spaces_and_parentheses_is_accepted():
    (source,) = nb.parse_manifest({"source": [{"repo": "a/b", "commit": COMMIT,
                                                "paths": ["intro/Part 1 - Tensors (Solution).ipynb"]}]})
    assert source.key == f"a+b/{COMMIT}"


# --- fetching ------------------------------------------------------------------------------------------
def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, str]:
    """A mirror folder with ``owner/name`` as a bare repository of one commit."""
    work = tmp_path / "work"
    (work / "sub dir").mkdir(parents=True)
    (work / "sub dir" / "a (1).ipynb").write_text(json.dumps(notebook(("code", "x = 1\n"))))
    (work / "b.ipynb").write_text(json.dumps(notebook(("code", "y = 2\n"))))
    (work / "c.py").write_text("z = 3\n")
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "m")
    commit = _git(work, "rev-parse", "HEAD")
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror / "owner+name" / "repo")], check=True)
    return mirror, commit


def test_notebooks_come_from_the_mirror_and_only_the_listed_ones(tmp_path, mirror):
    mirror_dir, commit = mirror
    source = nb.NotebookSource("owner/name", commit, ("sub dir/a (1).ipynb",))
    root = nb.materialise(source, tmp_path / "cache", mirror_dir, codeload="file:///nonexistent")
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == [
        ".complete", "sub dir/a (1).ipynb"]
    assert json.loads((root / "sub dir" / "a (1).ipynb").read_text())["cells"][0]["source"] == ["x = 1\n"]


def test_a_complete_copy_is_reused_and_a_changed_path_list_refetched(tmp_path, mirror):
    mirror_dir, commit = mirror
    cache = tmp_path / "cache"
    first = nb.NotebookSource("owner/name", commit, ("b.ipynb",))
    root = nb.materialise(first, cache, mirror_dir)
    (root / "b.ipynb").write_text("edited")
    assert nb.materialise(first, cache, mirror_dir / "gone") == root  # no fetch: the mirror is not even there
    assert (root / "b.ipynb").read_text() == "edited"
    second = nb.NotebookSource("owner/name", commit, ("sub dir/a (1).ipynb",))
    nb.materialise(second, cache, mirror_dir)
    assert not (root / "b.ipynb").exists()


def _tarball(tmp_path: Path, files: dict[str, bytes], commit: str = COMMIT) -> str:
    """A codeload-like tarball (``owner-name-commit/<path>``) as a file:// base URL for materialise."""
    base = tmp_path / "codeload"
    target = base / "owner" / "name" / "tar.gz" / commit
    target.parent.mkdir(parents=True)
    with tarfile.open(target, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"owner-name-{commit[:7]}/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return base.as_uri()


def test_without_a_mirror_the_notebooks_come_from_the_commit_tarball(tmp_path):
    url = _tarball(tmp_path, {"n/a b.ipynb": b"{}", "n/other.ipynb": b"{}", "setup.py": b""})
    source = nb.NotebookSource("owner/name", COMMIT, ("n/a b.ipynb",))
    root = nb.materialise(source, tmp_path / "cache", tmp_path / "no-mirror", codeload=url)
    assert sorted(p.name for p in root.rglob("*.ipynb")) == ["a b.ipynb"]


def test_a_notebook_the_mirror_lacks_comes_from_the_tarball_and_one_found_nowhere_is_an_error(tmp_path, mirror):
    mirror_dir, commit = mirror
    url = _tarball(tmp_path, {"big.ipynb": b"{}"}, commit)  # a snapshot lacks files of 4 MiB and more
    source = nb.NotebookSource("owner/name", commit, ("b.ipynb", "big.ipynb"))
    root = nb.materialise(source, tmp_path / "cache", mirror_dir, codeload=url)
    assert sorted(p.name for p in root.rglob("*.ipynb")) == ["b.ipynb", "big.ipynb"]
    source = nb.NotebookSource("owner/name", commit, ("b.ipynb", "missing.ipynb"))
    with pytest.raises(FileNotFoundError, match=r"missing\.ipynb"):
        nb.materialise(source, tmp_path / "cache", mirror_dir, codeload=url)
    assert not (tmp_path / "cache" / source.key / ".complete").exists()


# --- placing findings ----------------------------------------------------------------------------------
NB = notebook(("markdown", "# title\n"), ("code", "import torch\nx = 1\n"), ("code", ""),
              ("markdown", "text\n"), ("code", "a\nb\nc"), accelerator="GPU")


@pytest.mark.parametrize(("row", "cell", "expected"), [
    (1, None, (2, 1)), (2, None, (2, 2)), (3, None, (3, 1)), (4, None, (5, 1)), (6, None, (5, 3)),
    (99, None, (None, 99)), (7, 4, (4, 7)),
])
def test_a_row_is_placed_in_its_cell(row, cell, expected):
    assert nb.locate(NB, row, cell) == expected


def test_a_version_3_notebook_has_cells_in_worksheets():
    v3 = {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": ["a\n", "b"]}]}]}
    assert nb.cells(v3) == [("code", ["a", "b"])]


def test_findings_are_placed_in_their_source_and_notebook(tmp_path):
    source = nb.NotebookSource("owner/name", COMMIT, ("d/n.ipynb",))
    root = tmp_path / source.key
    (root / "d").mkdir(parents=True)
    (root / "d" / "n.ipynb").write_text(json.dumps(NB))
    records = [{"code": "DEV001", "filename": str(root / "d" / "n.ipynb"), "location": {"row": 4, "column": 1},
                "cell": None, "message": "m"},
               {"code": "E999", "filename": str(root / "d" / "n.ipynb"), "location": {"row": 2}, "cell": 5,
                "message": "s"}]
    findings = nb.to_findings(records, {source.key: root}, [source])
    assert [(f.path, f.cell, f.line, f.code) for f in findings] == [("d/n.ipynb", 5, 1, "DEV001"),
                                                                     ("d/n.ipynb", 5, 2, "E999")]
    summary = nb.summarise(findings, Counter(notebooks=1), 1.0)
    assert summary["findings_by_rule"] == {"DEV001": 1}
    assert summary["diagnostics_by_code"] == {"E999": 1}
    assert nb.context(NB, findings[0], around=1) == [">    1 | a", "     2 | b"]


def _finding(line: int, code: str = "DEV001", cell: int | None = 2) -> object:
    return nb.Finding("o/n", COMMIT, "x.ipynb", cell, line, code, "")


def test_the_sample_is_seeded_and_leaves_diagnostics_out():
    findings = [_finding(n) for n in range(1, 50)] + [_finding(1, "E999")]
    first = nb.sample(findings, 10, seed=3)
    assert len(first) == 10
    assert first == nb.sample(list(reversed(findings)), 10, seed=3)
    assert all(f.code != "E999" for f in first)
    assert len(nb.sample(findings, 500, seed=3)) == 49


def test_the_review_scores_findings_by_the_verdict_of_their_line(tmp_path):
    path = tmp_path / "review.csv"
    path.write_text("repo,commit,path,cell,line,rule,verdict,reason\n"
                    f"o/n,{COMMIT},x.ipynb,2,1,DEV001,bug,crashes\n"
                    f"o/n,{COMMIT},x.ipynb,2,2,DEV001,ok,\"guarded, by a check\"\n"
                    f"o/n,{COMMIT},x.ipynb,2,9,DEV001,bug,no longer found\n")
    rows = nb.load_review(path)
    findings = [_finding(1), _finding(1), _finding(2), _finding(3), _finding(1, "E999")]  # two on line 1
    precision = nb.review_precision(rows, findings)
    assert precision == {"DEV001": {"bug": 2, "ok": 1, "unreviewed": 1, "gone": 1}}
    assert "| DEV001 | 4 | 2 | 1 | 67% | 1 | 1 |" in nb.format_review(precision)


def test_a_review_verdict_other_than_bug_or_ok_is_rejected(tmp_path):
    path = tmp_path / "review.csv"
    path.write_text(f"repo,commit,path,cell,line,rule,verdict,reason\no/n,{COMMIT},x.ipynb,2,1,DEV001,maybe,?\n")
    with pytest.raises(ValueError):
        nb.load_review(path)
