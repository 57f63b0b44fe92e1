"""``[tool.devlint]`` in pyproject.toml: found by walking up from the paths, validated strictly."""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from devlint.context import DEVICE_FALLBACKS
from devlint.rules import all_rules


class ConfigError(Exception):
    """Bad configuration or usage; the message names the key or option (exit 2)."""


DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
    ".pants.d", ".pytest_cache", ".pytype", ".ruff_cache", ".devlint_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv",
)


@dataclass
class Config:
    root: Path  # the directory holding the config file (or cwd): patterns are relative to it
    path: Path | None = None
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    respect_gitignore: bool = True
    baseline: str | None = None  # the baseline file (relative to root): only findings not recorded there are reported
    device_fallback: str | None = None  # what the fixes write to choose a device (DEVICE_FALLBACKS); None: per file
    output_format: str | None = None  # the report's format when --output-format does not say (report.FORMATS)


_KEYS = {
    "select": "codes", "extend-select": "codes", "ignore": "codes", "exclude": "strings",
    "extend-exclude": "strings", "per-file-ignores": "table", "respect-gitignore": "bool", "baseline": "string",
    "device-fallback": "device-fallback", "output-format": "output-format",
}
OUTPUT_FORMATS = ("concise", "full", "json", "sarif", "github", "text")  # (report.FORMATS)


def check_device_fallback(value: object, where: str) -> str:
    """``value`` when it names a device fallback (``cuda-cpu``, ``cuda-mps-cpu``, ``accelerator``)."""
    if not isinstance(value, str) or value not in DEVICE_FALLBACKS:
        raise ConfigError(f"{where} must be one of {', '.join(map(repr, DEVICE_FALLBACKS))} (got {value!r})")
    return value


def _check_choice(value: object, choices: tuple[str, ...], where: str) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"{where} must be one of {', '.join(map(repr, choices))} (got {value!r})")


def expand_codes(patterns: list[str], where: str) -> set[str]:
    """Codes matching each code or prefix (``DEV``, ``DEV00``, ``ALL``); an unknown one is an error."""
    codes = set(all_rules())
    out: set[str] = set()
    for pattern in patterns:
        pattern = pattern.strip().upper()
        if not pattern:
            continue
        if pattern == "ALL":
            out |= codes
            continue
        matched = {c for c in codes if c.startswith(pattern)}
        if not matched:
            raise ConfigError(f"{where}: unknown rule code or prefix {pattern!r}")
        out |= matched
    return out


def _check(key: str, value: object, source: str) -> object:
    kind = _KEYS[key]
    where = f"{source}: [tool.devlint] {key}"
    if kind in ("codes", "strings"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of strings (got {value!r})")
        if kind == "codes":
            expand_codes(value, where)
    elif kind == "string":
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where} must be a file name (a string)")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false (got {value!r})")
    elif kind in ("device-fallback", "output-format"):
        _check_choice(value, DEVICE_FALLBACKS if kind == "device-fallback" else OUTPUT_FORMATS, where)
    elif kind == "table":
        _check_table(value, where)
    return value


def _check_table(value: object, where: str) -> None:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table of pattern = [codes]")
    for pattern, codes in value.items():
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise ConfigError(f"{where}.{pattern!r} must be a list of codes")
        expand_codes(codes, f"{where}.{pattern!r}")


def _read_toml(path: Path) -> dict[str, object]:
    """The TOML file's table; :class:`ConfigError` for a file that is unreadable, not a regular file (a FIFO
    would block) or not TOML."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ConfigError(f"{path}: cannot read config: not a regular file")
        with open(path, "rb") as fh:
            data: dict[str, object] = tomllib.load(fh)
            return data
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _devlint_table(data: dict[str, object], path: Path) -> object:
    """``[tool.devlint]`` of a pyproject.toml (``{}`` when absent), the whole file for another TOML file."""
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table (got {type(tool).__name__} {tool!r})")
    return tool.get("devlint", {})


def load_config(path: Path) -> Config:
    data = _read_toml(path)
    section = _devlint_table(data, path)
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.devlint] must be a table (got {type(section).__name__} {section!r})")
    cfg = Config(root=path.parent.resolve(), path=path)
    for key, value in section.items():
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.devlint] (known keys: {known})")
        _check(key, value, str(path))
        setattr(cfg, key.replace("-", "_"), value)
    return cfg


def find_config(paths: list[str]) -> Path | None:
    """The nearest pyproject.toml with a [tool.devlint] table, walking up from the first path."""
    start = Path(os.path.realpath(paths[0] if paths else "."))
    if not os.path.isdir(start):  # (False, not PermissionError, below a folder that may not be searched)
        start = start.parent
    for directory in [start, *start.parents]:
        candidate = directory / "pyproject.toml"
        try:
            found = stat.S_ISREG(os.stat(candidate).st_mode)
        except FileNotFoundError:
            continue
        except OSError as exc:  # (a directory devlint may not search: which config applies is unknown)
            raise ConfigError(f"cannot look for pyproject.toml in {directory}: {exc.strerror or exc}") from None
        if not found:
            continue
        try:
            data = _read_toml(candidate)
            tool = data.get("tool", {})
        except ConfigError:
            return candidate  # let load_config report it
        if not isinstance(tool, dict) or "devlint" in tool:
            return candidate
    return None


def resolve(config_file: str | None, paths: list[str]) -> Config:
    if config_file is not None:
        return load_config(Path(config_file))
    found = find_config(paths)
    if found is None:
        return Config(root=Path(os.getcwd()).resolve())
    return load_config(found)
