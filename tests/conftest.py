"""Shared test machinery: the CUDA skip; pytest-xdist by default and the order tests are handed out in; the
expensive set-ups computed once per session (worker): the devices `devlint verify` finds, and the runs of the
runnable fixtures before and after fixing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# --- parallel by default -------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads these options
def pytest_cmdline_main(config):
    """`python -m pytest` runs the tests on every core, as `-n auto --dist loadgroup` would, where
    pytest-xdist is installed (the `test` extra) and the command line does not choose otherwise: `-n N`
    (`-n 0`: in this process), `-p no:xdist`, `--pdb`/`--trace`, `--collect-only`, or only single tests
    named (`file::test`: not worth starting workers). Not in pyproject.toml's `addopts`: a `-n` there is an
    error wherever pytest-xdist is missing (.ci/run's Python 3.10 pass installs pytest alone). `loadgroup`
    keeps each `xdist_group` (tests sharing an expensive fixture) on one worker;
    `PYTEST_XDIST_AUTO_NUM_WORKERS` overrides the worker count."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    option = config.option
    if hasattr(config, "workerinput"):  # a worker: parsed the command line as given, so learns the mode here
        option.loadgroup = option.loadgroup or config.workerinput.get("devlint_dist") == "loadgroup"
        return
    named_tests_only = bool(config.args) and all("::" in arg for arg in config.args)
    if (option.numprocesses is None and option.dist == "no" and not option.collectonly and not named_tests_only
            and not option.usepdb and not getattr(option, "trace", False)):
        option.numprocesses = "auto"
    if option.numprocesses and option.dist == "no":
        option.dist = "loadgroup"


# `xdist_group` marks reach pytest-xdist 3.8's loadgroup scheduler as a suffix the workers add to each test's
# node id, which pytest 9.2's structured node ids ignore (pytest-xdist#1386): the groups would be silently
# split. The workers write their groups to a file instead, which the scheduler below reads (where the suffix
# does arrive, the base class handles it as before).
@pytest.hookimpl(optionalhook=True)  # pytest-xdist, on the controller, before each worker starts
def pytest_configure_node(node):
    config = node.config
    if not hasattr(config, "_devlint_groups"):
        import tempfile

        config._devlint_groups = tempfile.mkdtemp(prefix="devlint-xdist-groups-")
    node.workerinput["devlint_dist"] = config.option.dist
    node.workerinput["devlint_groups"] = config._devlint_groups


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # pytest-xdist, on the controller
def pytest_xdist_make_scheduler(config, log):
    if config.option.dist != "loadgroup" or not hasattr(config, "_devlint_groups"):
        return None
    from xdist.scheduler import LoadGroupScheduling

    class GroupsFromFiles(LoadGroupScheduling):
        groups: ClassVar[dict[str, str]] = {}

        def schedule(self):  # every worker has collected (and written its groups) by now
            self.groups = {}
            for path in Path(config._devlint_groups).glob("*.json"):
                self.groups.update(json.loads(path.read_text()))
            super().schedule()

        def _split_scope(self, nodeid):
            group = self.groups.get(nodeid)
            return f"xdist_group:{group}" if group else super()._split_scope(nodeid)

    return GroupsFromFiles(config, log)


def pytest_unconfigure(config):
    if hasattr(config, "_devlint_groups"):
        import shutil

        shutil.rmtree(config._devlint_groups, ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own (the node ids as the controller will see them)
def pytest_collection_modifyitems(config, items):
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        # Under xdist: the slow tests first (stable: file order otherwise), so that the last tests handed
        # out are short ones and no worker is left with a long test while the other idles.
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
        if worker.get("devlint_groups") and config.option.loadgroup:
            groups = {item.nodeid: "_".join(sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                                                    for m in item.iter_markers("xdist_group")}))
                      for item in items if item.get_closest_marker("xdist_group") is not None}
            Path(worker["devlint_groups"], worker["workerid"] + ".json").write_text(json.dumps(groups))
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


