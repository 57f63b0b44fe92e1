"""Which files to lint: recurse into directories, skip what .gitignore and the config exclude."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pathspec

from devlint.config import Config

PYTHON_SUFFIXES = (".py", ".pyi")


def _spec(patterns: list[str]) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


class _GitIgnores:
    """The .gitignore files that apply to a directory: its own and its ancestors' up to the repo root."""

    def __init__(self) -> None:
        self._cache: dict[Path, pathspec.PathSpec | None] = {}

    def _load(self, directory: Path) -> pathspec.PathSpec | None:
        if directory not in self._cache:
            spec = None
            gitignore = directory / ".gitignore"
            try:
                if gitignore.is_file():
                    spec = _spec(gitignore.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                spec = None
            self._cache[directory] = spec
        return self._cache[directory]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for directory in path.parents:
            spec = self._load(directory)
            if spec is not None:
                rel = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
                if spec.match_file(rel):
                    return True
            if (directory / ".git").exists():
                break
        return False


def iter_files(paths: list[str], config: Config) -> Iterator[tuple[str, bool]]:
    """(path, named explicitly) for every file to lint, each once, in a stable order."""
    exclude = _spec(config.exclude + config.extend_exclude)
    gitignores = _GitIgnores() if config.respect_gitignore else None
    root = config.root
    seen: set[str] = set()

    def excluded(path: Path, is_dir: bool) -> bool:
        if exclude.match_file(path.name + ("/" if is_dir else "")):
            return True
        try:
            rel = Path(os.path.realpath(path)).relative_to(root).as_posix()
        except ValueError:
            rel = None
        if rel and exclude.match_file(rel + ("/" if is_dir else "")):
            return True
        return gitignores is not None and gitignores.ignored(Path(os.path.abspath(path)), is_dir)

    for raw in paths or ["."]:
        path = Path(raw)
        if not path.is_dir():
            key = os.path.abspath(raw)
            if key not in seen:
                seen.add(key)
                yield raw, True  # named on the command line: always linted (or reported unreadable)
            continue
        for dirpath, dirnames, filenames in os.walk(raw, followlinks=False):
            base = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if not excluded(base / d, True))
            for name in sorted(filenames):
                if not name.endswith(PYTHON_SUFFIXES):
                    continue
                file = base / name
                if excluded(file, False):
                    continue
                key = os.path.abspath(file)
                if key not in seen:
                    seen.add(key)
                    yield os.path.normpath(file), False


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
