"""Differential fuzzing: random well-typed graphs (tests/fuzz_graphs.py), each computed

- by the reference interpreter (tests/fuzz_reference.py: op by op, registry kernels, no code
  generation), which every other path is compared with;
- by `Session.run` with the default compiler options, then with small-array thresholds (so
  that the small graphs take the fusion, block, buffer-reuse and large-array runtime paths)
  with all passes on and with each pass of `compiler.PIPELINE` switched off in turn, and with
  every pass off;
- through `sess.make_callable`, through a module written by `sg.export` (imported here), and
  after a round trip through a graph file (`export_meta_graph` -> JSON -> `import_meta_graph`
  into a fresh graph);

values and gradients (`sg.gradients` of a weighted sum of the fetches w.r.t. the float
placeholders) alike; then float64 gradients are checked against central differences.

How many examples:
- CI (the default): 200 examples of the paths test and 300 of the gradient test, derandomized
  (`derandomize=True`, no example database), so a run is reproducible and a change elsewhere
  can never make CI fail on a case it did not try before; the file runs in well under 60 s.
- Long campaigns: `STATICGRAD_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz.py`. Then
  the search is random (a new seed each run, printed by hypothesis with any failure), and
  failures are kept in hypothesis's example database (.hypothesis/) and replayed first on the
  next run. `STATICGRAD_FUZZ_REPORT=path.json` writes the op kinds covered, the examples run
  and the time taken.

A failure prints the program that builds the graph (ops, shapes, dtypes, feeds), the path
that disagreed, and the generated source of that path. Every failure found becomes a named
regression test at the end of this file.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import importlib.util
import itertools
import json
import os
import tempfile
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings

import staticgrad as sg
from staticgrad import compiler
from staticgrad.ops.table import REGISTRY
from tests.conftest import dense_gradients
from tests.fuzz_graphs import OP_TYPES, build, feed_values, graph_specs, program
from tests.fuzz_reference import (
    directional_derivative,
    evaluate,
    frozen_stop_gradients,
    kink_distance,
    topo_ops,
)
from tests.test_fuzz_regressions import (
    large_runtime_path_fails_on_0d,
    memory_plan_frees_held_scalar,
    one_element_relu_gradient_is_float64,
)

CAMPAIGN = int(os.environ.get("STATICGRAD_FUZZ_EXAMPLES", "0") or 0)


def fuzz_settings(ci_examples: int) -> settings:
    """`ci_examples` derandomized examples (CI), or a random campaign of
    STATICGRAD_FUZZ_EXAMPLES examples with hypothesis's example database."""
    return settings(max_examples=CAMPAIGN or ci_examples, deadline=None,
                    derandomize=not CAMPAIGN,
                    database=settings.default.database if CAMPAIGN else None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                    print_blob=True)


# (rtol, atol as a fraction of the largest float magnitude the reference computed)
TOLERANCE = {"float64": (1e-9, 1e-12), "float32": (2e-4, 2e-6)}
FD_EPS = 1e-6        # central-difference step (along a direction of max-norm 1)
KINK_MARGIN = 1e-3   # gradient checks need every kink at least this far away

STATS = {"examples": collections.Counter(), "op_types": collections.Counter(),
         "gradient_skipped_at_kinks": 0, "seconds": collections.Counter(),
         "waived": collections.Counter()}


# -- small-array thresholds -----------------------------------------------------------------------
# Size thresholds below which the compiler and runtime take their simple paths; the fuzzed
# graphs are small, so some configurations lower them (as tests/test_compiler.py's
# fuse_small_arrays fixture does). test_small_array_thresholds_exist fails if one is renamed.
# 16 and 2, not 0, while the bugs their regression tests describe are open: a one-element
# value must not be planned or take a large-array runtime path (see test_fuzz_regressions.py)
_ONE_ELEMENT_OK = memory_plan_frees_held_scalar() is None
_ZERO_D_OK = large_runtime_path_fails_on_0d() is None
SMALL = [("staticgrad.backends.numpy.policy:FUSE", "min_elements", 1),
         ("staticgrad.backends.numpy.blocks", "BLOCK", 4),
         ("staticgrad.backends.numpy.blocks", "THREADS", 2),
         ("staticgrad.backends.numpy.memory", "MIN_BYTES", 0 if _ONE_ELEMENT_OK else 16),
         ("staticgrad.runtime", "SELECT_MIN_SIZE", 0 if _ZERO_D_OK else 2),
         ("staticgrad.runtime", "SOFTPLUS_MIN_SIZE", 0 if _ZERO_D_OK else 2)]

