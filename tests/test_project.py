"""The project (devlint/project.py): a parsed file dropped from its cache leaves nothing behind for the garbage
collector (its shared analyses, which hold it, are released once the file being linted is done), and the index
of calls finds the files a scan finds."""

from __future__ import annotations

import gc
import weakref

from devlint import runner
from devlint.config import Config
from devlint.context import Context
from devlint.rules import all_rules

HELPER = "import torch\n\ndef setup():\n    if not torch.cuda.is_available():\n        raise SystemExit('GPU')\n"
MAIN = ("import torch\nfrom helper{i} import setup\n\ndef main():\n    setup()\n    x = torch.zeros(3).cuda()\n"
        "    return x.numpy()\n")


def test_evicted_contexts_are_freed_without_the_collector(tmp_path, monkeypatch):
    files = []
    for i in range(6):
        (tmp_path / f"helper{i}.py").write_text(HELPER)
        (tmp_path / f"main{i}.py").write_text(MAIN.format(i=i))
        files.append(str(tmp_path / f"main{i}.py"))
    made: list[weakref.ref[Context]] = []
    real_init = Context.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(Context, "__init__", init)
    monkeypatch.setattr(runner, "_PROJECT", None)
    runner._init_worker(files + [str(tmp_path / f"helper{i}.py") for i in range(6)])
    monkeypatch.setattr(runner._PROJECT, "MAX_CONTEXTS", 2)  # every file evicts the ones before
    options = runner.Options(select=set(all_rules()))
    enabled = gc.isenabled()
    gc.disable()
    try:
        for path in files:
            result = runner.process_file(path, Config(root=tmp_path), options)
            # .cuda() after setup() (exits without a GPU) is guarded; its .numpy() is not
            assert [f.code for f in result.findings] == ["DEV002"], result.findings
        held = {id(c) for c in runner._PROJECT._contexts.values()}
        alive = [r() for r in made if r() is not None and id(r()) not in held]
        assert len(made) > 4 and alive == []
    finally:
        if enabled:
            gc.enable()
        runner._PROJECT = None


