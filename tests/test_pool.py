"""The worker pool's memory bounds: workers recycled after a number of files, results placed as they come
back (in the order of the files), the worker count capped by memory, the project's caches bounded."""

from __future__ import annotations

import concurrent.futures
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar

import pytest

from devlint import runner
from devlint.config import Config
from devlint.project import Project
from devlint.runner import FileResult, Options, run, worker_count


class FakePool:
    """A pool run in-process: each task is done when submitted, but its future is handed back only after the
    later ones (out of order), so the runner must place results by file, not by arrival."""

    pools: ClassVar[list[FakePool]] = []

    def __init__(self, max_workers: int, initializer: Any, initargs: tuple[Any, ...]) -> None:
        self.max_workers = max_workers
        self.files: list[str] = []
        self.shut = False
        FakePool.pools.append(self)
        initializer(*initargs)

    def submit(self, fn: Any, chunk: list[str], *args: Any) -> Future[list[FileResult]]:
        self.files += chunk
        future: Future[list[FileResult]] = Future()
        future.set_result(fn(chunk, *args))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.shut = True


def _order_reversed(futures: Any, return_when: str) -> tuple[set[Future[Any]], set[Future[Any]]]:
    last = list(futures)[-1]  # the last submitted comes back first
    return {last}, set(futures) - {last}


def test_workers_are_recycled_and_results_come_back_in_file_order(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(25):
        (tmp_path / f"m{i:02}.py").write_text("import torch\nx = torch.zeros(1).cuda()\n" if i % 3 == 0 else "y = 1\n")
    FakePool.pools = []
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", FakePool)
    monkeypatch.setattr(concurrent.futures, "wait", _order_reversed)
    monkeypatch.setattr(runner, "RECYCLE_FILES", 5)
    monkeypatch.setattr(runner, "available_mb", lambda: 10_000.0)
    result = run([str(tmp_path)], Config(root=tmp_path), Options(select={"DEV001"}, jobs=2))
    # 25 files, 2 workers, each replaced after 5 files: a fresh pool per 10 files
    assert [len(p.files) for p in FakePool.pools] == [10, 10, 5]
    assert all(p.max_workers == 2 and p.shut for p in FakePool.pools)
    names = sorted(str(p) for p in tmp_path.glob("*.py"))
    # each pool takes the next files in order, the largest first (its workers then finish together)
    assert [sorted(pool.files) for pool in FakePool.pools] == [names[0:10], names[10:20], names[20:25]]
    for pool in FakePool.pools:
        sizes = [Path(f).stat().st_size for f in pool.files]
        assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]
    assert [r.path for r in result.files] == names
    assert [(Path(f.path).name, f.code, f.start.row) for f in result.findings] == [
        (f"m{i:02}.py", "DEV001", 2) for i in range(0, 25, 3)]


def test_worker_count_is_capped_by_memory() -> None:
    assert worker_count(8, 100, None) == 8
    assert worker_count(8, 3, None) == 3
    assert worker_count(8, 100, 3.5 * runner.WORKER_MB) == 3
    assert worker_count(8, 100, 10.0) == 1  # at least one, in the main process


def test_one_worker_for_little_memory_runs_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    FakePool.pools = []
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", FakePool)
    monkeypatch.setattr(runner, "available_mb", lambda: runner.WORKER_MB * 1.5)
    result = run([str(tmp_path)], Config(root=tmp_path), Options(select={"DEV001"}, jobs=4))
    assert FakePool.pools == []
    assert len(result.findings) == 4


def test_project_bytes_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = []
    for i in range(10):
        path = tmp_path / f"m{i}.py"
        path.write_bytes(b"x = 1\n" * 100 + str(i).encode())
        paths.append(str(path))
    project = Project(paths)
    monkeypatch.setattr(project, "MAX_BYTES", 2000)
    for _ in range(2):
        for i, path in enumerate(paths):
            assert project.read(path) == b"x = 1\n" * 100 + str(i).encode()
    assert len(project._bytes) == 3  # 601 bytes each
    assert project._bytes_held <= 2000
