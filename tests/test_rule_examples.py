"""Every rule's own examples (its VALID / INVALID, as Fixit's rules carry them) are what it does: each VALID
module gets none of its findings, each INVALID gets at least one, and fixing it with the rule alone gives
exactly the expected text (or nothing, where the example has no fix)."""

from __future__ import annotations

import pytest

from devlint.compat import syntax_error
from devlint.engine import fix_text, lint_text
from devlint.rules import all_rules

CASES = [(code, kind, i) for code, cls in all_rules().items()
         for kind, examples in (("valid", cls.VALID), ("invalid", cls.INVALID)) for i in range(len(examples))]


def test_every_rule_has_examples():
    for code, cls in all_rules().items():
        assert len(cls.VALID) >= 3 and len(cls.INVALID) >= 3, code
        assert sum(e.doc for e in cls.INVALID) == 1, f"{code}: one INVALID example is the page's"
        assert any(e.fixed is not None for e in cls.INVALID) or cls.fix_availability.value == "none", code
        assert cls.evidence_type is not None


@pytest.mark.parametrize("code, kind, i", CASES, ids=[f"{c}-{k}-{i}" for c, k, i in CASES])
def test_example(code, kind, i):
    cls = all_rules()[code]
    rule = cls()
    if kind == "valid":
        example = cls.VALID[i]
        result = lint_text(example.code, "example.py", [rule])
        assert not result.crashes
        assert [f for f in result.findings if f.code == code] == [], example.code
        return
    example = cls.INVALID[i]
    result = lint_text(example.code, "example.py", [rule])
    assert not result.crashes
    found = [f for f in result.findings if f.code == code]
    assert found, f"{code} does not report:\n{example.code}"
    for finding in found:
        assert finding.name == cls.name
        assert isinstance(finding.evidence, cls.evidence_type)
    fixed = fix_text(example.code, "example.py", [rule], unsafe=True).text
    assert fixed == (example.fixed if example.fixed is not None else example.code)
    assert syntax_error(fixed) is None
