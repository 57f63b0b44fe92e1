"""One command for a rule's author: ``python tests/check_rule.py DEV005``.

Writes the rule's page (rules/DEV005.md, from its module), rewrites the expected findings and fixed text of
its fixtures (fixtures/DEV005/; read the diff before committing), then runs every test that concerns the
rule: its examples, its page, the pre-filter differential test, its fixtures and the fix oracle.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    code = argv[0].upper()
    from devlint.rules import all_rules

    rules = all_rules()
    if code not in rules:
        print(f"no rule {code}: add devlint/rules/{code.lower()}_<name>.py with a Rule subclass whose code is {code!r}")
        return 2
    (ROOT / "rules" / f"{code}.md").write_text(rules[code].page(), encoding="utf-8")
    print(f"wrote rules/{code}.md")
    if (ROOT / "fixtures" / code).is_dir():
        import fixturelib

        fixturelib.update()
        print("updated the fixtures' .expected / .fixed.py / .safe.py (read `git diff fixtures/`)")
    tests = ["tests/test_rule_examples.py", "tests/test_rule_pages.py", "tests/test_prefilter.py",
             "tests/test_fixtures.py", "tests/test_fix_oracle.py"]
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-k", code, *tests],
                           cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
