"""The guards' work grows with the findings of a file, not with their square: a fact about a function (does it run
the project's CUDA kernels?) is computed once, not again for each line of it asked about (the 2,000-finding
benchmark took 33 s while it was recomputed per finding). Counted in syntax-tree walks, not timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint import guards
from devlint.config import Config
from devlint.runner import Options, run


def _walks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    source = tmp_path / f"load_{n}.py"
    source.write_text("import torch\n\n\ndef load(batches):\n"
                      + "".join(f"    x{i} = batches[{i}].cuda()\n" for i in range(n)), encoding="utf-8")
    count = 0
    walk = guards.walk

    def counted(node):  # type: ignore[no-untyped-def]
        nonlocal count
        count += 1
        return walk(node)

    monkeypatch.setattr(guards, "walk", counted)
    result = run([str(source)], Config(root=tmp_path), Options(select={"DEV001"}, jobs=1))
    assert len(result.findings) == n
    return count


def test_guard_walks_grow_linearly_with_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = _walks(tmp_path, monkeypatch, 100), _walks(tmp_path, monkeypatch, 400)
    assert large < 6 * small, (small, large)  # linear: about 4x; quadratic: about 16x
