"""`--shard K/N`: a stable split of the files across a CI matrix. The shards' findings together are exactly
the whole run's, also where a finding depends on another file of the project (the analyses across files see
every file, whichever shard lints it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from devlint.runner import in_shard

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"


def findings(*args: str) -> list[tuple[str, int, int, str]]:
    result = CliRunner().invoke(main, ["check", "--no-cache", "--exit-zero", "--output-format", "json", *args])
    assert result.exit_code == 0, result.output
    return sorted((f["filename"], f["location"]["row"], f["location"]["column"], f["code"])
                  for f in json.loads(result.output))


@pytest.mark.parametrize("n", [2, 3])
def test_shards_together_are_the_whole_run(monkeypatch, n):
    monkeypatch.chdir(PROJECTS)
    whole = findings(".")
    assert len({f[0] for f in whole}) >= 4  # several files with findings, some decided across files
    parts = [findings("--shard", f"{k}/{n}", ".") for k in range(1, n + 1)]
    assert sorted(f for part in parts for f in part) == whole
    files = [{f[0] for f in part} for part in parts]
    assert all(not (a & b) for i, a in enumerate(files) for b in files[i + 1:])  # each file in one shard


def test_the_split_is_a_stable_partition(tmp_path):
    paths = [str(tmp_path / f"pkg{i % 7}" / f"m{i}.py") for i in range(200)]
    shards = [[p for p in paths if in_shard(p, (k, 4), tmp_path)] for k in range(1, 5)]
    assert sorted(p for s in shards for p in s) == sorted(paths)
    assert all(20 <= len(s) <= 80 for s in shards)  # no shard empty or holding most files
    # the same file lands in the same shard wherever the checkout is (the path relative to the root decides)
    other = tmp_path / "elsewhere"
    moved = [[p for p in paths if in_shard(str(other / Path(p).relative_to(tmp_path)), (k, 4), other)]
             for k in range(1, 5)]
    assert [len(s) for s in moved] == [len(s) for s in shards]


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"])
def test_a_bad_shard_is_a_usage_error(tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--shard", value, "."])
    assert result.exit_code == 2
    assert "--shard" in result.output and "K/N" in result.output


def test_the_top_level_command_takes_it(monkeypatch):
    monkeypatch.chdir(PROJECTS)
    result = CliRunner().invoke(main, ["--no-cache", "--exit-zero", "--output-format", "json", "--shard", "1/2", "."])
    assert result.exit_code == 0, result.output
    assert {tuple(x) for x in [(f["filename"], f["location"]["row"], f["location"]["column"], f["code"])
                               for f in json.loads(result.output)]} == set(findings("--shard", "1/2", "."))
