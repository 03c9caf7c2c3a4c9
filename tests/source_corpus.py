"""The generated-source snapshot: the graphs the test suite compiles, with the NumPy source each
compiled to, so that a change to the compiler that changes generated code shows as a diff.

Recording (tests/conftest.py, when STATICGRAD_RECORD_SOURCES names the file to write): every
call of `compiler.compile_plan` made by the suite is recorded as

- the part of the graph it compiles (the ops its fetches and feeds depend on, through inputs
  and control inputs), in staticgrad's own graph file format (`graph_io`), so that it loads
  into a fresh graph with `sg.train.import_meta_graph`;
- the fetches and feeds by name, the feeds' shapes and dtypes, and the compile options that
  change code (`disable`, `vector_math`);
- what else the generated code depends on: whether runtime_fast's vector kernels were usable
  (`fast`, when vector_math is on), and the size thresholds of `KNOBS` that a test had
  changed from their values at import;
- the generated source.

The corpus is keyed by none of the tests: tests may move, be renamed or be split, and the
snapshot still holds. Identical records (same graph, inputs and source) are kept once.

Replay (tests/test_source_snapshot.py): load each graph into a fresh Graph, set the recorded
thresholds and `fast`, and compile the recorded fetches and feeds with `Session.source`. The
source must equal the recorded one, character for character: the graph file carries
everything the source shows (names, attrs, shapes, and each op's file and line), so nothing
is normalized. tests/snapshots/README.md says how to record again.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import importlib
import inspect
import json
import lzma
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np

import staticgrad as sg
from staticgrad import compiler, graph_io

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "snapshots" / "sources.json.xz"
FORMAT = "staticgrad-source-corpus"
VERSION = 1

# Module constants that change generated code: the size thresholds of the passes and of the
# renderer ("module:NAME"). A compile records those a test had changed (the fuzzing tests lower
# fuse's and memory's to reach their large-array paths with small graphs); the replay sets them.
KNOBS = (
    "staticgrad.passes.cse:CONST_KEY_LIMIT",
    "staticgrad.passes.fold:FOLD_LIMIT",
    "staticgrad.passes.fold:SMALL",
    "staticgrad.backends.numpy.policy:FUSE.min_elements",
    "staticgrad.passes.memory:MIN_BYTES",
    "staticgrad.passes.simplify:UNIFORM_LIMIT",
    "staticgrad.codegen.fused:BLOCK",
    "staticgrad.codegen.fused:EXPRESSION_LIMIT",
    "staticgrad.codegen.parts:SPLIT_ABOVE",
    "staticgrad.codegen.parts:PART_LINES",
    "staticgrad.codegen.parts:WIDTH",
    # which 2-D products a plan with convolutions writes as rt.matmul (render.py)
    "staticgrad.backends.numpy.conv_blocked:MIN_SPLIT_MACS",
    # whether a plan's convolutions are large enough for its run to hold the BLAS (render.py)
    "staticgrad.backends.numpy.conv_fast:LOOPS_MIN_MACS",
)
# Where a knob of a recorded corpus lives now, when a refactor moved it: {recorded: current},
# e.g. "staticgrad.codegen.parts:SPLIT_ABOVE": "staticgrad.backends.numpy.parts:SPLIT_ABOVE".
MOVED_KNOBS: dict[str, str] = {
    # fuse's threshold became the NumPy backend's fusion policy (issue 22)
    "staticgrad.passes.fuse:FUSE_MIN_ELEMENTS":
        "staticgrad.backends.numpy.policy:FUSE.min_elements",
}

# Compiles not recorded: graphs this large (the scale tests' chains, a variable initialized
# from 260,000 random numbers) would make the corpus tens of MB, or double it, for shapes of
# code that smaller graphs show too.
MAX_OPS = 5000
MAX_SOURCE_CHARS = 1 << 20
MAX_GRAPH_CHARS = 1 << 20  # of the graph file's JSON (mostly the base64 of large constants)


# -- knobs and runtime_fast -----------------------------------------------------------------------
def _knob_home(knob: str) -> tuple[object, str]:
    """(object, attribute) of a knob "module:NAME" (NAME may be a dotted path: "module:
    POLICY.min_elements"): where MOVED_KNOBS says, else where it was recorded, else in the one
    loaded staticgrad module of the same last name that has it (codegen/parts.py moved to
    backends/numpy/parts.py)."""
    found = _resolve(MOVED_KNOBS.get(knob, knob))
    if found is None and knob not in MOVED_KNOBS:
        module, _, path = knob.partition(":")
        last = module.rsplit(".", 1)[-1]
        homes = {id(home): home for name, module in list(sys.modules.items())
                 if name.startswith("staticgrad.") and name.rsplit(".", 1)[-1] == last
                 for home in [_resolve(f"{name}:{path}")] if home is not None}
        found = next(iter(homes.values())) if len(homes) == 1 else None
    if found is None:
        raise LookupError(f"the compiler threshold {knob} of the source corpus is not found "
                          f"(moved or renamed?): say where it lives now in MOVED_KNOBS of "
                          f"{__file__}")
    return found


def _resolve(knob: str) -> tuple[object, str] | None:
    module, _, path = knob.partition(":")
    *parents, name = path.split(".")
    try:
        home = importlib.import_module(module)
        for parent in parents:
            home = getattr(home, parent)
    except (ImportError, AttributeError):
        return None
    return (home, name) if hasattr(home, name) else None


def knob_values() -> dict[str, object]:
    return {knob: getattr(*_knob_home(knob)) for knob in KNOBS}


def _fast_module():
    """staticgrad's runtime_fast module (its vector kernels), wherever the package keeps it."""
    for name in ("staticgrad.runtime_fast", "staticgrad.backends.numpy.fast",
                 "staticgrad.backends.numpy.runtime_fast"):
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    for name, module in list(sys.modules.items()):
        if name.startswith("staticgrad.") and callable(getattr(module, "available", None)) \
                and callable(getattr(module, "why_not", None)):
            return module
    raise LookupError(f"staticgrad's runtime_fast module is not found: say where it is in "
                      f"_fast_module of {__file__}")


@contextlib.contextmanager
def pinned(knobs: dict, fast: bool | None):
    """Within: the knobs have the recorded values, and runtime_fast is usable or not as it was
    when recorded (None: as it is here)."""
    saved = []
    try:
        for knob, value in knobs.items():
            module, name = _knob_home(knob)
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)
        if fast is not None:
            module = _fast_module()
            if module.available() != fast:
                saved.append((module, "available", module.available))
                module.available = lambda: fast
        yield
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)


