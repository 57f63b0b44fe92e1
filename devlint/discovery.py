"""Which files to lint: recurse into directories, skip what .gitignore and the config exclude."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pathspec

from devlint.config import Config

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # (.ipynb: Jupyter notebooks, devlint/notebook.py)


def _spec(patterns: list[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _load_gitignore(directory: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            return _spec(fh.read().splitlines())
    except OSError:
        return None


class _Ignores:
    """Exclusion for one walk: config patterns (relative to the config root) and the .gitignore files that
    apply to each directory, computed once per directory rather than once per file."""

    def __init__(self, config: Config) -> None:
        self.exclude = _spec(config.exclude + config.extend_exclude)
        self.root = str(config.root)
        self.gitignore = config.respect_gitignore
        self._specs: dict[str, list[tuple[str, pathspec.GitIgnoreSpec]]] = {}

    def _ancestor_specs(self, directory: str) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
        """(base directory, spec) for .gitignore files in ``directory`` and above it, up to the repo root."""
        if directory not in self._specs:
            specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
            spec = _load_gitignore(directory)
            if spec is not None:
                specs.append((directory, spec))
            parent = os.path.dirname(directory)
            if parent != directory and not os.path.exists(os.path.join(directory, ".git")):
                specs = self._ancestor_specs(parent) + specs
            self._specs[directory] = specs
        return self._specs[directory]

    def excluded(self, directory: str, real_directory: str, name: str, is_dir: bool) -> bool:
        slash = "/" if is_dir else ""
        if self.exclude.match_file(name + slash):
            return True
        rel_dir = os.path.relpath(real_directory, self.root)
        if not rel_dir.startswith(".."):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if self.exclude.match_file(rel.replace(os.sep, "/") + slash):
                return True
        if self.gitignore:
            path = os.path.join(directory, name)
            for base, spec in self._ancestor_specs(directory):
                if spec.match_file(os.path.relpath(path, base).replace(os.sep, "/") + slash):
                    return True
        return False


def iter_files(paths: list[str], config: Config) -> Iterator[str]:
    """Every file to lint, each once, in a stable order."""
    ignores = _Ignores(config)
    seen: set[str] = set()
    for raw in paths or ["."]:
        if not os.path.isdir(raw):
            key = os.path.abspath(raw)
            if key not in seen:
                seen.add(key)
                yield raw  # named on the command line: always linted (or reported unreadable)
            continue
        for dirpath, dirnames, filenames in os.walk(raw, followlinks=False):
            directory = os.path.abspath(dirpath)
            real = os.path.realpath(directory)
            dirnames[:] = sorted(d for d in dirnames if not ignores.excluded(directory, real, d, True))
            for name in sorted(filenames):
                if not name.endswith(PYTHON_SUFFIXES) or ignores.excluded(directory, real, name, False):
                    continue
                file = os.path.normpath(os.path.join(dirpath, name))
                key = os.path.join(directory, name)
                if key not in seen:
                    seen.add(key)
                    yield file


def per_file_ignored(path: str, config: Config) -> list[str]:
    """Codes/prefixes ignored for ``path`` by per-file-ignores (patterns relative to the config root)."""
    if not config.per_file_ignores:
        return []
    absolute = Path(os.path.realpath(path))
    try:
        rel = absolute.relative_to(config.root).as_posix()
    except ValueError:
        rel = absolute.as_posix()
    out: list[str] = []
    for pattern, codes in config.per_file_ignores.items():
        spec = _spec([pattern])
        if spec.match_file(rel):
            out.extend(codes)
    return out
