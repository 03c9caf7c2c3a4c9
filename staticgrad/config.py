"""TF1's session configuration: `sg.ConfigProto` and `sg.GPUOptions`, and where a session runs
the ops that `sg.device` scopes placed.

    config = sg.ConfigProto(allow_soft_placement=True, log_device_placement=True)
    config.gpu_options.allow_growth = True
    sess = sg.Session(config=config)

What the fields do here:
- `allow_soft_placement`: an op placed on a device the session's backend cannot run (a
  `/gpu:0` op in a NumPy session) runs on the CPU instead; without it, running the op raises
  TF1's InvalidArgumentError naming the op, its device and where it was created.
- `log_device_placement`: each op of a plan is printed with the device it runs on (stderr,
  as TF1 prints it) when the plan is compiled.
- The rest (threads, GPU memory, timeouts...) are accepted and kept, for programs that set
  them; NumPy chooses its own BLAS threads, and no GPU is used yet.

Fields are checked by type, as a protocol buffer's are: an unknown field, or a value of the
wrong type, raises ValueError/TypeError naming it.
"""

from __future__ import annotations

import numbers
import sys

from .devices import DeviceSpec, parse
from .errors import InvalidArgumentError

LOCAL = "/job:localhost/replica:0/task:0"


class _Message:
    """A few fields of one of TF1's configuration protocol buffers, with their types."""

    _fields: dict = {}  # name -> (type or tuple of types, default)

    def __init__(self, **fields):
        for name, (_, default) in self._fields.items():
            object.__setattr__(self, name, default() if callable(default) else default)
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        kind = self._fields.get(name)
        if kind is None:
            raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field '
                             f"(staticgrad knows {', '.join(sorted(self._fields))})")
        types = kind[0]
        if types is float and isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = float(value)  # (a protocol buffer's float field takes an int too)
        elif types is list and isinstance(value, tuple | list) and \
                all(isinstance(v, str) for v in value):
            value = list(value)  # (a repeated string field: any sequence of strings)
        if not isinstance(value, types) or (types in (int, float) and isinstance(value, bool)):
            wanted = types.__name__ if isinstance(types, type) else \
                " or ".join(t.__name__ for t in types)
            raise TypeError(f"{type(self).__name__}.{name} must be {wanted}, got "
                            f"{type(value).__name__} {value!r}")
        object.__setattr__(self, name, value)

    def __repr__(self):
        set_fields = [f"{n}={getattr(self, n)!r}" for n, (_, d) in self._fields.items()
                      if not callable(d) and getattr(self, n) != d]
        return f"{type(self).__name__}({', '.join(set_fields)})"


class GPUOptions(_Message):
    """TF1's tf.GPUOptions: accepted and kept (no GPU is used yet).

    >>> sg.GPUOptions(allow_growth=True, per_process_gpu_memory_fraction=0.5)  # doctest: +SKIP
    """

    _fields = {"allow_growth": (bool, False), "per_process_gpu_memory_fraction": (float, 0.0),
               "visible_device_list": (str, ""), "allocator_type": (str, ""),
               "deferred_deletion_bytes": (int, 0), "polling_active_delay_usecs": (int, 0),
               "force_gpu_compatible": (bool, False)}


class ConfigProto(_Message):
    """TF1's tf.ConfigProto (see the module's docstring for what each field does here).

    >>> sess = sg.Session(config=sg.ConfigProto(allow_soft_placement=True))  # doctest: +SKIP
    """

    _fields = {"allow_soft_placement": (bool, False), "log_device_placement": (bool, False),
               "gpu_options": (GPUOptions, GPUOptions),
               "intra_op_parallelism_threads": (int, 0),
               "inter_op_parallelism_threads": (int, 0),
               "use_per_session_threads": (bool, False), "device_count": (dict, dict),
               "device_filters": (list, list), "placement_period": (int, 0),
               "operation_timeout_in_ms": (int, 0), "isolate_session_state": (bool, False)}


class RunOptions(_Message):
    """TF1's tf.RunOptions: accepted and checked by `Session.run`. No trace is taken: the
    generated code runs as one function, and the RunMetadata it fills stays empty.

    >>> options = sg.RunOptions(trace_level=sg.RunOptions.FULL_TRACE)  # doctest: +SKIP
    """

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _fields = {"trace_level": (int, 0), "timeout_in_ms": (int, 0),
               "output_partition_graphs": (bool, False),
               "report_tensor_allocations_upon_oom": (bool, False)}


class RunMetadata(_Message):
    """TF1's tf.RunMetadata: what `Session.run(..., run_metadata=)` reports. Here it stays
    empty (no per-op step statistics); `SummaryWriter.add_run_metadata` writes it as the
    empty protocol buffer it is, so TensorBoard lists the tagged run.

    >>> metadata = sg.RunMetadata()                                      # doctest: +SKIP
    """

    _fields = {}

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        return b""


def check_run_arguments(options, run_metadata) -> None:
    """TypeError unless `Session.run`'s options and run_metadata are what TF1 takes."""
    if options is not None and not isinstance(options, RunOptions):
        raise TypeError(f"options must be an sg.RunOptions, got {type(options).__name__}")
    if run_metadata is not None and not isinstance(run_metadata, RunMetadata):
        raise TypeError(f"run_metadata must be an sg.RunMetadata, got "
                        f"{type(run_metadata).__name__}")


def check_config(config) -> ConfigProto:
    """A session's `config` argument as a ConfigProto (the defaults for None)."""
    if config is None:
        return ConfigProto()
    if not isinstance(config, ConfigProto):
        raise TypeError(f"config must be an sg.ConfigProto, got {type(config).__name__}")
    return config


def place(ops, device_types: tuple, config: ConfigProto) -> None:
    """Check where each op of a plan runs: on the CPU, or on a device of a type the backend
    runs (`device_types`); an op placed elsewhere runs on the CPU under soft placement, and
    raises InvalidArgumentError otherwise. With log_device_placement, print each op's."""
    log = config.log_device_placement
    for op in _with_branches(ops):
        runs_on = _device_for(op, device_types, config.allow_soft_placement)
        if log:
            print(f"{op.name}: ({op.type}): {runs_on}", file=sys.stderr)


def _with_branches(ops):
    """The ops, and those of the sub-graphs they hold (a cond's branches), depth first."""
    for op in ops:
        yield op
        for attr in op.opdef.region_attrs:
            yield from _with_branches(op.attrs[attr].graph.get_operations())


def _device_for(op, device_types: tuple, soft: bool) -> str:
    spec = parse(op.device) if op.device else DeviceSpec()
    local = spec.job in (None, "localhost") and spec.replica in (None, 0) and \
        spec.task in (None, 0)
    kind = spec.device_type or "CPU"
    if local and (kind == "CPU" or kind in device_types) and spec.device_index in (None, 0):
        return f"{LOCAL}/device:{kind}:0"
    if soft:
        return f"{LOCAL}/device:CPU:0"
    raise InvalidArgumentError(
        None, op, f"Cannot assign a device for operation {op.name}: Operation was explicitly "
                  f"assigned to {op.device} but available devices are [ {LOCAL}/device:CPU:0"
                  f" ] ({op.where()}). Make sure the device specification refers to a valid "
                  "device, or run it on the CPU with "
                  "sg.Session(config=sg.ConfigProto(allow_soft_placement=True)).")
