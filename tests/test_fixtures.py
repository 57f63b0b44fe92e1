"""Every fixture file: exact findings (line, column, code), exact fixed text, idempotent, parses."""

from __future__ import annotations

import libcst as cst
import pytest
from fixturelib import (
    FIXTURES,
    expected_path,
    findings_lines,
    fixed_path,
    fixed_text,
    fixture_inputs,
    project_of,
    safe_path,
)

from devlint.engine import fix_text
from devlint.rules import all_rules, select_rules

INPUTS = fixture_inputs()
IDS = [str(p.relative_to(FIXTURES)) for p in INPUTS]


def test_fixture_set_is_complete():
    # every rule has fixtures that report it, and every fixture has its expected findings
    assert len(INPUTS) >= 20
    reported = set()
    for src in INPUTS:
        assert expected_path(src).exists(), f"{src} has no .expected file"
        reported |= {line.split()[1] for line in expected_path(src).read_text().splitlines()}
    assert set(all_rules()) <= reported


@pytest.mark.parametrize("src", INPUTS, ids=IDS)
def test_findings(src):
    expected = expected_path(src).read_text().splitlines()
    assert findings_lines(src) == expected


@pytest.mark.parametrize("src", INPUTS, ids=IDS)
def test_fixed_output(src):
    original = src.read_text()
    want = fixed_path(src).read_text() if fixed_path(src).exists() else original
    got = fixed_text(src)
    assert got == want
    cst.parse_module(got)  # a fix never writes code that does not parse
    # idempotent: fixing the fixed text changes nothing
    again = fix_text(got, str(src), select_rules(set(all_rules())), unsafe=True, project=project_of(src))
    assert again.text == got
    assert again.fixed == []


@pytest.mark.parametrize("src", INPUTS, ids=IDS)
def test_safe_fixes_only(src):
    original = src.read_text()
    # without a .safe.py, safe fixes alone give either the original text or the full fixed text
    want = safe_path(src).read_text() if safe_path(src).exists() else None
    got = fixed_text(src, unsafe=False)
    if want is not None:
        assert got == want
    else:
        full = fixed_path(src).read_text() if fixed_path(src).exists() else original
        assert got in (original, full)