def _shared_dir(tmp_path_factory, name: str) -> Path:
    """A directory every xdist worker of this session sees (the parent of the workers' base temps)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    shared.mkdir(exist_ok=True)
    return shared


# --- devlint verify's targets ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def verify_targets():
    """The targets `devlint verify` finds on this machine. It asks a fresh interpreter (`import torch`,
    seconds) on every call; the answer cannot change during a session, so the tests ask once per worker
    (test_verify.py::test_targets_always_include_cpu_and_no_gpu checks the answer)."""
    pytest.importorskip("torch")
    from devlint import verify

    return verify.detect_targets()


@pytest.fixture
def targets_detected_once(verify_targets, monkeypatch):
    """`devlint verify` in this test answers its device question from `verify_targets`."""
    from devlint import verify

    monkeypatch.setattr(verify, "detect_targets", lambda timeout=120: list(verify_targets))


# --- the runnable fixtures, run before and after fixing ---------------------------------------------------
# One process imports torch once and forks a child per run (a fresh interpreter per script costs seconds
# of `import torch` each): the child chdirs, sends stdout/stderr to files, runs the script as __main__.
_RUNNER = textwrap.dedent(r'''
    import json, os, runpy, signal, sys, time, traceback
    import torch  # noqa: F401 - preloaded for every child
    jobs = json.load(open(sys.argv[1]))
    results = []
    for job in jobs:
        pid = os.fork()
        if pid == 0:
            try:
                os.chdir(job["cwd"])
                out = os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                err = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(out, 1)
                os.dup2(err, 2)
                sys.argv = [job["script"]]
                sys.path[0] = os.path.dirname(job["script"])
                code = 0
                try:
                    runpy.run_path(job["script"], run_name="__main__")
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                    if not isinstance(exc.code, (int, type(None))):
                        print(exc.code, file=sys.stderr)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(locals().get("code", 1))
        deadline = time.time() + job["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.time() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                rc = "timeout"
                break
            time.sleep(0.01)
        results.append(rc)
    print(json.dumps(results))
''')


def runnable_inputs() -> list[Path]:
    """Every fixture input and the demo (tests/test_fix_oracle.py's INPUTS)."""
    from fixturelib import FIXTURES, fixture_inputs

    return fixture_inputs() + sorted((FIXTURES / "demo").glob("*.py"))


def _run_all(base: Path, prefix: str = "") -> dict:
    """Each fixture input (under ``prefix``) run before and after `fix_text(unsafe=True)` in one preloaded
    torch."""
    from fixturelib import FIXTURES

    from devlint.engine import fix_text
    from devlint.rules import all_rules, select_rules

    rules = select_rules(set(all_rules()))
    jobs, meta = [], {}
    for src in runnable_inputs():
        name = str(src.relative_to(FIXTURES))
        if not name.startswith(prefix):
            continue
        text = src.read_text()
        fixed = fix_text(text, str(src), rules, unsafe=True)
        for stage, content in (("before", text), ("after", fixed.text)):
            cwd = base / name.replace("/", "_") / stage
            cwd.mkdir(parents=True, exist_ok=True)
            script = cwd / src.name
            script.write_text(content)
            jobs.append({"script": str(script), "cwd": str(cwd), "stdout": str(cwd / "stdout.txt"),
                         "stderr": str(cwd / "stderr.txt"), "timeout": 60})
        meta[name] = ([f.start.row for f in fixed.remaining.findings], len(jobs) - 2)
    listing = base / "jobs.json"
    listing.write_text(json.dumps(jobs))
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(listing)], capture_output=True, text=True,
                          timeout=60 * len(jobs) + 120)
    assert proc.returncode == 0, proc.stderr
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    out = {}
    for name, (left, i) in meta.items():
        before, after = ({"rc": codes[k], "stderr": Path(jobs[k]["stderr"]).read_text(errors="replace"),
                          "script": jobs[k]["script"]} for k in (i, i + 1))
        out[name] = {"left": left, "before": before, "after": after}
    return out


@pytest.fixture(scope="session")
def fixture_runs(tmp_path_factory):
    """name (path under fixtures/) -> {"before", "after": {"rc", "stderr", "script"}, "left": rows of the
    findings left after fixing}: every runnable fixture run as written and as `fix_text(unsafe=True)` leaves
    it, once per test session. Under xdist the first worker to ask runs them and the others wait for its
    results (a lock and a JSON file in the directory the workers share); the tests that read them are one
    `xdist_group`, so that normally a single worker asks. With CUDA, only the Colab scripts run (what
    test_scripts.py reads; test_fix_oracle.py's runs look for the errors of a machine without CUDA)."""
    torch = pytest.importorskip("torch")
    import fcntl

    shared = _shared_dir(tmp_path_factory, "devlint-fixture-runs")
    results = shared / "results.json"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not results.exists():
            results.write_text(json.dumps(_run_all(shared, "scripts/" if torch.cuda.is_available() else "")))
    return json.loads(results.read_text())

