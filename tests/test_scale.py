"""The speed machinery never changes what devlint reports: pre-filter, results cache, process pool."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from devlint.config import Config
from devlint.rules import all_rules
from devlint.runner import Options, run

ROOT = Path(__file__).resolve().parent.parent


def _key(result):
    return sorted((f.path, f.start, f.end, f.code, f.message, f.fix) for f in result.findings)


@pytest.fixture
def tree(tmp_path):
    dst = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", dst)
    (dst / "broken_py2.py").write_text('import torch\nprint "cuda"\n')
    return dst


def test_same_findings_with_and_without_prefilter_cache_and_pool(tree, tmp_path):
    config = Config(root=tmp_path)
    codes = set(all_rules())
    baseline = run([str(tree)], config, Options(select=codes, prefilter=False, jobs=1))
    assert len(baseline.findings) > 100
    cache = str(tmp_path / "cache")
    variants = [
        Options(select=codes, prefilter=True, jobs=1),
        Options(select=codes, prefilter=True, jobs=2),
        Options(select=codes, prefilter=True, jobs=2, cache_dir=cache),  # cold: fills the cache
        Options(select=codes, prefilter=True, jobs=1, cache_dir=cache),  # warm: served from it
        Options(select=codes, prefilter=False, jobs=2, cache_dir=cache),
    ]
    for options in variants:
        assert _key(run([str(tree)], config, options)) == _key(baseline), options
    assert any(Path(cache).rglob("*.json"))


def test_cache_is_never_stale(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "train.py"
    src.write_text("import torch\nx = torch.zeros(1).cuda()\n")
    runner = CliRunner()
    first = runner.invoke(main, ["-q", "train.py"])
    assert "DEV001" in first.output
    assert any((tmp_path / ".devlint_cache").rglob("*.json"))
    # an edit
    src.write_text("import torch\nx = torch.zeros(1)\nw = torch.ones(1, requires_grad=True)\nw.numpy()\n")
    second = runner.invoke(main, ["-q", "train.py"])
    assert [l.split()[1] for l in second.output.splitlines()] == ["DEV002"]
    # a config change
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nignore = ["DEV002"]\n')
    assert runner.invoke(main, ["-q", "train.py"]).output == ""
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nper-file-ignores = { "other.py" = ["DEV002"] }\n')
    assert "DEV002" in runner.invoke(main, ["-q", "train.py"]).output
    # --no-cache writes nothing
    shutil.rmtree(tmp_path / ".devlint_cache")
    runner.invoke(main, ["-q", "--no-cache", "train.py"])
    assert not (tmp_path / ".devlint_cache").exists()
    # --cache-dir puts it elsewhere
    runner.invoke(main, ["-q", "--cache-dir", str(tmp_path / "elsewhere"), "train.py"])
    assert any((tmp_path / "elsewhere").rglob("*.json"))


def test_prefilter_triggers_cover_every_fixture_finding(tree, tmp_path):
    """Each finding's rule trigger matches its file: the pre-filter cannot hide a finding devlint makes."""
    config = Config(root=tmp_path)
    rules = all_rules()
    result = run([str(tree)], config, Options(select=set(rules), prefilter=False, jobs=1))
    for f in result.findings:
        if f.code in rules:
            assert rules[f.code].triggers.search(Path(f.path).read_bytes()), (f.path, f.code)
