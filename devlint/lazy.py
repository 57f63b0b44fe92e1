"""Modules imported on first use. A run answered from the results cache never touches LibCST, so it should
not pay ~0.15 s to import it."""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for module ``name`` in ``namespace[binding]`` until an attribute is first read; then imports
    the module and binds it there in its place, so later lookups are plain global lookups."""

    def __init__(self, name: str, namespace: dict[str, Any], binding: str) -> None:
        self.__dict__.update(_name=name, _namespace=namespace, _binding=binding)

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__dict__["_name"])
        namespace, binding = self.__dict__["_namespace"], self.__dict__["_binding"]
        if namespace.get(binding) is self:
            namespace[binding] = module
        return getattr(module, attr)
