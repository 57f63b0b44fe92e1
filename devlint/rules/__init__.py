"""Rule registry: every ``Rule`` subclass with a code in a module of this package, found automatically."""

from __future__ import annotations

import importlib
import pkgutil

from devlint.rules.base import Rule

_REGISTRY: dict[str, type[Rule]] | None = None


def all_rules() -> dict[str, type[Rule]]:
    """Code -> rule class, sorted by code."""
    global _REGISTRY
    if _REGISTRY is None:
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
        found: dict[str, type[Rule]] = {}
        stack = list(Rule.__subclasses__())
        while stack:
            cls = stack.pop()
            stack.extend(cls.__subclasses__())
            if cls.code:
                if cls.code in found and found[cls.code] is not cls:
                    raise RuntimeError(f"two rules claim {cls.code}: {found[cls.code].__name__}, {cls.__name__}")
                found[cls.code] = cls
        _REGISTRY = dict(sorted(found.items()))
    return _REGISTRY


def select_rules(codes: set[str]) -> list[Rule]:
    return [cls() for code, cls in all_rules().items() if code in codes]
