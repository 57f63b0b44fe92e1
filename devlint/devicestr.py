"""The device-string grammar of ``torch.device`` (c10/core/Device.cpp), checked without torch.

``parse_device`` accepts exactly the strings torch 2.13 accepts and, for a rejected string, returns the
error text torch raises. A property test keeps it honest against the installed torch.
"""

from __future__ import annotations

from dataclasses import dataclass

# torch.device's accepted device types, in the order torch lists them in its error message.
DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
    "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class DeviceString:
    type: str
    index: int | None


class InvalidDeviceString(ValueError):
    """The string is rejected by ``torch.device``; ``str(exc)`` is torch's own message."""


def _is_alpha(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def parse_device(text: str) -> DeviceString:
    """Parse like ``torch.device(text)``; raise :class:`InvalidDeviceString` with torch's message."""
    if not text:
        raise InvalidDeviceString("Device string must not be empty")
    name: list[str] = []
    index: list[str] = []
    state = "start"
    for ch in text:
        if state == "start":
            if ch == ":":
                state = "index_start"
            elif _is_alpha(ch) or ch == "_":
                name.append(ch)
            else:
                state = "error"
        elif state == "index_start":
            if ch.isascii() and ch.isdigit():
                index.append(ch)
                state = "index_rest"
            else:
                state = "error"
        elif state == "index_rest":
            if index[0] == "0" or not (ch.isascii() and ch.isdigit()):
                state = "error"
            else:
                index.append(ch)
        if state == "error":
            break
    if not name or state == "error" or (state == "index_start" and not index):
        raise InvalidDeviceString(f"Invalid device string: '{text}'")
    idx: int | None = None
    if index:
        value = int("".join(index))
        if value > _INT32_MAX:
            raise InvalidDeviceString(
                f"Could not parse device index '{''.join(index)}' in device string '{text}'"
            )
        idx = value
    device_type = "".join(name)
    if device_type not in DEVICE_TYPES:
        raise InvalidDeviceString(
            f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: {device_type}"
        )
    return DeviceString(device_type, idx)


def is_valid(text: str) -> bool:
    try:
        parse_device(text)
    except InvalidDeviceString:
        return False
    return True


def suggest(text: str) -> tuple[str | None, bool]:
    """A corrected device string for ``text`` and whether the correction is safe (intent unambiguous).

    Returns ``(None, False)`` when there is no sound correction (e.g. ``"cuda:1,2"``).
    """
    stripped = "".join(text.split())  # "cuda: 0", "cuda:0 " -> "cuda:0"
    candidates: list[tuple[str, bool]] = [(stripped, True)]
    lowered = stripped.lower()
    candidates.append((lowered, True))  # "CUDA" -> "cuda"
    for dev in sorted(DEVICE_TYPES, key=len, reverse=True):
        if lowered.startswith(dev):
            rest = lowered[len(dev):]
            if rest.isdigit():  # "cuda0" -> "cuda:0", "cuda01" -> "cuda:1"
                candidates.append((f"{dev}:{int(rest)}", True))
            elif rest.startswith(":+") and rest[2:].isdigit():  # "cuda:+1"
                candidates.append((f"{dev}:{int(rest[2:])}", True))
            elif rest.startswith(":") and rest[1:].isdigit():  # "cuda:01"
                candidates.append((f"{dev}:{int(rest[1:])}", True))
            elif rest == ":":  # "cuda:"
                candidates.append((dev, True))
            elif rest.startswith(":-") and rest[2:].isdigit():  # "cuda:-1": the current device
                candidates.append((dev, False))
            break
    if lowered in ("gpu", "nvidia") or (lowered.startswith("gpu:") and lowered[4:].isdigit()):
        candidates.append(("cuda" + lowered[3:], False))
    for candidate, safe in candidates:
        if candidate != text and is_valid(candidate):
            return candidate, safe
    return None, False
