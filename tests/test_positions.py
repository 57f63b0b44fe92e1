"""devlint.positions gives every node the CodeRange LibCST's PositionProvider gives it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from libcst.metadata import MetadataWrapper, PositionProvider

from devlint.positions import Positions

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in (ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "devlint").rglob("*.py"))


def mismatches(source: str) -> list[tuple[str, object, object]]:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = Positions(module)
    return [(type(node).__name__, want, got[node]) for node, want in expected.items() if got[node] != want]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_same_as_position_provider_on_real_files(path):
    assert mismatches(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("source", [
    "import torch\r\nx = torch.zeros(3).cuda()\r\n",  # CRLF
    "import torch\rx = torch.zeros(3)\rx.cuda()\r",  # CR only
    "x = 1\r\ny = 2\nz = (3,\r\n     4)\r",  # mixed
    "def f():\n\tif x:\n\t\treturn 'cuda'\n\treturn \\\n\t\t'cpu'\n",  # tabs, a backslash continuation
    "\ufeffx = 'é' + '\\u00e9'  # ünïcödé\n",  # a BOM kept in the text, non-ASCII
    "x = 1\n\x0cdef f():\n    pass\n",  # a form feed
    "",  # empty
    "# only a comment, no newline at the end",
    'x = f"cuda:{i}" \\\n    f"{j!r:>{w}}"\n',
    "class A:\n    def f(self):\n        '''doc\n\n        more'''\n        return (yield)\n\n\n",
])
def test_same_as_position_provider_on_odd_sources(source):
    assert mismatches(source) == []


hypothesmith = pytest.importorskip("hypothesmith")


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles what it generates
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_same_as_position_provider_on_generated_programs(source):
    try:
        cst.parse_module(source)
    except Exception:  # noqa: BLE001 - the generator makes programs LibCST may refuse
        return
    assert mismatches(source) == []