# -- recording ------------------------------------------------------------------------------------
def _digest(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Recorder:
    """Records every compile_plan call (see the module docstring); `write` saves the corpus."""

    def __init__(self):
        self.graphs: dict[str, dict] = {}
        self.entries: dict[str, dict] = {}
        self.compiles = 0
        self.skipped = collections.Counter()
        self.defaults = knob_values()
        self.lock = threading.Lock()
        self.original = compiler.compile_plan
        self.signature = inspect.signature(self.original)

    def install(self) -> None:
        """Wrap compile_plan in every loaded staticgrad module that holds it."""
        original, record = self.original, self.record

        def compile_plan(*args, **kwargs):
            plan = original(*args, **kwargs)
            record(args, kwargs, plan)
            return plan
        compile_plan.__wrapped__ = original
        self._wrapper = compile_plan
        self._swap(original, compile_plan)

    def uninstall(self) -> None:
        """Put back the compile_plan that install wrapped."""
        self._swap(self._wrapper, self.original)

    def _swap(self, old, new) -> None:
        """compile_plan `new` in every loaded staticgrad module holding `old` (only those:
        asking every module of sys.modules for an attribute can raise, as torch.classes's
        __getattr__ does)."""
        for name, module in list(sys.modules.items()):
            if (name == "staticgrad" or name.startswith("staticgrad.")) \
                    and getattr(module, "compile_plan", None) is old:
                module.compile_plan = new

    def record(self, args, kwargs, plan) -> None:
        try:
            entry, graph_doc = self._entry(args, kwargs, plan)
        except _Skip as e:
            with self.lock:
                self.compiles += 1
                self.skipped[str(e)] += 1
            return
        except Exception as e:  # noqa: BLE001 - recording must never fail a test
            with self.lock:
                self.compiles += 1
                self.skipped[f"recording failed: {type(e).__name__}: {e}"[:200]] += 1
            return
        key = _digest([entry, plan.source])
        with self.lock:
            self.compiles += 1
            self.graphs.setdefault(entry["graph"], graph_doc)
            self.entries.setdefault(key, {**entry, "source": plan.source})

    def _entry(self, args, kwargs, plan) -> tuple[dict, dict]:
        call = self.signature.bind(*args, **kwargs).arguments
        fetches, feeds, feed_sig = call["fetches"], call["feeds"], call["feed_sig"]
        options = call.get("options") or compiler.DEFAULT_OPTIONS
        if call.get("title"):
            raise _Skip("a title (Session never gives one)")
        backend = call.get("backend", "numpy")
        if backend != "numpy" and backend is not sg.backends.get_backend("numpy"):
            # a backend a test registered (its own policies): the replay cannot make it
            raise _Skip("a backend other than the NumPy one")
        if len(plan.source) > MAX_SOURCE_CHARS:
            raise _Skip(f"source over {MAX_SOURCE_CHARS} characters")
        if any(shape is None or None in tuple(shape) for shape, _ in feed_sig):
            raise _Skip("a signature with free dimensions (an export's; Session.source "
                        "compiles at concrete shapes)")
        ops = _needed_ops(list(fetches) + [t.op for t in feeds])
        if len(ops) > MAX_OPS:
            raise _Skip(f"graph over {MAX_OPS} ops")
        if any(getattr(value, "extends", None) is not None
               for op in ops for value in op.attrs.values()):
            raise _Skip("a Scan whose body extends another's (merge_scans' link, which a "
                        "graph file drops)")
        graph_doc = _graph_doc(ops)
        graph_text = json.dumps(graph_doc, sort_keys=True)
        if len(graph_text) > MAX_GRAPH_CHARS:
            raise _Skip(f"graph file over {MAX_GRAPH_CHARS} characters")
        fast = None
        if options.vector_math:
            fast = bool(_fast_module().available())
        entry = {
            "graph": _digest(graph_text),
            "fetches": [f.name for f in fetches],
            "feeds": [t.name for t in feeds],
            "signature": [[list(shape), dtype.name] for shape, dtype in feed_sig],
            "options": {"disable": sorted(options.disable), "vector_math": options.vector_math},
            "fast": fast,
            "knobs": {k: v for k, v in knob_values().items() if v != self.defaults[k]},
        }
        return entry, graph_doc

    def write(self, path) -> dict:
        """Write the corpus (xz-compressed JSON, entries in a stable order); return its stats."""
        entries = sorted(self.entries.values(),
                         key=lambda e: (e["graph"], json.dumps(e, sort_keys=True)))
        stats = {"compiles": self.compiles, "recorded": self.compiles - sum(self.skipped.values()),
                 "entries": len(entries), "graphs": len(self.graphs),
                 "skipped": dict(sorted(self.skipped.items()))}
        doc = {"format": FORMAT, "version": VERSION,
               "recorded_with": {"commit": _commit(), "numpy": np.__version__,
                                 "python": sys.version.split()[0]},
               "stats": stats,
               "graphs": dict(sorted(self.graphs.items())),
               "entries": entries}
        stats["raw_bytes"], stats["bytes"] = save(doc, path)
        return stats


class _Skip(Exception):
    """A compile that is not recorded, and why."""


def _needed_ops(roots) -> list:
    """The ops that `roots` (ops and tensors) depend on through inputs and control inputs,
    themselves included, in creation order."""
    seen, pending = set(), [r.op if isinstance(r, sg.Tensor) else r for r in roots]
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        pending.extend(t.op for t in op.inputs)
        pending.extend(op.control_inputs)
    return sorted(seen, key=lambda op: op._id)


def _graph_doc(ops) -> dict:
    """A graph file (graph_io's format) holding just `ops`; each op's file as a path from the
    repository root, or its last part when outside it (a test's tmp_path): the source shows
    only the last part."""
    records = []
    for op in ops:
        try:
            record = graph_io._op_to_dict(op)
        except ValueError as e:  # Python code in an attr: a graph file cannot hold it
            if "_gradient_op_type" in op.attrs:
                raise _Skip("an op built under gradient_override_map") from None
            attr = next((k for k in op.attrs if f"attr {k!r}" in str(e)), "?")
            raise _Skip(f"a {op.type} op, for its attr {attr!r}") from None
        record["location"][0] = _short_path(record["location"][0])
        records.append(record)
    seed = ops[0].graph.seed if ops else None
    return {"format": graph_io.FORMAT, "version": graph_io.VERSION, "seed": seed,
            "ops": records, "variables": [], "collections": {}}


def _short_path(filename: str) -> str:
    path = pathlib.Path(filename)
    if path.is_absolute():
        try:
            return path.relative_to(ROOT).as_posix()
        except ValueError:
            return path.name
    return filename


def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def save(doc: dict, path) -> tuple[int, int]:
    """Write the corpus `doc` to `path` as xz-compressed JSON, whole or not at all (a
    temporary file beside it, then renamed over it); its size as JSON, and compressed."""
    text = json.dumps(doc, indent=None, separators=(",", ":"), allow_nan=False)
    data = lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return len(text), len(data)


def updated(doc: dict, replacements: list[tuple[dict, str]]) -> dict:
    """`doc` with each (entry, source) of `replacements` recording `source` instead of its
    own: what STATICGRAD_SNAPSHOT_UPDATE writes, after a change that alters generated code
    on purpose. Graphs, entries and the stats stay as recorded; `updated_with` says when."""
    new_source = {id(entry): source for entry, source in replacements}
    entries = [{**e, "source": new_source[id(e)]} if id(e) in new_source else e
               for e in doc["entries"]]
    return {**doc, "entries": entries,
            "updated_with": {"commit": _commit(), "numpy": np.__version__,
                             "python": sys.version.split()[0],
                             "entries": len(replacements)}}


# -- replay ---------------------------------------------------------------------------------------
def load(path=CORPUS) -> dict:
    doc = json.loads(lzma.decompress(pathlib.Path(path).read_bytes()))
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise ValueError(f"{path} is not a version-{VERSION} {FORMAT} file")
    return doc


def load_graph(graph_doc: dict) -> sg.Graph:
    graph = sg.Graph()
    with graph.as_default():
        sg.train.import_meta_graph(graph_doc)
    return graph


def _zero(dtype) -> np.ndarray:
    """A 0-d array of `dtype` that a feed of it takes: 0, or b"" for strings."""
    if dtype.is_string:
        return np.array(b"", dtype=object)
    return np.zeros((), dtype=dtype.as_numpy_dtype)


def compile_source(graph: sg.Graph, entry: dict) -> str:
    """The source that compiling `entry`'s fetches and feeds in `graph` gives now."""
    feed_dict = {name: np.broadcast_to(_zero(sg.as_dtype(dtype)), shape)
                 for name, (shape, dtype) in zip(entry["feeds"], entry["signature"])}
    options = sg.CompileOptions(disable=frozenset(entry["options"]["disable"]),
                                vector_math=entry["options"]["vector_math"])
    with pinned(entry["knobs"], entry["fast"]):
        # (ops a test placed on a GPU compile to NumPy on the CPU, as they did when recorded)
        config = sg.ConfigProto(allow_soft_placement=True)
        with sg.Session(graph=graph, options=options, config=config) as sess:
            return sess.source(list(entry["fetches"]), feed_dict)


def entry_title(entry: dict, graph_doc: dict) -> str:
    """What a mismatch report calls an entry: its fetches, and where its last op was made."""
    files = sorted({op["location"][0] for op in graph_doc["ops"]})
    where = ", ".join(files[:3]) + (", ..." if len(files) > 3 else "")
    return (f"graph {entry['graph']} fetches {entry['fetches']} feeds "
            f"{list(zip(entry['feeds'], entry['signature']))} options {entry['options']}"
            + (f" knobs {entry['knobs']}" if entry["knobs"] else "") + f" (ops from {where})")


def sample(entries: list[dict], every: int) -> list[dict]:
    """A fixed part of the entries: those whose digest falls in one of `every` buckets (all
    with every=1). Deterministic, and independent of the entries' order."""
    if every <= 1:
        return entries
    return [e for e in entries if int(_digest(e)[:8], 16) % every == 0]

