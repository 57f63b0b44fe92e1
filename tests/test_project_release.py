"""A parsed file dropped from the project's cache leaves nothing behind for the garbage collector: its
shared analyses, which hold it, are released once the file being linted is done."""

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
