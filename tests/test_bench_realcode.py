"""bench/realcode.py's scoring without the network: a crashed rule stops the benchmark (its findings would be
dropped and the score silently wrong), and labels are scored as the README says."""

from __future__ import annotations

import pytest
from benchload import load_bench

rc = load_bench("realcode")


def test_lint_reports_findings_relative_to_the_root(tmp_path):
    (tmp_path / "train.py").write_text('import torch\nx = torch.zeros(2).cuda()\n')
    assert [(p, n, c) for p, n, c, _ in rc.lint(tmp_path, 1)] == [("train.py", 2, "DEV001")]


def test_a_crashed_rule_stops_the_benchmark(tmp_path, monkeypatch):
    from devlint.rules.dev001_hardcoded_cuda import HardcodedCuda

    def boom(self, ctx):
        raise RuntimeError("broken rule")

    monkeypatch.setattr(HardcodedCuda, "check", boom)
    (tmp_path / "train.py").write_text('import torch\nx = torch.zeros(2).cuda()\n')
    with pytest.raises(SystemExit, match=r"train\.py.*DEV001 crashed"):
        rc.lint(tmp_path, 1)


def test_score_counts_bugs_oks_misses_and_unlabelled():
    label = rc.Label
    labels = [label("a.py", 1, "DEV001", "bug", ""), label("a.py", 2, "DEV001", "ok", ""),
              label("a.py", 3, "DEV001", "bug", "")]
    findings = [("a.py", 1, "DEV001", "m"), ("a.py", 2, "DEV001", "m"), ("a.py", 9, "DEV001", "m")]
    t = rc.score(findings, labels)["DEV001"]
    assert (t.tp, t.fp, t.fn, t.unlabelled) == (1, 1, 1, 1)
    assert t.precision == 0.5 and t.recall == 0.5