# Known open bugs that would hide others, each waived as narrowly as it shows, and only while
# its regression check still reproduces it: {name: predicate(tensor, got, want)}.
WAIVERS = {}
if one_element_relu_gradient_is_float64() is not None:
    # a float32 value that a ReluGrad on the scalar path made float64, and what was computed
    # from it (broadcast back to larger shapes by the gradients of reductions)
    WAIVERS["one_element_relu_gradient_keeps_float32"] = lambda t, got, want: (
        got.dtype == np.float64 and want.dtype == np.float32
        and any(op.type == "ReluGrad" for op in topo_ops([t])))


def _home(path: str):
    """The module holding a threshold, or the object in it ("module:NAME", a policy)."""
    module, _, name = path.partition(":")
    home = importlib.import_module(module)
    return getattr(home, name) if name else home


@contextlib.contextmanager
def small_thresholds(enabled=True):
    saved = []
    try:
        if enabled:
            for module, name, value in SMALL:
                mod = _home(module)
                saved.append((mod, name, getattr(mod, name)))
                setattr(mod, name, value)
        yield
    finally:
        for mod, name, value in reversed(saved):
            setattr(mod, name, value)


def configurations():
    """(name, CompileOptions, small thresholds?) of every Session.run compared."""
    every = frozenset(compiler.PASS_NAMES)
    yield "default options", compiler.CompileOptions(verify=True), False
    yield "small arrays", compiler.CompileOptions(verify=True), True
    for name in compiler.PASS_NAMES:
        yield f"small arrays, no {name}", compiler.CompileOptions(disable={name},
                                                                 verify=True), True
    yield "no passes", compiler.CompileOptions(disable=every, verify=True), False


# -- one fuzzed case ------------------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    spec: object
    built: object
    feeds: dict            # placeholder name -> array
    feed_dict: dict        # placeholder tensor -> array
    fetches: list          # the spec's fetches, then the gradients that exist
    loss: object
    xs: list               # the float placeholders
    grads: list            # aligned with xs (None where unconnected)
    want: list             # the reference values of `fetches`
    values: dict           # every tensor the reference computed
    scale: float           # the largest float magnitude the reference computed

    def report(self, path="", source=None) -> str:
        lines = ["", "--- the graph (a runnable program) ---", program(self.spec, self.feeds),
                 "--- loss and gradients ---", f"loss = {self.loss.name}",
                 "grads = " + ", ".join(f"d{x.name}: {g.name if g is not None else None}"
                                        for x, g in zip(self.xs, self.grads))]
        if source is not None:
            with contextlib.suppress(Exception):
                lines += [f"--- generated source ({path}) ---", source()]
        return "\n".join(lines)


def prepare(spec, loss_over_every_node: bool = True) -> Case:
    built = build(spec)
    values_by_name = spec.values()
    for name, t in built.tensors.items():  # static shapes and dtypes, as the model predicts
        v = values_by_name[name]
        assert t.dtype.name == v.dtype and t.shape.is_compatible_with(v.shape), \
            f"{name} = {v.expr}: staticgrad says {t.dtype.name} {t.shape}, expected " \
            f"{v.dtype} {v.shape}" + program(spec)
    feeds = feed_values(spec)
    feed_dict = {built.tensors[k]: a for k, a in feeds.items()}
    with built.graph.as_default():
        loss, xs, grads = _loss_and_gradients(spec, built, loss_over_every_node)
    fetches = list(built.fetches) + [g for g in grads if g is not None]
    values = {}
    want = evaluate(fetches + [loss], feed_dict, values=values)[:-1]
    floats = [np.max(np.abs(a)) for a in values.values() if a.dtype.kind == "f" and a.size]
    scale = max([1.0] + [float(m) for m in floats])
    for t in built.graph.get_operations():
        STATS["op_types"][t.type] += 1
    return Case(spec, built, feeds, feed_dict, fetches, loss, xs, grads, want, values, scale)


