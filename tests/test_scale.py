"""The speed machinery never changes what devlint reports: pre-filter, results cache, process pool."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import IMPORTS, SIMPLE, generated_program

from devlint import notebook
from devlint.cache import Cache
from devlint.cli import main
from devlint.config import Config
from devlint.engine import lint_text
from devlint.project import Project
from devlint.rules import all_rules, select_rules
from devlint.runner import Options, applicable, run

ROOT = Path(__file__).resolve().parent.parent


def _key(result):
    return sorted((f.path, f.start, f.end, f.code, f.message, f.fix) for f in result.findings)


@pytest.fixture
def tree(tmp_path):
    dst = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", dst)
    (dst / "broken_py2.py").write_text('import torch\nprint "cuda"\n')
    return dst


def test_same_findings_with_and_without_prefilter_cache_and_pool(tree, tmp_path):
    config = Config(root=tmp_path)
    codes = set(all_rules())
    baseline = run([str(tree)], config, Options(select=codes, prefilter=False, jobs=1))
    assert len(baseline.findings) > 100
    cache = str(tmp_path / "cache")
    variants = [
        Options(select=codes, prefilter=True, jobs=1),
        Options(select=codes, prefilter=True, jobs=2),
        Options(select=codes, prefilter=True, jobs=2, cache_dir=cache),  # cold: fills the cache
        Options(select=codes, prefilter=True, jobs=1, cache_dir=cache),  # warm: served from it
        Options(select=codes, prefilter=False, jobs=2, cache_dir=cache),
    ]
    for options in variants:
        assert _key(run([str(tree)], config, options)) == _key(baseline), options
    assert any(Path(cache).rglob("*.json"))


def test_cache_is_never_stale(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "train.py"
    src.write_text("import torch\nx = torch.zeros(1).cuda()\n")
    runner = CliRunner()
    first = runner.invoke(main, ["-q", "train.py"])
    assert "DEV001" in first.output
    assert any((tmp_path / ".devlint_cache").rglob("*.json"))
    # an edit
    src.write_text("import torch\nx = torch.zeros(1)\nw = torch.ones(1, requires_grad=True)\nw.numpy()\n")
    second = runner.invoke(main, ["-q", "train.py"])
    assert [line.split()[1] for line in second.output.splitlines()] == ["DEV002"]
    # a config change
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nignore = ["DEV002"]\n')
    assert runner.invoke(main, ["-q", "train.py"]).output == ""
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nper-file-ignores = { "other.py" = ["DEV002"] }\n')
    assert "DEV002" in runner.invoke(main, ["-q", "train.py"]).output
    # --no-cache writes nothing
    shutil.rmtree(tmp_path / ".devlint_cache")
    runner.invoke(main, ["-q", "--no-cache", "train.py"])
    assert not (tmp_path / ".devlint_cache").exists()
    # --cache-dir puts it elsewhere
    runner.invoke(main, ["-q", "--cache-dir", str(tmp_path / "elsewhere"), "train.py"])
    assert any((tmp_path / "elsewhere").rglob("*.json"))


def test_cache_directory_is_marked_and_kept_out_of_git(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], check=True)
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    assert CliRunner().invoke(main, ["-q", "train.py"]).exit_code == 1
    cache = tmp_path / ".devlint_cache"
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".devlint_cache", ".git", "train.py"]
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True,
                            text=True, check=True).stdout
    assert status == "?? train.py\n"


def test_cache_merges_concurrent_saves_and_drops_stale_entries(tmp_path):
    finding = lint_text("import torch\nx = torch.zeros(1).cuda()\n", "a.py", select_rules({"DEV001"})).findings
    first, second = Cache(str(tmp_path)), Cache(str(tmp_path))
    first.put("k1", finding)
    second.put("k2", [])
    first.save()
    second.save()  # does not lose k1, saved meanwhile by another run
    loaded = Cache(str(tmp_path))
    assert loaded.get("k1", "b.py")[0].path == "b.py" and loaded.get("k1", "b.py")[0].code == "DEV001"
    assert loaded.get("k2", "c.py") == []
    assert loaded.get("k3", "c.py") is None
    loaded.entries["k1"][0] = loaded.today - Cache.KEEP_DAYS - 1  # unused for longer than KEEP_DAYS
    loaded.put("k4", [])
    loaded.save()
    assert set(Cache(str(tmp_path)).entries) == {"k2", "k4"}


def _save_entries(directory: str, worker: int, barrier) -> None:
    for round_ in range(3):
        cache = Cache(directory)
        for i in range(2000):
            cache.put(f"w{worker}-{round_}-{i}", [])
        barrier.wait()  # every process saves at the same moment
        cache.save()


@pytest.mark.slow  # six processes started with `spawn`
def test_concurrent_runs_keep_each_others_cache_entries(tmp_path):
    """pre-commit starts several devlint processes at once; their saves are serialised and merged."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(6)
    procs = [ctx.Process(target=_save_entries, args=(str(tmp_path), w, barrier)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    saved = set(Cache(str(tmp_path)).entries)
    assert saved == {f"w{w}-{r}-{i}" for w in range(6) for r in range(3) for i in range(2000)}


def test_run_answered_from_the_cache_does_not_import_libcst(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    script = (
        "import sys\nfrom devlint.cli import main\n"
        "try:\n    main(['-q', '--cache-dir', 'c', 'train.py'])\nexcept SystemExit as e:\n    code = e.code\n"
        "print(code, 'libcst' in sys.modules)\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
            for _ in range(2)]
    assert [r.stdout.splitlines()[-1] for r in runs] == ["1 True", "1 False"], [r.stderr for r in runs]
    assert runs[0].stdout.splitlines()[:-1] == runs[1].stdout.splitlines()[:-1]  # the same report


def test_prefilter_triggers_cover_every_fixture_finding(tree, tmp_path):
    """Each finding's rule trigger matches its file: the pre-filter cannot hide a finding devlint makes."""
    config = Config(root=tmp_path)
    rules = all_rules()
    result = run([str(tree)], config, Options(select=set(rules), prefilter=False, jobs=1))
    project = Project(str(p) for p in tree.rglob("*.py"))  # the run's files, as the runner gives the screen
    checked = 0
    for f in result.findings:
        if f.code in rules:
            data = Path(f.path).read_bytes()
            if notebook.is_notebook(f.path):  # the pre-filter sees a notebook's code, not its JSON
                data = notebook.parsed(notebook.parse(data))[0].text.encode()
            assert rules[f.code].triggers.search(data), (f.path, f.code)
            assert f.code in {r.code for r in applicable(data, select_rules({f.code}), project, f.path)}, (f.path, f.code)
            checked += 1
    assert checked > 100


# --- generated programs: the pre-filter (byte triggers + ast screen) never hides a finding --------------
def _screened_rules_find_nothing(text: str, count: bool = False) -> tuple[int, int]:
    """The rules the pre-filter drops for ``text`` find nothing in it when run anyway (so the findings with
    and without the pre-filter are the same). Returns (findings of all rules if ``count``, rules dropped).
    With ``count`` every rule runs once (what devlint runs without the pre-filter) and none of the findings
    may be a dropped rule's; without, only the dropped rules run."""
    rules = select_rules(set(all_rules()))
    kept = {r.code for r in applicable(text.encode(), rules)}
    dropped = [r for r in rules if r.code not in kept]
    found = 0
    if count:
        findings = lint_text(text, "<generated>", rules).findings
        found = len(findings)
        hidden = [f for f in findings if f.code in {r.code for r in dropped}]
    else:
        hidden = lint_text(text, "<generated>", dropped).findings if dropped else []
    assert not hidden, (text, [(f.code, f.start, f.message) for f in hidden])
    return found, len(dropped)


@pytest.mark.slow  # a corpus of 400 generated programs
def test_prefilter_never_hides_a_finding_in_generated_programs():
    rng = random.Random(20261122)
    findings = screened_out = 0
    for _ in range(400):
        found, dropped = _screened_rules_find_nothing(generated_program(rng), count=True)
        findings += found
        screened_out += dropped
    # the programs exercise both sides: many findings, and many rules skipped by the pre-filter
    assert findings > 400 and screened_out > 400, (findings, screened_out)


# the scope shapes provenance.py distinguishes: the module's top level, a function, a method, an async
# function, a lambda (one test each, so that xdist can share them out)
SHAPES = {"module": "{a}\n{b}", "function": "{a}\ndef g(x):\n    {b}",
          "both-in-function": "def g(x):\n    {a}\n    {b}",
          "method": "{a}\nclass Net(nn.Module):\n    def forward(self, x):\n        {b}",
          "async": "{a}\nasync def g(x):\n    {b}",
          "class-body": "class C:\n    {a}\n    def m(self):\n        {b}",
          "lambda": "{a}\nf = lambda x: {b_expr}"}


@pytest.mark.slow  # every statement with every .numpy() use: hundreds of programs a shape
@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
def test_prefilter_scopes_pairwise(shape):
    """Every statement as evidence, with every .numpy() statement, in each scope shape."""
    imports = "\n".join(IMPORTS)
    numpy_uses = [s for s in SIMPLE if ".numpy(" in s]
    dropped = 0
    for a in SIMPLE:
        for b in numpy_uses:
            text = f"{imports}\n" + shape.format(a=a, b=b, b_expr=b.split(" = ", 1)[-1]) + "\n"
            dropped += _screened_rules_find_nothing(text)[1]
    assert dropped > 150, dropped  # per shape (> 1,050 over the seven: once > 1,000 over them all)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_prefilter_never_hides_a_finding_hypothesis(rnd):
    _screened_rules_find_nothing(generated_program(rnd))
