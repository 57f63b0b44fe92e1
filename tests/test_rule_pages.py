"""rules/CODE.md is exactly what `devlint rule CODE` prints. Regenerate with
``python tests/test_rule_pages.py --update``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from devlint.rules import all_rules
from devlint.rules.base import PAGE_SECTIONS

PAGES = Path(__file__).resolve().parent.parent / "rules"


def test_every_rule_has_a_page_and_no_page_is_orphaned():
    assert sorted(p.stem for p in PAGES.glob("*.md")) == sorted(all_rules())


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_page_matches_devlint_rule(code):
    result = CliRunner().invoke(main, ["rule", code])
    assert result.exit_code == 0
    assert result.output == (PAGES / f"{code}.md").read_text(encoding="utf-8")
    # one template, ruff's sections, in order, none empty
    headings = [line[3:] for line in result.output.splitlines() if line.startswith("## ")]
    assert headings == list(PAGE_SECTIONS)
    for title, body in zip(PAGE_SECTIONS, result.output.split("\n## ")[1:], strict=True):
        assert body.split("\n", 1)[1].strip(), f"{code}: empty section {title}"


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_page_example_is_the_rules_own(code):
    """"Example" / "Use instead" come from the rule's examples: the marked INVALID and its fix."""
    cls = all_rules()[code]
    example = cls.doc_example()
    page = cls.page()
    assert f"## Example\n```python\n{example.code.rstrip()}\n```" in page
    instead = example.fixed if example.fixed is not None else example.use_instead
    assert instead is not None
    assert f"## Use instead\n```python\n{instead.rstrip()}\n```" in page


def test_rule_code_is_case_insensitive_and_unknown_is_an_error():
    runner = CliRunner()
    assert runner.invoke(main, ["rule", "dev003"]).output == (PAGES / "DEV003.md").read_text(encoding="utf-8")
    bad = runner.invoke(main, ["rule", "DEV999"])
    assert bad.exit_code == 2
    assert "unknown rule 'DEV999'" in bad.output


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    for code, cls in all_rules().items():
        (PAGES / f"{code}.md").write_text(cls.page(), encoding="utf-8")