def _loss_and_gradients(spec, built, every_node: bool):
    """A scalar: the sum over float values of reduce_sum(value * fixed random weights), in the
    graph's float dtype, and its gradients w.r.t. the float placeholders. The values: every
    float node (so that every gradient rule in the graph is used), or with `every_node` False
    the float fetches only (the last float node when no fetch is a float)."""
    fdtype = getattr(sg, spec.fdtype)
    rng = np.random.default_rng(spec.seed + 1)
    terms = [built.tensors[v.name] for v in spec.nodes if v.kind == "f"] if every_node else \
        [t for t in built.fetches if t.dtype.is_floating]
    if not terms:
        last = [v for v in spec.nodes if v.kind == "f"]
        terms = [built.tensors[last[-1].name]] if last else []
    parts = []
    for t in dict.fromkeys(terms):  # (a tensor fetched twice counts once)
        shape = tuple(t.shape.as_list()) if t.shape.is_fully_defined() else \
            spec.values()[_name_of(built, t)].shape
        weights = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        if t.dtype is not fdtype:
            t = sg.cast(t, fdtype)
        parts.append(sg.reduce_sum(t * sg.constant(weights, dtype=fdtype)))
    loss = sg.add_n(parts) if parts else sg.constant(0.0, dtype=fdtype)
    xs = [built.tensors[p.name] for p in spec.placeholders if p.kind == "f"]
    grads = dense_gradients(loss, xs) if xs else []
    return loss, xs, grads


def _name_of(built, tensor):
    return next(k for k, t in built.tensors.items() if t is tensor)


# -- comparing ------------------------------------------------------------------------------------
def assert_matches(case: Case, path: str, got: list, source=None) -> None:
    """`got` (one value per fetch) against the reference, within the dtype's tolerance."""
    assert len(got) == len(case.want), f"{path}: {len(got)} results for {len(case.want)} " \
                                       f"fetches" + case.report(path, source)
    for i, (g, w, t) in enumerate(zip(got, case.want, case.fetches)):
        what = f"{path}: fetch {i} ({t.name}, {t.op.type}, {t.dtype.name} {w.shape})"
        g = np.asarray(g)
        for name, waived in WAIVERS.items():
            if g.dtype != w.dtype and waived(t, g, w):
                event(f"waived: {name}")
                STATS["waived"][name] += 1
                g = g.astype(w.dtype)
        if g.shape != w.shape or g.dtype != w.dtype:
            raise AssertionError(f"{what}: got {g.dtype} {g.shape}, the reference made "
                                 f"{w.dtype} {w.shape}" + case.report(path, source))
        if w.dtype.kind != "f":
            ok = np.array_equal(g, w)
        else:
            rtol, atol = TOLERANCE[_least_precise(t)]
            ok = np.allclose(g, w, rtol=rtol, atol=atol * case.scale)
        if not ok:
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            raise AssertionError(f"{what}: differs from the reference by up to {diff.max():.3g}"
                                 f" (scale {case.scale:.3g})\ngot:\n{g!r}\nreference:\n{w!r}"
                                 + case.report(path, source))


def _least_precise(tensor) -> str:
    """The float dtype of the least precise float computation `tensor` comes from: a float64
    cast of a float32 value is as exact as that value."""
    kinds = {t.dtype.name for op in topo_ops([tensor]) for t in op.outputs
             if t.dtype.is_floating}
    return "float32" if "float32" in kinds else tensor.dtype.name


def assert_feeds_intact(case: Case, path: str, source=None) -> None:
    for name, a in feed_values(case.spec).items():
        if not np.array_equal(a, case.feeds[name]):
            raise AssertionError(f"{path}: the run wrote into the feed {name}"
                                 + case.report(path, source))


def run_path(case: Case, path: str, run, source=None) -> list:
    try:
        got = run()
    except Exception as e:  # noqa: BLE001 - any error is a failure, shown with the graph
        raise AssertionError(f"{path} raised {type(e).__name__}: {e}"
                             + case.report(path, source)) from e
    assert_matches(case, path, got, source)
    assert_feeds_intact(case, path, source)
    return got