def test_call_index_finds_the_files_a_scan_finds(tmp_path):
    """Past SCAN_NAMES names, the callers' files come from one index of every call: the same files as the
    scan of every file for each name (word boundaries, spaces and newlines before the parenthesis, methods,
    non-ASCII text, the ``also`` filter and the home file)."""
    from devlint.project import Project

    texts = {
        "a.py": "import torch\nsetup()\nx.run (1)\nprerun(2)\n",
        "b.py": "def setup():\n    pass\nvalue = run\\\n(3)\n",
        "c.py": "é = 1\nrun_all(é)\n1run = 2\nsetup  \t(\n)\n# setup( in a comment counts too\n",
        "d.py": "class Trainer:\n    def setup(self):\n        self.run()\n",
        "e.py": "print('run(')\nrunner(4)\n",
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    paths = [str(tmp_path / n) for n in sorted(texts)]
    queries = [("setup", (), None), ("run", (), None), ("run", ("Trainer",), paths[0]), ("runner", (), None),
               ("prerun", (), None), ("nosuch", (), None), ("print", ("torch",), None)]
    scanned, indexed = Project(paths), Project(paths)
    scanned.SCAN_NAMES, indexed.SCAN_NAMES = 10**6, 0
    for query in queries:
        assert indexed._files_calling(*query) == scanned._files_calling(*query), query
    assert indexed._called is not None and scanned._called is None  # each took its own path
    # a.py's method call, d.py's self.run(), e.py's text in a string; not b.py (a backslash is no space)
    assert [p.rsplit("/", 1)[-1] for p in indexed._files_calling("run", (), None)] == ["a.py", "d.py", "e.py"]


def test_callers_that_cannot_reach_the_function_are_not_parsed(tmp_path):
    """call_sites() parses only the files whose calls of the name may resolve to another file (an imported
    root, ``self`` / ``cls``); a file that calls its own ``setup`` is read as consulted, not parsed, and the
    sites found are the same."""
    import libcst as cst

    from devlint.project import Project, call_sites

    texts = {
        "helper.py": "def setup():\n    pass\n",
        "a.py": "from helper import setup\nsetup()\n",
        "b.py": "def setup():\n    pass\nsetup()\nhelper = 1\nhelper.setup()\n",  # helper: not imported here
        "c.py": "import helper\nhelper.setup()\n",
        "d.py": "from helper import *\nsetup()\n",  # a star import: any bare name may be helper's
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    project = Project([str(tmp_path / n) for n in texts])
    home = project.context(str(tmp_path / "helper.py"))
    assert home is not None
    func = next(iter(home.nodes(cst.FunctionDef)))
    sites = call_sites(home, func)
    assert sites is not None
    assert sorted(c.path.rsplit("/", 1)[-1] for c, _ in sites) == ["a.py", "c.py", "d.py"]
    parsed = {p.rsplit("/", 1)[-1] for p in project._contexts}
    assert parsed == {"helper.py", "a.py", "c.py", "d.py"}
    assert {p.rsplit("/", 1)[-1] for p in project.consulted} >= {"b.py"}


def test_a_function_that_requires_cuda_is_read_once_per_run(tmp_path, monkeypatch):
    """Guards remember "setup() returns only with CUDA" for the run: the helper is parsed once however many
    files call it and however small the cache of parsed files is, and each caller's result still depends on
    it (the results cache's deps)."""
    from devlint.project import Project

    (tmp_path / "helper.py").write_text(HELPER)
    files = []
    for i in range(3):
        (tmp_path / f"main{i}.py").write_text(MAIN.format(i=""))
        files.append(str(tmp_path / f"main{i}.py"))
    parsed: list[str] = []
    real_parse = Project._parse

    def counting(self, path):
        parsed.append(path.rsplit("/", 1)[-1])
        return real_parse(self, path)

    monkeypatch.setattr(Project, "_parse", counting)
    monkeypatch.setattr(runner, "_PROJECT", None)
    runner._init_worker([*files, str(tmp_path / "helper.py")])
    monkeypatch.setattr(runner._PROJECT, "MAX_CONTEXTS", 1)  # each file linted drops the helper's tree
    try:
        options = runner.Options(select=set(all_rules()))
        for path in files:
            result = runner.process_file(path, Config(root=tmp_path), options)
            assert [f.code for f in result.findings] == ["DEV002"], result.findings
            assert str(tmp_path / "helper.py") in result.deps
        assert parsed.count("helper.py") == 1, parsed
    finally:
        runner._PROJECT = None


def test_a_tree_the_prefilter_parsed_spares_the_import_walk_a_parse(tmp_path, monkeypatch):
    """The pre-filter's parse of a file gives the import walk its top-level imports (relative ones as written);
    bytes that are not the file's on disk (standard input) are not taken for it."""
    import ast

    from devlint import project as project_module
    from devlint.project import Project

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import os\nfrom .op import kernel\nfrom . import b\n")
    (pkg / "b.py").write_text("import sys\n")
    project = Project([str(p) for p in sorted(pkg.iterdir())])
    a, b = str(pkg / "a.py"), str(pkg / "b.py")
    parses = []
    monkeypatch.setattr(project_module, "_ast_of", lambda data: parses.append(data) or ast.parse(data or b""))
    data = (pkg / "a.py").read_bytes()
    project.note_tree(a, data, ast.parse(data))
    assert project._top_imports(a) == frozenset({"os", ".op", "?.op.kernel", ".b"}) and parses == []
    other = b"import json\n"  # what standard input said for b.py
    project.note_tree(b, other, ast.parse(other))
    assert project._top_imports(b) == frozenset({"sys"}) and parses == [b"import sys\n"]


DIST_HELPER = '''import torch
import torch.distributed as dist


def average(value):
    if dist.get_world_size() == 1:
        return value
    tensor = torch.tensor([value], device="cuda")
    dist.all_reduce(tensor)
    return tensor.item()
'''


def test_a_process_group_started_elsewhere_decides_the_helpers(tmp_path, monkeypatch):
    """A distributed helper is CUDA-only by design where no file of the project starts the process group (a
    launcher library does, with NCCL on GPUs), and reported where another file starts it with gloo; the
    helper's result depends on that other file (the results cache's deps)."""
    (tmp_path / "dist.py").write_text(DIST_HELPER)
    (tmp_path / "train.py").write_text("import dist\n\n\ndef main():\n    print(dist.average(1.0))\n")
    files = [str(tmp_path / "dist.py"), str(tmp_path / "train.py")]

    def lint() -> runner.FileResult:
        monkeypatch.setattr(runner, "_PROJECT", None)
        runner._init_worker(files)
        try:
            return runner.process_file(files[0], Config(root=tmp_path), runner.Options(select={"DEV001"}))
        finally:
            runner._PROJECT = None

    quiet = lint()
    assert quiet.findings == []
    assert files[1] in quiet.deps
    (tmp_path / "train.py").write_text('import torch.distributed as dist\n\n\ndef main(rank, n):\n'
                                       '    dist.init_process_group("gloo", rank=rank, world_size=n)\n')
    assert [(f.code, f.start.row, f.start.column) for f in lint().findings] == [("DEV001", 8, 43)]


def test_a_standard_module_name_resolves_only_beside_the_importer(tmp_path):
    """``import math`` is the standard library's: a project file named math.py elsewhere in the tree is not it;
    one beside a script (its folder first on sys.path) shadows it, unless the module is built into Python."""
    from devlint.project import Project

    for rel in ("attn/math.py", "ops/interp.py", "kernels/platform.py", "kernels/bench.py", "kernels/sys.py",
                "models/unet.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    project = Project(str(p) for p in tmp_path.rglob("*.py"))
    assert project.module_file("math", str(tmp_path / "ops/interp.py")) is None
    assert project.module_file("platform", str(tmp_path / "kernels/bench.py")) == str(tmp_path / "kernels/platform.py")
    assert project.module_file("sys", str(tmp_path / "kernels/bench.py")) is None  # built in: never shadowed
    assert project.module_file("unet", str(tmp_path / "ops/interp.py")) == str(tmp_path / "models/unet.py")


def test_calls_with_keywords_finds_every_call_naming_them(tmp_path):
    """The calls that pass every one of the keywords, whatever they call (a class looked up at run time)."""
    from devlint.project import Project

    (tmp_path / "run.py").write_text(
        "def get(name, plans, fold, device):\n"
        "    cls = find(name)\n"
        "    a = cls(plans=plans, fold=fold, device=device)\n"
        "    b = cls(plans=plans, fold=fold)\n"
        "    return a, b\n")
    (tmp_path / "other.py").write_text("y = 1\n")
    project = Project(str(p) for p in tmp_path.rglob("*.py"))
    found = project.calls_with_keywords(frozenset({"plans", "fold", "device"}))
    assert found is not None and [call_ctx.code(call) for call_ctx, call in found] == [
        "cls(plans=plans, fold=fold, device=device)"]


def test_a_parent_package_runs_in_the_same_import_hop(tmp_path):
    """``from models.registry import X`` runs models/__init__.py first: its imports are as near as registry.py's
    own, so a chain of eight imports from the package reaches a CUDA-only library (DINO: models -> dino -> ... ->
    the deformable-attention extension), as it does from ``import models``."""
    from devlint.project import Project

    pkg = tmp_path / "models"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .m1 import f\n")
    for i in range(1, 7):
        (pkg / f"m{i}.py").write_text(f"from .m{i + 1} import f\n")
    (pkg / "m7.py").write_text("import flash_attn\n\ndef f():\n    return flash_attn\n")
    (pkg / "registry.py").write_text("BUILDERS = {}\n")
    (tmp_path / "main.py").write_text("x = 1\n")
    project = Project(str(p) for p in tmp_path.rglob("*.py"))
    near = str(tmp_path / "main.py")
    assert project.imports_cuda_only(["models"], near)
    assert project.imports_cuda_only(["models.registry"], near)
    assert not project.imports_cuda_only(["models.registry"], str(pkg / "registry.py"))  # its own package
