"""Export the forward graph of some fetches to an ONNX model (optional extra `[onnx]`).

    import staticgrad.onnx
    staticgrad.onnx.export_onnx([probs], [x], "mlp.onnx", session=sess)

The model opens in Netron and runs in ONNX Runtime with the results `Session.run` gives:

- the fed tensors (placeholders, usually) become the graph's inputs, with their static shapes
  (or `feed_shapes`); an unknown dimension becomes a symbolic one named `<input>_d<axis>`;
- variables become initializers holding the session's current values; constants and other
  values known when the graph was built become initializers too;
- each op becomes one ONNX node named after it (a few ops take helper nodes named
  `<op name>/<what>`, e.g. the NHWC <-> NCHW transposes around a convolution); values are
  named after the graph's tensors (`dense/MatMul:0`).

Every op type has a rule in `RULES` or, in `NO_ONNX`, the reason it has no ONNX form (random
draws, assignments, gradient-only kernels...); exporting such an op raises `OnnxExportError`
naming the op, its type, where it was created, and that reason.

The package: `exporter.py` walks the graph and writes the model, `builder.py` holds the ONNX
graph being built, `rules.py` gathers the rules of the family files (`rules_math.py`,
`rules_reduce.py`, `rules_array.py`, `rules_indexing.py`, `rules_nn.py`), and `no_form.py`
says why the other op types have no ONNX form.
"""

from .. import _namespace
from .builder import OnnxExportError
from .exporter import export_onnx
from .no_form import NO_ONNX  # noqa: F401 (the tables: not API, read by the tests)
from .rules import RULES  # noqa: F401

__all__ = ["export_onnx", "OnnxExportError"]
__dir__ = _namespace.public_dir(globals())