# -- the paths ------------------------------------------------------------------------------------
def check_sessions(case: Case) -> None:
    """Each configuration runs the case, then again on other feeds of the same shapes (the
    cached plan): the second results must be right, and the first ones unchanged (no buffer
    of a past call handed out again)."""
    graph, fetches, feed = case.built.graph, case.fetches, case.feed_dict
    other = second_feeds(case)
    for path, options, small in configurations():
        with small_thresholds(small):
            sess = sg.Session(graph=graph, options=options)
            with sess:
                source = functools.partial(sess.source, fetches, feed)
                first = run_path(case, path, functools.partial(sess.run, fetches, feed), source)
                kept = [np.array(v, copy=True) for v in first]
                run_path(other, f"{path}, second call",
                         functools.partial(sess.run, fetches, other.feed_dict), source)
                for i, (v, k) in enumerate(zip(first, kept)):
                    if not np.array_equal(np.asarray(v), k, equal_nan=k.dtype.kind == "f"):
                        raise AssertionError(f"{path}: fetch {i} ({fetches[i].name}) of the "
                                             "first call changed during the second"
                                             + case.report(path, source))


def second_feeds(case: Case) -> Case:
    """The case with other feed values (same shapes, dtypes and distributions)."""
    spec = dataclasses.replace(case.spec, seed=case.spec.seed + 7919)
    feeds = feed_values(spec)
    feed_dict = {case.built.tensors[k]: a for k, a in feeds.items()}
    values = {}
    want = evaluate(case.fetches, feed_dict, values=values)
    return dataclasses.replace(case, spec=spec, feeds=feeds, feed_dict=feed_dict, want=want,
                               values=values)


def check_callable(case: Case) -> None:
    placeholders = case.built.placeholders
    arrays = [case.feeds[p.name] for p in case.spec.placeholders]
    with sg.Session(graph=case.built.graph) as sess:
        fn = sess.make_callable(case.fetches, placeholders)
        source = lambda: sess.source(case.fetches, case.feed_dict)  # noqa: E731
        run_path(case, "make_callable", lambda: fn(*arrays), source)
        run_path(case, "make_callable, second call", lambda: fn(*arrays), source)


_modules = itertools.count()


def check_export(case: Case, small: bool) -> None:
    placeholders = case.built.placeholders
    arrays = [case.feeds[p.name] for p in case.spec.placeholders]
    path = f"exported module{' (small arrays)' if small else ''}"
    with tempfile.TemporaryDirectory() as folder, small_thresholds(small), \
            sg.Session(graph=case.built.graph) as sess:
        name = f"fuzz_export_{os.getpid()}_{next(_modules)}"
        file = os.path.join(folder, name + ".py")

        def source():
            with open(file) as f:
                return f.read()

        def run():
            sg.export(case.fetches, placeholders, file, session=sess,
                      feed_shapes=[a.shape for a in arrays])
            spec = importlib.util.spec_from_file_location(name, file)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return list(module.run(*arrays))
        run_path(case, path, run, source)


def check_graph_file(case: Case, small: bool) -> None:
    path = f"graph file round trip{' (small arrays)' if small else ''}"
    doc = json.loads(json.dumps(sg.train.export_meta_graph(graph=case.built.graph)))
    graph = sg.Graph()
    with graph.as_default():
        sg.train.import_meta_graph(doc)
    names = [t.name for t in case.fetches]
    feed = {t.name: a for t, a in case.feed_dict.items()}
    for t in case.fetches:
        copy = graph.get_tensor_by_name(t.name)
        assert copy.dtype is t.dtype and copy.shape.as_list() == t.shape.as_list() \
            if t.shape.ndims is not None else True, \
            f"{path}: {t.name} came back as {copy.dtype.name} {copy.shape}, was " \
            f"{t.dtype.name} {t.shape}" + case.report()
    with small_thresholds(small), sg.Session(graph=graph) as sess:
        run_path(case, path, lambda: sess.run(names, feed), lambda: sess.source(names, feed))


