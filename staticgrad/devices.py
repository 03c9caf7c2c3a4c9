"""Device names, as TF1 writes them: `/job:worker/replica:0/task:1/device:GPU:0`.

`sg.device("/gpu:0")` scopes record such a name on each op built inside them (`op.device`);
a session places each op of a run by it (session.py). Here: parsing a name into its parts,
merging a scope's name into the enclosing one's, and the canonical text.

    parse("/gpu:1")                   -> DeviceSpec(device_type="GPU", device_index=1)
    merged(parse("/job:ps"), parse("/cpu:0")).to_string()  -> "/job:ps/device:CPU:0"

Accepted: any of `/job:NAME`, `/replica:N`, `/task:N`, then `/device:TYPE:N`, `/device:TYPE:*`
or the short `/TYPE:N` (`/cpu:0`, `/GPU:1`), in that order, each at most once; the leading
slash may be left out, and "" names no device. TYPE is letters, digits and `_` (CPU, GPU,
XLA_GPU...), written in capitals; NAME letters, digits, `_` and `-`. Anything else raises
ValueError naming the text, as TF1's DeviceSpec does.
"""

from __future__ import annotations

import dataclasses
import re

_PART = re.compile(r"(?:job:(?P<job>[A-Za-z0-9_][A-Za-z0-9_-]*)"
                   r"|replica:(?P<replica>\d+)|task:(?P<task>\d+)"
                   r"|device:(?P<type>[A-Za-z][A-Za-z0-9_]*):(?P<index>\d+|\*)"
                   r"|(?P<short_type>[A-Za-z][A-Za-z0-9_]*):(?P<short_index>\d+|\*))\Z")
_ORDER = ("job", "replica", "task", "device")
MAX_LENGTH = 256


@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """The parts of a device name; None where the name leaves a part unsaid."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None   # None also for `*` (any device of the type)

    def to_string(self) -> str:
        """The canonical name: `/job:ps/replica:0/task:1/device:GPU:0` (parts left unsaid
        are left out)."""
        text = ""
        if self.job is not None:
            text += f"/job:{self.job}"
        if self.replica is not None:
            text += f"/replica:{self.replica}"
        if self.task is not None:
            text += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            text += f"/device:{self.device_type}:{index}"
        return text


def parse(name) -> DeviceSpec:
    """The DeviceSpec of a device name (see the module's docstring); ValueError if it is none."""
    if isinstance(name, DeviceSpec):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a device name must be a str, got {type(name).__name__} {name!r}")
    if len(name) > MAX_LENGTH:
        raise ValueError(f"a device name has at most {MAX_LENGTH} characters, got {len(name)}")
    text = name[1:] if name.startswith("/") else name
    if not text:
        return DeviceSpec()
    fields: dict = {}
    last = -1
    for part in text.split("/"):
        m = _PART.match(part)
        if m is None:
            raise ValueError(f"unknown device name {name!r}: {part!r} is not one of job:NAME, "
                             "replica:N, task:N, device:TYPE:N or TYPE:N (e.g. '/cpu:0', "
                             "'/job:worker/task:1/device:GPU:0')")
        kind = next(k for k in ("job", "replica", "task") if m.group(k) is not None) \
            if m.group("type") is None and m.group("short_type") is None else "device"
        rank = _ORDER.index(kind)
        if rank <= last:
            raise ValueError(f"unknown device name {name!r}: {kind} is given twice or out of "
                             "order (job, replica, task, device)")
        last = rank
        if kind == "device":
            dtype = m.group("type") or m.group("short_type")
            index = m.group("index") or m.group("short_index")
            fields["device_type"] = dtype.upper()
            fields["device_index"] = None if index == "*" else int(index)
        elif kind == "job":
            fields["job"] = m.group("job")
        else:
            fields[kind] = int(m.group(kind))
    return DeviceSpec(**fields)


def merged(outer: DeviceSpec, inner: DeviceSpec) -> DeviceSpec:
    """A scope's device inside another's: the inner one's parts, the outer one's where the
    inner leaves them unsaid (TF1's DeviceSpec.merge_from)."""
    pick = {f.name: getattr(inner, f.name) if getattr(inner, f.name) is not None
            else getattr(outer, f.name) for f in dataclasses.fields(DeviceSpec)}
    if inner.device_type is not None:  # a device's index belongs with its type
        pick["device_index"] = inner.device_index
    return DeviceSpec(**pick)


def canonical(name) -> str:
    """`name` as its canonical text ("/gpu:0" -> "/device:GPU:0"; "" stays "")."""
    return parse(name).to_string()
