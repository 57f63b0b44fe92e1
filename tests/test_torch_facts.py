"""Facts about torch that the rules rest on, checked on the installed torch (the CPU build in CI)."""

from __future__ import annotations

import inspect

import pytest

from devlint import devices

torch = pytest.importorskip("torch")


def _build(name: str):
    """The module ``torch.nn.<name>`` built with its required arguments set to small constants."""
    cls = getattr(torch.nn, name)
    required = [p for p in inspect.signature(cls).parameters.values()
                if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return cls(*[2] * len(required))


@pytest.mark.parametrize("qualname", sorted(devices.PARAMETERLESS_MODULES))
def test_parameterless_modules_hold_nothing_to_move(qualname):
    """DEV001 leaves out ``nn.CrossEntropyLoss().cuda()``: built with constant arguments, these modules hold no
    parameter, buffer or submodule, so ``.cuda()`` moves nothing; without CUDA it does not raise."""
    module = _build(qualname.rsplit(".", 1)[1])
    assert list(module.parameters()) == [] and list(module.buffers()) == [] and list(module.children()) == []
    if not torch.cuda.is_available():
        assert module.cuda() is module
        assert module.cuda(0) is module
        assert module.to("cuda") is module


def test_a_module_with_a_tensor_raises_without_cuda():
    """The other side: a weight tensor (a buffer) or a parameter is moved, and the move needs CUDA."""
    if torch.cuda.is_available():
        pytest.skip("a machine with CUDA moves it")
    for module in (torch.nn.CrossEntropyLoss(weight=torch.ones(3)), torch.nn.PReLU(), torch.nn.Linear(2, 2)):
        with pytest.raises((AssertionError, RuntimeError)):
            module.cuda()
