"""Packaging and CI: the version, LICENSE and CHANGELOG, and the GitHub Action (action.yml), whose shell steps
run here as the runner would run them (the `${{ ... }}` expressions substituted, GITHUB_OUTPUT and friends
set) on a scratch repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # pyyaml: a dependency of pre-commit (the test extra)
from click.testing import CliRunner

from devlint import __version__
from devlint.cli import main
from devlint.rules import all_rules

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output == "devlint 0.2.0\n"
    assert __version__ == "0.2.0"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "devlint.__version__"}


def test_license_is_the_declared_mit():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 devlint contributors\n")
    assert "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND" in text


def test_changelog_names_this_version_and_every_rule():
    text = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.MULTILINE)
    assert versions[:2] == ["Unreleased", __version__]
    assert "0.1.0" in versions
    for code, cls in all_rules().items():
        assert f"{code} `{cls.name}`" in text, code


def test_verify_extra_installs_numpy_with_torch():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert [re.split(r"[<>=;\s\[]", r)[0] for r in extras["verify"]] == ["torch", "numpy"]


# --- the GitHub Action ------------------------------------------------------------------------------------
def test_action_is_composite_with_its_inputs():
    assert ACTION["runs"]["using"] == "composite"
    inputs = ACTION["inputs"]
    assert {k: v.get("default") for k, v in inputs.items()} == {
        "args": ".", "version": "", "sarif-file": "devlint.sarif", "upload-sarif": "true", "python": "python3"}
    steps = ACTION["runs"]["steps"]
    assert [s["name"] for s in steps] == ["Install devlint", "Run devlint", "Upload SARIF to code scanning",
                                          "Fail on findings"]
    upload = steps[2]
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3"
    assert upload["if"] == "inputs.upload-sarif == 'true'"
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    assert steps[3]["if"] == "steps.run.outputs.exit-code != '0'"  # the exit status, after the upload
    assert all(s["shell"] == "bash" for s in steps if "run" in s)


_EXPR = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")
_CONDITION = re.compile(r"([\w.-]+) (==|!=) '([^']*)'")


class Runner:
    """What GitHub's runner does with a composite action's steps, for the forms action.yml uses: `${{ x.y }}`
    substitution, `if: a == 'b'` / `!=`, `run:` as `bash --noprofile --norc -eo pipefail FILE` with
    GITHUB_OUTPUT read back as the step's outputs; a `uses:` step is recorded, not run."""

    def __init__(self, workspace: Path, temp: Path, inputs: dict[str, str]) -> None:
        self.temp = temp
        self.context = {f"inputs.{k}": str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
        self.context.update({f"inputs.{k}": v for k, v in inputs.items()})
        self.context.update({"github.action_path": str(ROOT), "github.workspace": str(workspace),
                             "runner.temp": str(temp)})
        self.log: list[tuple[str, object]] = []

    def expand(self, text: str) -> str:
        return _EXPR.sub(lambda m: self.context.get(m.group(1), ""), text)

    def wanted(self, step: dict) -> bool:
        if "if" not in step:
            return True
        name, op, value = _CONDITION.fullmatch(step["if"]).groups()
        return (self.context.get(name, "") == value) == (op == "==")

    def run(self, steps: list[dict]) -> int:
        """Run ``steps``; the job's exit status (the first failing step's)."""
        for step in steps:
            if not self.wanted(step):
                self.log.append((step["name"], "skipped"))
                continue
            if "uses" in step:
                self.log.append((step["name"], {k: self.expand(str(v)) for k, v in step["with"].items()}))
                continue
            status = self._shell(step)
            self.log.append((step["name"], status))
            if status:
                return status
        return 0

    def _shell(self, step: dict) -> int:
        script = self.temp / "step.sh"
        script.write_text(self.expand(step["run"]))
        output = self.temp / "output"
        output.write_text("")
        env = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_WORKSPACE": self.context["github.workspace"],
               "RUNNER_TEMP": str(self.temp), **{k: self.expand(v) for k, v in step.get("env", {}).items()}}
        cwd = self.expand(step.get("working-directory", "${{ github.workspace }}"))
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
        self.log.append((step["name"] + " output", proc.stdout + proc.stderr))
        for line in output.read_text().splitlines():
            key, _, value = line.partition("=")
            self.context[f"steps.{step.get('id')}.outputs.{key}"] = value
        return proc.returncode


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "src dir").mkdir(parents=True)
    (ws / "src dir" / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    (ws / "clean.py").write_text("import torch\nx = torch.zeros(2)\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    return ws


@pytest.mark.slow  # pip installs the action's own copy of devlint into a fresh virtual environment
def test_action_writes_sarif_uploads_it_and_fails_on_findings(tmp_path):
    ws = _workspace(tmp_path)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    steps = ACTION["runs"]["steps"]
    runner = Runner(ws, temp, {"args": "'src dir/train.py' clean.py --select DEV001", "python": sys.executable})
    assert runner.run(steps) == 1, runner.log
    log = dict(runner.log)
    assert log["Install devlint"] == 0 and log["Run devlint"] == 0
    assert f"devlint {__version__}" in log["Install devlint output"]
    assert log["Upload SARIF to code scanning"] == {"sarif_file": "devlint.sarif", "category": "devlint"}
    assert log["Fail on findings"] == 1
    assert runner.context["steps.run.outputs.exit-code"] == "1"
    sarif = json.loads((ws / "devlint.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("DEV001", "src%20dir/train.py", 2)]  # relative to the checkout, as code scanning wants
    assert not (ws / ".devlint_cache").exists()  # the cache lives in the runner's temp, not the checkout

    # the same devlint, a clean tree, no upload: exit 0, the last steps skipped
    installed = runner.context["steps.install.outputs.devlint"]
    (ws / "src dir" / "train.py").write_text("import torch\nx = torch.zeros(2)\n")
    again = Runner(ws, temp, {"upload-sarif": "false", "sarif-file": "out/report.sarif"})
    again.context["steps.install.outputs.devlint"] = installed
    (ws / "out").mkdir()
    assert again.run(steps[1:]) == 0, again.log
    log = dict(again.log)
    assert log["Upload SARIF to code scanning"] == "skipped" and log["Fail on findings"] == "skipped"
    assert json.loads((ws / "out" / "report.sarif").read_text())["runs"][0]["results"] == []

    # a usage error (exit 2) fails the run step itself: nothing to upload
    broken = Runner(ws, temp, {"args": "--select NOPE"})
    broken.context["steps.install.outputs.devlint"] = installed
    assert broken.run(steps[1:]) == 2
    assert [name for name, _ in broken.log if not name.endswith("output")] == ["Run devlint"]


def test_action_args_are_split_not_evaluated(tmp_path):
    """The args input goes through shlex, never through the shell: `$(...)` is a path, not a command."""
    ws = _workspace(tmp_path)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    fake = temp / "bin"
    fake.mkdir()
    (fake / "python").symlink_to(sys.executable)
    (fake / "devlint").write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$RUNNER_TEMP/argv\"\n")
    (fake / "devlint").chmod(0o755)
    marker = tmp_path / "ran"
    runner = Runner(ws, temp, {"args": f"\"a b.py\" $(touch {marker}) 'c'"})
    runner.context["steps.install.outputs.devlint"] = str(fake / "devlint")
    assert runner.run(ACTION["runs"]["steps"][1:2]) == 0, runner.log
    assert (temp / "argv").read_text().splitlines() == [
        "check", "--output-format", "sarif", "a b.py", "$(touch", f"{marker})", "c"]
    assert not marker.exists()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_readme_shows_the_action_workflow():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## GitHub Action\n.*?```yaml\n(.*?)```", text, re.DOTALL)
    assert block is not None
    workflow = yaml.safe_load(block.group(1))
    job = next(iter(workflow["jobs"].values()))
    assert job["permissions"]["security-events"] == "write"
    uses = [s for s in job["steps"] if "devlint" in s.get("uses", "")]
    assert len(uses) == 1 and set(uses[0].get("with", {})) <= set(ACTION["inputs"])
