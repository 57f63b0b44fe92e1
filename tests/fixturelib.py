"""Fixture files: ``fixtures/**/NAME.py`` (under ``fixtures/projects/P/``, linted as one project) with ``NAME.expected`` (one ``line:col CODE`` a line, the findings
devlint must report) and, where a fix changes the file, ``NAME.fixed.py`` (the text after
``devlint --fix --unsafe-fixes``). ``python tests/fixturelib.py --update`` rewrites them from the current
behaviour; read the diff before committing it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# Python source that makes `import torch` fail, for tests of devlint without torch.
BLOCK_TORCH = textwrap.dedent('''
    import sys

    class _NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch' (blocked by the test)")
            return None

    sys.meta_path.insert(0, _NoTorch())
''')



def fixture_inputs() -> list[Path]:
    return sorted(
        p for p in FIXTURES.rglob("*.py")
        if not p.name.endswith((".fixed.py", ".safe.py")) and "demo" not in p.parts
    )


def expected_path(src: Path) -> Path:
    return src.with_suffix(".expected")


def fixed_path(src: Path) -> Path:
    return src.with_name(src.stem + ".fixed.py")


def project_of(src: Path):  # type: ignore[no-untyped-def]
    """The project a fixture belongs to: under ``fixtures/projects/NAME/`` the files of NAME (imports between
    them are resolved, as in a run over that folder); elsewhere none (the file alone)."""
    from devlint.project import Project

    parts = src.relative_to(FIXTURES).parts
    if parts[0] != "projects":
        return None
    root = FIXTURES / parts[0] / parts[1]
    return Project(str(p) for p in root.rglob("*.py") if not p.name.endswith((".fixed.py", ".safe.py")))


def findings_lines(src: Path) -> list[str]:
    from devlint.engine import lint_text
    from devlint.rules import all_rules, select_rules
    from devlint.source import read_source

    _, source = read_source(str(src))
    result = lint_text(source.text, str(src), select_rules(set(all_rules())), project=project_of(src))
    assert not result.crashes, result.crashes
    return [f"{f.start.row}:{f.start.column} {f.code}" for f in result.findings]


def safe_path(src: Path) -> Path:
    return src.with_name(src.stem + ".safe.py")


def fixed_text(src: Path, unsafe: bool = True) -> str:
    from devlint.engine import fix_text
    from devlint.rules import all_rules, select_rules
    from devlint.source import read_source

    _, source = read_source(str(src))
    return fix_text(source.text, str(src), select_rules(set(all_rules())), unsafe=unsafe, project=project_of(src)).text


def update() -> None:
    for src in fixture_inputs():
        lines = findings_lines(src)
        expected_path(src).write_text("".join(line + "\n" for line in lines))
        text = fixed_text(src)
        original = src.read_text()
        safe = fixed_text(src, unsafe=False)
        for path, content, keep in (
            (fixed_path(src), text, text != original),
            (safe_path(src), safe, safe not in (original, text)),
        ):
            if keep:
                path.write_text(content)
            elif path.exists():
                path.unlink()


# --- notebooks: fixtures/notebooks/NAME.ipynb, NAME.expected (``cell:line:col CODE``), NAME.fixed.ipynb and
# NAME.safe.ipynb (the file after --fix --unsafe-fixes / --fix, where it changes) ----------------------------
NOTEBOOKS = FIXTURES / "notebooks"


def notebook_inputs() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.endswith((".fixed.ipynb", ".safe.ipynb")))


def notebook_fixed_path(src: Path, unsafe: bool = True) -> Path:
    return src.with_name(src.stem + (".fixed.ipynb" if unsafe else ".safe.ipynb"))


def notebook_findings_lines(src: Path) -> list[str]:
    from devlint.config import Config
    from devlint.rules import all_rules
    from devlint.runner import Options, run

    result = run([str(src)], Config(root=FIXTURES), Options(select=set(all_rules())))
    assert not result.crashes, result.crashes
    return [f"{f.cell}:{f.start.row}:{f.start.column} {f.code}" for f in sorted(result.findings, key=lambda f: f.sort_key)]


def notebook_fixed_bytes(src: Path, unsafe: bool = True) -> bytes:
    """The notebook's bytes after ``devlint --fix`` (``--unsafe-fixes`` too when ``unsafe``), on a copy."""
    import shutil
    import tempfile

    from devlint.config import Config
    from devlint.rules import all_rules
    from devlint.runner import Options, run

    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / src.name
        shutil.copy(src, copy)
        result = run([str(copy)], Config(root=Path(scratch)), Options(select=set(all_rules()), fix=True,
                                                                       unsafe_fixes=unsafe))
        assert not result.crashes, result.crashes
        return copy.read_bytes()


def update_notebooks() -> None:
    for src in notebook_inputs():
        expected_path(src).write_text("".join(line + "\n" for line in notebook_findings_lines(src)))
        original = src.read_bytes()
        full, safe = notebook_fixed_bytes(src), notebook_fixed_bytes(src, unsafe=False)
        for path, content, keep in ((notebook_fixed_path(src), full, full != original),
                                    (notebook_fixed_path(src, unsafe=False), safe, safe not in (original, full))):
            if keep:
                path.write_bytes(content)
            elif path.exists():
                path.unlink()


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        update()
        update_notebooks()
    else:
        print(__doc__)
