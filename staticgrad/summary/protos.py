"""`sg.Summary` (TF1's `tf.Summary`, also `sg.summary.Summary`): the Summary protocol buffer,
which TF1 programs build by hand for values computed outside the graph:

    writer.add_summary(sg.Summary(value=[sg.Summary.Value(tag="accuracy",
                                                          simple_value=acc)]), step)

It stands for tensorboardX's class, loaded when first used, so that `import staticgrad`
needs no extra: making one, reading `Summary.Value` and `isinstance` all go to that class.
"""

from __future__ import annotations

from .. import runtime_summary


def _proto_class():
    return runtime_summary.require("sg.Summary").Summary


class _StandsForTheProto(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_proto_class(), name)

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, _proto_class())


class Summary(metaclass=_StandsForTheProto):
    """TF1's Summary protocol buffer (tensorboardX's): `Summary(value=[Summary.Value(tag=...,
    simple_value=...)])`."""

    def __new__(cls, *args, **kwargs):
        return _proto_class()(*args, **kwargs)
