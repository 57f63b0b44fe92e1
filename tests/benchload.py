"""Import a script of bench/ as a module (the benchmarks are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(script: str) -> ModuleType:
    """bench/<script>.py as the module ``bench_<script>`` (its folder on sys.path: notebooks.py imports
    realcode from there)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    name = f"bench_{script}"
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module
