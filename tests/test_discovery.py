"""Which files a walk lints: the exclude patterns that are bare names (``venv``, ``build``) are matched by a set
lookup of path parts; the walk must choose the same files as matching every pattern with pathspec."""

from __future__ import annotations

import os
from pathlib import Path

import pathspec
import pytest

from devlint import discovery
from devlint.config import Config

TREE = ["pkg/a.py", "pkg/build/gen.py", "pkg/mybuild/b.py", "venv/lib/x.py", "src/venvs/c.py", "src/d.py",
        "docs/conf.py", "docs/api/e.py", "tools/build", "notes/build.py"]


def _tree(root: Path) -> None:
    for rel in TREE:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def _reference(root: Path, patterns: list[str], top: str = ".") -> list[str]:
    """The files pathspec alone keeps (every part of each path matched as the walk matches it)."""
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    kept = []
    for dirpath, dirnames, filenames in os.walk(root / top):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        dirnames[:] = sorted(d for d in dirnames if not spec.match_file(d + "/")
                             and not spec.match_file(("" if rel_dir == "." else rel_dir + "/") + d + "/"))
        for name in sorted(filenames):
            rel = ("" if rel_dir == "." else rel_dir + "/") + name
            if name.endswith(".py") and not spec.match_file(name) and not spec.match_file(rel):
                kept.append(rel)
    return sorted(kept)


@pytest.mark.parametrize("patterns", [
    ["venv", "build"],
    ["venv", "build", "docs/api"],
    ["build", "*.pyc", "!pkg/build"],  # a negation: the spec decides every pattern
    ["notes/build.py", "venv"],
])
def test_walk_keeps_what_pathspec_keeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patterns: list[str]) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    config = Config(root=tmp_path.resolve(), exclude=patterns, respect_gitignore=False)
    walked = sorted(Path(p).as_posix() for p in discovery.iter_files(["."], config))
    assert walked == _reference(tmp_path, patterns)


def test_a_named_directory_under_an_excluded_name_is_walked_without_its_excluded_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    config = Config(root=tmp_path.resolve(), exclude=["venv", "build"], respect_gitignore=False)
    # the files below venv/ match `venv` by their path relative to the root, as pathspec matches them
    assert list(discovery.iter_files(["venv"], config)) == []
    assert sorted(discovery.iter_files(["pkg"], config)) == ["pkg/a.py", "pkg/mybuild/b.py"]
