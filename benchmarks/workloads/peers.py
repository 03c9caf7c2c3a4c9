"""The peer systems, each optional: imported inside try blocks, never a dependency.

    tf1       TensorFlow 1's graph API (`tensorflow.compat.v1`, eager execution off)
    torch     PyTorch, eager
    jax       JAX, `jax.jit` of `jax.value_and_grad`
    pytensor  PyTensor (Theano's successor), its default mode (C code when a compiler is there)

Threads: the suite sets OMP/OpenBLAS/MKL to 2 before anything is imported; TF sessions get 2
intra- and inter-op threads, PyTorch `set_num_threads(2)`; XLA sizes its pool to the machine
(2 cores here). PyTensor computes in float32 (`floatX=float32`, set by the suite before
PyTensor is imported), so its Python-float constants do not upcast to float64.
"""

from __future__ import annotations

import importlib

PEER_NAMES = ("tf1", "torch", "jax", "pytensor")
LABELS = {"tf1": "TF 1 (compat.v1)", "torch": "PyTorch eager", "jax": "JAX jit",
          "pytensor": "PyTensor"}
_MODULES = {"tf1": "tensorflow", "torch": "torch", "jax": "jax", "pytensor": "pytensor"}


def load(name: str):
    """The peer's main module, set up for the suite (threads, float32, quiet)."""
    if name == "tf1":
        tf = importlib.import_module("tensorflow.compat.v1")
        tf.disable_eager_execution()
        tf.logging.set_verbosity(tf.logging.ERROR)
        return tf
    module = importlib.import_module(_MODULES[name])
    if name == "torch":
        module.set_num_threads(2)
    if name == "jax":
        importlib.import_module("jax.numpy")
    return module


def find(wanted=PEER_NAMES) -> tuple[dict, dict]:
    """({name: version} of the peers that import, {name: why not} of the others)."""
    found, missing = {}, {}
    for name in wanted:
        try:
            load(name)
            found[name] = importlib.import_module(_MODULES[name]).__version__
        except Exception as e:  # noqa: BLE001 -- any failure to import means "not installed"
            missing[name] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
    return found, missing


def notes(found) -> dict:
    """How each found peer is set up, where that changes its figures."""
    out = {}
    if "pytensor" in found:
        config = load("pytensor").config
        out["pytensor"] = {"mode": str(config.mode), "cxx": config.cxx,
                           "blas__ldflags": config.blas__ldflags, "floatX": config.floatX}
    if "jax" in found:
        out["jax"] = {"backend": load("jax").default_backend()}
    if "torch" in found:
        out["torch"] = {"threads": load("torch").get_num_threads()}
    return out


def tf_session(tf, graph):
    config = tf.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2)
    return tf.Session(graph=graph, config=config)
