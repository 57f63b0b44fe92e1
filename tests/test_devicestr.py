"""DEV003's grammar agrees with torch.device: the same strings accepted, the same error text."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from devlint.devices import DEVICE_TYPES, InvalidDeviceString, parse_device, suggest

torch = pytest.importorskip("torch")


def torch_verdict(text: str) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.device(text)
        except RuntimeError as exc:
            return str(exc)
    return None


def devlint_verdict(text: str) -> str | None:
    try:
        parse_device(text)
    except InvalidDeviceString as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("text", [
    "cuda", "cuda:0", "cpu", "cpu:0", "meta", "mps", "mps:0", "mps:1", "xpu", "hip", "xla", "lazy", "ipu",
    "ve", "fpga", "maia", "vulkan", "mtia", "hpu", "privateuseone", "opengl", "opencl", "ideep", "mkldnn",
    "cuda:2147483647",
])
def test_accepted(text):
    assert torch_verdict(text) is None
    assert parse_device(text).type == text.split(":")[0]


@pytest.mark.parametrize("text", [
    "cuda:1,2", "gpu", "CUDA", "Cuda", "cuda0", "cuda: 0", "cuda:-1", "cuda:01", "cuda:+1", "cuda:0 ", "cuda:",
    "ort", "", "cuda:99999999999999999999", "cuda:2147483648", " cuda", "cuda:0:1", "cuda:1e3", "cuda:\u0663",
])
def test_rejected_with_torchs_message(text):
    expected = torch_verdict(text)
    assert expected is not None
    assert devlint_verdict(text) == expected


# Strings built from the pieces device strings are made of, plus arbitrary text.
_pieces = st.sampled_from(
    [*DEVICE_TYPES, "gpu", "CUDA", "Mps", "cuda_", "_", ":", "0", "1", "9", "01", "-", "+", ",", " ", "\t",
     "10", "2147483647", "2147483648", "99999999999", "x", "é", "\u0663", "\n"]
)
device_like = st.lists(_pieces, max_size=5).map("".join)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(device_like, st.text(max_size=12)))
@example("cuda:1,2")
@example("cuda:128")
def test_grammar_agrees_with_torch_device(text):
    if "\x00" in text:
        return  # torch.device cannot receive a NUL through its C string API
    assert devlint_verdict(text) == torch_verdict(text)


@settings(max_examples=500, deadline=None)
@given(device_like)
def test_suggestions_are_valid(text):
    suggestion, _ = suggest(text)
    if suggestion is not None:
        assert torch_verdict(suggestion) is None


@pytest.mark.parametrize("text,fixed,safe", [
    ("CUDA", "cuda", True), ("cuda: 0", "cuda:0", True), ("cuda0", "cuda:0", True), ("cuda:01", "cuda:1", True),
    ("gpu", "cuda", False), ("cuda:-1", "cuda", False), ("cuda:1,2", None, False), ("ort", None, False),
])
def test_suggest(text, fixed, safe):
    assert suggest(text) == (fixed, safe)


# DEV003's built strings: a template reported as invalid "whatever it formats" is rejected by torch.device for
# every value formatted into it (the static check is never stricter than torch's parser).
_segment = st.one_of(st.text(alphabet="0123456789 ,:-x[]%", max_size=3), st.just("{}"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["cuda:", "cpu:", "mps:", "cuda", "CUDA:"]), st.lists(_segment, min_size=1, max_size=4),
       st.lists(st.one_of(st.integers(0, 12).map(str), st.text(alphabet="0123456789 ,", max_size=4)),
                min_size=4, max_size=4))
@example("cuda:", [" ", "{}"], ["0", "", "", ""])
@example("cuda:", ["{}", ",", "{}"], ["0", "1", "", ""])
def test_built_strings_reported_only_when_torch_rejects_every_value(head, segments, values):
    from devlint.engine import lint_text
    from devlint.rules import select_rules

    template = head + "".join(segments)
    holes = template.count("{}")
    if "{" in template.replace("{}", "") or "}" in template.replace("{}", "") or holes == 0:
        return
    names = [f"a{i}" for i in range(holes)]
    code = f"import torch\n\n\ndef f(x, {', '.join(names)}):\n    return x.to({template!r}.format({', '.join(names)}))\n"
    found = [f for f in lint_text(code, "<t>", select_rules({"DEV003"})).findings if f.start.row == 5]
    if not found:
        return
    filled = template.format(*(values * 2)[:holes])
    assert torch_verdict(filled) is not None, (template, filled)
