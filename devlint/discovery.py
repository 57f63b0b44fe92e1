"""Which files to lint: recurse into directories, skip what .gitignore and the config exclude."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pathspec

from devlint.config import Config

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # (.ipynb: Jupyter notebooks, devlint/notebook.py)


def _spec(patterns: list[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _plain(pattern: str) -> bool:
    """A gitignore pattern that is a bare name: it matches any file or directory of that name at any depth."""
    return bool(pattern) and not any(c in pattern for c in "*?[]!/\\#") and pattern == pattern.strip()


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
        patterns = config.exclude + config.extend_exclude
        # a plain name (`venv`, `.tox`: no wildcard, slash or negation) matches a path with a part of that
        # name: a set lookup, where matching every pattern's regex for every file cost a third of a warm run
        self.names = frozenset(p for p in patterns if _plain(p))
        if any(p.lstrip().startswith("!") for p in patterns):
            self.names = frozenset()  # a negation may re-include what a name excludes: the spec decides all
        self.exclude = _spec([p for p in patterns if p not in self.names])
        self.root = str(config.root)
        self.gitignore = config.respect_gitignore
        self._specs: dict[str, list[tuple[str, pathspec.GitIgnoreSpec]]] = {}
        self._rel_dirs: dict[str, str] = {}  # directory -> its path relative to the root (once per directory)

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
        if name in self.names or self.exclude.match_file(name + slash):
            return True
        rel_dir = self._rel_dirs.get(real_directory)
        if rel_dir is None:
            rel_dir = self._rel_dirs[real_directory] = os.path.relpath(real_directory, self.root)
        if not rel_dir.startswith(".."):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            rel = rel.replace(os.sep, "/")
            if (self.names and not self.names.isdisjoint(rel.split("/"))) or self.exclude.match_file(rel + slash):
                return True
        if self.gitignore:
            path = os.path.join(directory, name)
            for base, spec in self._ancestor_specs(directory):
                if spec.match_file(os.path.relpath(path, base).replace(os.sep, "/") + slash):
                    return True
        return False


def _explicitly_excluded(path: str, config: Config, ignores: _Ignores) -> bool:
    """Would a walk from the config root skip ``path`` (a file or directory named on the command line)?

    The path and each of its directories below the config root are matched as the walk matches them
    (``exclude``, ``extend-exclude``, and .gitignore when ``respect-gitignore``); a path outside the root is
    matched by its own name only (the default excludes name folders like ``venv`` that may hold a project)."""
    absolute = os.path.abspath(path)
    root = str(config.root)
    if os.path.realpath(absolute) == root:
        return False
    chain = [absolute]
    if os.path.realpath(absolute).startswith(root + os.sep):
        parent = os.path.dirname(absolute)
        while parent != os.path.dirname(parent) and os.path.realpath(parent).startswith(root + os.sep):
            chain.append(parent)
            parent = os.path.dirname(parent)
    for item in chain:
        directory = os.path.dirname(item)
        if ignores.excluded(directory, os.path.realpath(directory), os.path.basename(item), os.path.isdir(item)):
            return True
    return False


def is_excluded(path: str, config: Config) -> bool:
    """``--force-exclude`` for one path (the name given with ``--stdin-filename``)."""
    return _explicitly_excluded(path, config, _Ignores(config))


def iter_files(paths: list[str], config: Config, force_exclude: bool = False,
               unreadable: list[tuple[str, str]] | None = None) -> Iterator[str]:
    """Every file to lint, each once, in a stable order. ``force_exclude``: the exclusions apply to the
    paths named too (pre-commit names every staged file), else a named file is always linted.
    ``unreadable``: gets (directory, why) for each directory that could not be listed (never skipped
    silently: the caller reports it, E902)."""
    ignores = _Ignores(config)

    def failed(exc: OSError) -> None:
        if unreadable is not None:
            where = os.path.normpath(exc.filename) if isinstance(exc.filename, str) else "."
            unreadable.append((where, f"cannot read directory: {exc.strerror or exc}"))

    seen: set[str] = set()
    for raw in paths or ["."]:
        if force_exclude and raw not in (".", "") and _explicitly_excluded(raw, config, ignores):
            continue
        if not os.path.isdir(raw):
            key = os.path.abspath(raw)
            if key not in seen:
                seen.add(key)
                yield raw  # named on the command line: linted (or reported unreadable) unless force-excluded
            continue
        yield from _walk(raw, ignores, seen, failed)


def _walk(top: str, ignores: _Ignores, seen: set[str], failed: Callable[[OSError], None]) -> Iterator[str]:
    """The files to lint under the directory ``top`` not in ``seen`` (added to it); a directory that cannot be
    listed goes to ``failed``."""
    for dirpath, dirnames, filenames in os.walk(top, onerror=failed, followlinks=False):
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
