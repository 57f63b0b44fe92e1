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
