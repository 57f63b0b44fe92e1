"""The warm cache trusts a file's size and mtime (ruff's approach): nothing is read when nothing changed,
yet an edit within the same tick (same size, mtime set back), a touched file and an edited dependency are
all handled as the content says."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from devlint import cache as cache_mod
from devlint import runner
from devlint.config import Config
from devlint.runner import Options, run

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"
OLD = 1_600_000_000 * 10**9  # an mtime long before any cache write: trusted by stat alone


def _age(root: Path) -> None:
    for path in root.rglob("*.py"):
        os.utime(path, ns=(OLD, OLD))


def _found(result: runner.RunResult) -> list[tuple[str, str, int, int]]:
    return sorted((os.path.basename(f.path), f.code, f.start.row, f.start.column) for f in result.findings)


@pytest.fixture
def reads(monkeypatch):
    """The source files whose bytes devlint reads (the runner's and the cache's readers)."""
    seen: list[str] = []
    real_runner, real_cache = runner.read_bytes, cache_mod._read_regular

    def runner_read(path: str) -> bytes:
        seen.append(path)
        return real_runner(path)

    def cache_read(path: str) -> bytes:
        if path.endswith(".py"):
            seen.append(path)
        return real_cache(path)

    monkeypatch.setattr(runner, "read_bytes", runner_read)
    monkeypatch.setattr(cache_mod, "_read_regular", cache_read)
    return seen


def _tree(tmp_path: Path) -> tuple[Path, Config, Options]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text('import torch\n\ndevice = "cuda"\n')
    (src / "b.py").write_text("import torch\n\nx = torch.zeros(3).cuda()\n")
    (src / "c.py").write_text("print('nothing here')\n")
    _age(src)
    options = Options(select={c for c in runner.all_rules()}, jobs=1, cache_dir=str(tmp_path / "cache"))
    return src, Config(root=tmp_path), options


def test_warm_run_reads_no_file_when_nothing_changed(tmp_path, reads):
    src, config, options = _tree(tmp_path)
    cold = _found(run([str(src)], config, options))
    assert ("a.py", "DEV001", 3, 10) in cold
    assert len(reads) >= 3  # the cold run hashes and lints each file
    reads.clear()
    assert _found(run([str(src)], config, options)) == cold
    assert reads == []


def test_same_size_edit_with_the_old_mtime_is_seen(tmp_path, reads):
    src, config, options = _tree(tmp_path)
    path = src / "a.py"
    path.write_text('import torch\n\ndevice = "cpu0"\n')  # fresh mtime: racy, recorded but not trusted
    before = path.stat().st_mtime_ns
    assert ("a.py", "DEV001", 3, 10) not in _found(run([str(src)], config, options))
    path.write_text('import torch\n\ndevice = "cuda"\n')  # same size, same tick
    os.utime(path, ns=(before, before))
    assert path.stat().st_size == len('import torch\n\ndevice = "cpu0"\n')
    assert ("a.py", "DEV001", 3, 10) in _found(run([str(src)], config, options))


def test_trusted_record_is_not_reused_when_the_mtime_differs(tmp_path, reads):
    src, config, options = _tree(tmp_path)
    run([str(src)], config, options)
    path = src / "a.py"
    path.write_text('import torch\n\ndevice = "cpu0"\n')  # same size, new mtime
    os.utime(path, ns=(OLD + 10**9, OLD + 10**9))
    assert ("a.py", "DEV001", 3, 10) not in _found(run([str(src)], config, options))


def test_touched_file_keeps_its_cached_result(tmp_path, reads, monkeypatch):
    src, config, options = _tree(tmp_path)
    cold = _found(run([str(src)], config, options))
    linted: list[str] = []
    real = runner.process_file
    monkeypatch.setattr(runner, "process_file", lambda path, *a, **k: linted.append(path) or real(path, *a, **k))
    os.utime(src / "b.py", ns=(OLD + 5 * 10**9, OLD + 5 * 10**9))
    reads.clear()
    assert _found(run([str(src)], config, options)) == cold
    assert linted == []  # a hit: hashed again (the mtime changed), not linted again
    assert reads == [str(src / "b.py")]
    reads.clear()
    run([str(src)], config, options)
    assert reads == []  # and recorded with the new mtime


@pytest.mark.parametrize("prefilter", [False, True])
def test_dependency_edit_invalidates(tmp_path, reads, prefilter):
    root = tmp_path / "reranking"
    shutil.copytree(PROJECTS / "kernels" / "reranking", root)
    _age(root)
    config = Config(root=root)
    options = Options(select={c for c in runner.all_rules()}, jobs=1, cache_dir=str(tmp_path / "cache"),
                      prefilter=prefilter)
    first = _found(run([str(root)], config, options))
    assert not [f for f in first if f[0] == "main.py"]  # CUDA-only through rerank.py
    assert _found(run([str(root)], config, options)) == first
    reads.clear()
    (root / "rerank.py").write_text('"""Nothing CUDA-only here any more."""\n\n\ndef rerank(q, g, k):\n    return q\n')
    os.utime(root / "rerank.py", ns=(OLD + 10**9, OLD + 10**9))
    after = _found(run([str(root)], config, options))
    fresh = _found(run([str(root)], config, Options(select=options.select, jobs=1, prefilter=prefilter)))
    assert after == fresh
    assert [f for f in after if f[0] == "main.py"]  # main.py's .cuda() calls are now reported


def test_a_checkpoint_writer_added_elsewhere_invalidates(tmp_path, reads):
    """viewer/app.py's load is not reported while no file of the project writes a checkpoint, nor while none
    of its folder does (DEV005): the answers rest on every file read, so a torch.save added to another file
    re-lints it: one in another folder changes nothing, one beside it (a file it does not import) reports it."""
    root = tmp_path / "viewer"
    shutil.copytree(PROJECTS / "viewer", root)
    _age(root)
    config = Config(root=root)
    options = Options(select={"DEV005"}, jobs=1, cache_dir=str(tmp_path / "cache"))
    assert _found(run([str(root)], config, options)) == []
    tools = root / "viewer" / "extras" / "tools.py"  # a file app.py neither imports nor sits beside
    tools.write_text(tools.read_text() + "\n\ndef export(net, path):\n    import torch\n    torch.save(net.state_dict(), path)\n")
    os.utime(tools, ns=(OLD + 10**9, OLD + 10**9))
    assert _found(run([str(root)], config, options)) == []  # a writer elsewhere: app.py's folder writes none
    init = root / "viewer" / "__init__.py"
    init.write_text(init.read_text() + "\n\ndef export(net, path):\n    import torch\n    torch.save(net.state_dict(), path)\n")
    os.utime(init, ns=(OLD + 2 * 10**9, OLD + 2 * 10**9))
    assert _found(run([str(root)], config, options)) == [("app.py", "DEV005", 11, 27)]


@pytest.mark.parametrize("prefilter", [False, True])
def test_star_imported_module_edit_invalidates(tmp_path, reads, prefilter):
    """eval.py gets torch only through `from utils import *`: its DEV005 finding rests on utils.py's imports, so
    an edit there that sets `__all__` (torch no longer exported) re-lints eval.py, and the warm run agrees with a
    cold one."""
    root = tmp_path / "starimport"
    shutil.copytree(PROJECTS / "starimport", root)
    _age(root)
    config = Config(root=root)
    options = Options(select={"DEV005"}, jobs=1, cache_dir=str(tmp_path / "cache"), prefilter=prefilter)
    first = _found(run([str(root)], config, options))
    assert ("eval.py", "DEV005", 7, 14) in first
    utils = root / "utils.py"
    utils.write_text(utils.read_text().replace('from torch import nn\n', 'from torch import nn\n\n__all__ = ["build"]\n'))
    os.utime(utils, ns=(OLD + 10**9, OLD + 10**9))
    after = _found(run([str(root)], config, options))
    fresh = _found(run([str(root)], config, Options(select=options.select, jobs=1, prefilter=prefilter)))
    assert after == fresh
    assert ("eval.py", "DEV005", 7, 14) not in after


def test_the_same_bytes_elsewhere_are_another_result(tmp_path, reads):
    """The result of a file rests on where it is, not only on its bytes: the same script in the project's
    `gpu/` folder is GPU-only by that name, beside it at the root it is reported; and an edit of the conftest.py
    above a test module that makes it de-collect the module without CUDA re-lints the module."""
    src = tmp_path / "src"
    (src / "gpu").mkdir(parents=True)
    (src / "tests").mkdir()
    script = "import torch\n\nx = torch.zeros(3).cuda()\n"
    (src / "run.py").write_text(script)
    (src / "gpu" / "run.py").write_text(script)
    (src / "tests" / "test_run.py").write_text(script)
    (src / "tests" / "conftest.py").write_text("import torch\n")
    _age(src)
    options = Options(select={"DEV001"}, jobs=1, cache_dir=str(tmp_path / "cache"))
    config = Config(root=tmp_path)
    cold = [(os.path.relpath(f.path, src), f.start.row) for f in run([str(src)], config, options).findings]
    assert sorted(cold) == [("run.py", 3), (os.path.join("tests", "test_run.py"), 3)]
    warm = [(os.path.relpath(f.path, src), f.start.row) for f in run([str(src)], config, options).findings]
    assert sorted(warm) == sorted(cold)
    conftest = src / "tests" / "conftest.py"
    conftest.write_text("import torch\n\nif not torch.cuda.is_available():\n    collect_ignore_glob = ['test_*.py']\n")
    os.utime(conftest, ns=(OLD + 10**9, OLD + 10**9))
    after = [(os.path.relpath(f.path, src), f.start.row) for f in run([str(src)], config, options).findings]
    assert after == [("run.py", 3)]
