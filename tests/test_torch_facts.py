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


@pytest.mark.parametrize("qualname", sorted(devices.PARAMETERLESS_MODULES))
def test_only_the_weighted_losses_keep_an_argument_as_a_buffer(qualname):
    """DEV001 leaves out ``nn.CrossEntropyLoss(reduction=self.reduction).cuda()`` whatever the argument, but not
    ``nn.CrossEntropyLoss(weight=w).cuda()``: only the modules of devices.BUFFER_ARGUMENT_MODULES register a
    buffer from an argument (torch's _WeightedLoss, BCEWithLogitsLoss' pos_weight); the others' constructors
    register none."""
    cls = getattr(torch.nn, qualname.rsplit(".", 1)[1])
    own = "".join(inspect.getsource(k.__init__) for k in cls.__mro__
                  if "__init__" in k.__dict__ and k.__module__.startswith("torch.nn.modules"))
    registers = "register_buffer" in own or "Parameter(" in own
    assert registers == (qualname in devices.BUFFER_ARGUMENT_MODULES)
    if qualname in devices.BUFFER_ARGUMENT_MODULES:
        keyword = "pos_weight" if qualname.endswith("BCEWithLogitsLoss") else "weight"
        assert len(list(cls(**{keyword: torch.ones(2)}).buffers())) == 1


def test_a_module_with_a_tensor_raises_without_cuda():
    """The other side: a weight tensor (a buffer) or a parameter is moved, and the move needs CUDA."""
    if torch.cuda.is_available():
        pytest.skip("a machine with CUDA moves it")
    for module in (torch.nn.CrossEntropyLoss(weight=torch.ones(3)), torch.nn.PReLU(), torch.nn.Linear(2, 2)):
        with pytest.raises((AssertionError, RuntimeError)):
            module.cuda()


def _holds_tensor(value) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return isinstance(value, (list, tuple)) and any(_holds_tensor(v) for v in value)


def test_scheduler_and_scaler_state_hold_no_tensor():
    """DEV005 leaves out ``scheduler.load_state_dict(torch.load(p))`` and ``scaler.load_state_dict(...)``
    (devices.SCALAR_STATE_HOLDER): their state dicts hold Python numbers, nothing a GPU run leaves on a GPU.
    The other side: an optimizer's state holds tensors (momentum buffers)."""
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    schedulers = [torch.optim.lr_scheduler.StepLR(optimizer, 1), torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer),
                  torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1.0, total_steps=10),
                  torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 5),
                  torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 0.9 ** epoch)]
    for scheduler in schedulers:
        scheduler.step() if not isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) else scheduler.step(1.0)
        assert not _holds_tensor(scheduler.state_dict()), type(scheduler).__name__
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8)
    state = scaler.state_dict()
    assert state and not _holds_tensor(state)
    assert _holds_tensor(optimizer.state_dict())