def check_gradients(case: Case) -> None:
    """Float64 gradients of the loss (by the reference interpreter and by a session) against
    central differences, along two random directions per placeholder."""
    distance, where = kink_distance([case.loss], case.values)
    if distance < KINK_MARGIN:
        STATS["gradient_skipped_at_kinks"] += 1
        event("gradient check skipped: a kink within the finite-difference margin")
        return
    with sg.Session(graph=case.built.graph) as sess:
        session_grads = sess.run([g for g in case.grads if g is not None], case.feed_dict)
    frozen = frozen_stop_gradients([case.loss], case.values)
    rng = np.random.default_rng(case.spec.seed + 2)
    # the roundoff of the loss is about eps * this, divided by FD_EPS in a central difference
    loss_scale = 1.0 + sum(float(np.sum(np.abs(case.values[t])))
                           for t in case.built.tensors.values()
                           if t.dtype.is_floating and t in case.values)
    session_grads = iter(session_grads)
    for x, g in zip(case.xs, case.grads):
        value = case.feed_dict[x]
        grad = np.zeros(value.shape) if g is None else case.values[g]
        sess_grad = np.zeros(value.shape) if g is None else next(session_grads)
        for _ in range(2):
            direction = rng.standard_normal(value.shape)
            direction /= max(1e-3, float(np.max(np.abs(direction))))
            numeric = directional_derivative(case.loss, case.feed_dict, x, direction, frozen,
                                             FD_EPS)
            for label, gr in (("reference interpreter", grad), ("session", sess_grad)):
                analytic = float(np.sum(gr * direction))
                if abs(numeric - analytic) > 1e-6 * abs(analytic) + 1e-8 * loss_scale:
                    raise AssertionError(
                        f"d loss / d {x.name} along a random direction: central differences "
                        f"give {numeric!r}, the gradient graph ({label}) {analytic!r} "
                        f"(nearest kink {distance:.3g} at {where or 'none'})"
                        + case.report("gradients", lambda: sess.source(case.grads)))


# -- the tests ------------------------------------------------------------------------------------
def _timed(kind):
    def wrap(fn):
        def timed(*args, **kw):
            start = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                STATS["examples"][kind] += 1
                STATS["seconds"][kind] += time.perf_counter() - start
        return timed
    return wrap


@fuzz_settings(ci_examples=200)
@given(spec=graph_specs())
@_timed("paths")
def test_every_path_agrees_with_the_reference_interpreter(spec):
    case = prepare(spec, loss_over_every_node=spec.seed % 3 != 0)
    check_sessions(case)
    check_callable(case)
    small = case.spec.seed % 2 == 1
    check_export(case, small)
    check_graph_file(case, not small)


@fuzz_settings(ci_examples=300)
@given(spec=graph_specs(fdtypes=("float64",)))
@_timed("gradients")
def test_float64_gradients_agree_with_central_differences(spec):
    check_gradients(prepare(spec))


def test_generator_reaches_at_least_35_op_kinds():
    """The generator's op kinds exist in the registry, and a derandomized sample of its
    graphs uses at least 35 of them."""
    assert set(OP_TYPES) <= set(REGISTRY), sorted(set(OP_TYPES) - set(REGISTRY))
    seen = collections.Counter()

    @settings(max_examples=150, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(spec=graph_specs())
    def collect(spec):
        seen.update(op.type for op in build(spec).graph.get_operations())
    collect()
    assert len(set(seen) & set(OP_TYPES)) >= 35, sorted(seen)


def test_small_array_thresholds_exist():
    """The thresholds the small-array configurations lower are still where they were."""
    for module, name, _ in SMALL:
        assert isinstance(getattr(_home(module), name, None), int), \
            f"{module}.{name} is gone: update SMALL in tests/test_fuzz.py"


@pytest.fixture(scope="module", autouse=True)
def _report():
    start = time.perf_counter()
    yield
    path = os.environ.get("STATICGRAD_FUZZ_REPORT")
    if path:
        report = {"examples": dict(STATS["examples"]),
                  "seconds_in_examples": {k: round(v, 1) for k, v in STATS["seconds"].items()},
                  "seconds_total": round(time.perf_counter() - start, 1),
                  "gradient_checks_skipped_at_kinks": STATS["gradient_skipped_at_kinks"],
                  "results_waived_for_open_bugs": dict(STATS["waived"]),
                  "op_types_covered": len(STATS["op_types"]),
                  "op_types": dict(sorted(STATS["op_types"].items()))}
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
