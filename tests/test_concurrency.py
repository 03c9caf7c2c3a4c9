"""One session, many threads: each run gets its own results, and a signature compiles once
however many threads ask for it first.

The threads start together at a barrier; compile_plan is wrapped to count calls and to take a
little longer, so that first calls that were not serialized would all be inside it at once.
Nothing here measures time."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import staticgrad as sg
import staticgrad.session

THREADS = 8
CALLS = 1000


def _in_threads(work, count: int = THREADS) -> None:
    """work(k, barrier) on `count` threads; re-raises the first error any of them hit."""
    barrier = threading.Barrier(count)
    errors = []

    def run(k):
        try:
            work(k, barrier)
        except BaseException as e:  # noqa: BLE001 - reported below, with its thread
            barrier.abort()
            errors.append((k, e))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        k, e = errors[0]
        raise AssertionError(f"thread {k} failed ({len(errors)} of {count} did)") from e


@pytest.fixture
def compiles(monkeypatch):
    """The fetch names of every compile_plan call, each call made slow enough that threads
    not kept apart by the session would overlap inside it."""
    calls = []
    real = staticgrad.session.compile_plan

    def counting(fetches, *args, **kwargs):
        calls.append(tuple(getattr(f, "name", f) for f in fetches))
        time.sleep(0.05)
        return real(fetches, *args, **kwargs)
    monkeypatch.setattr(staticgrad.session, "compile_plan", counting)
    return calls


def _model(g):
    """y = softmax(x @ w + b), s = row sums of x, n = (x * k).sum(): known closed forms."""
    x = sg.placeholder(sg.float64, [None, 4], name="x")
    k = sg.placeholder(sg.float64, [], name="k")
    w = sg.Variable(np.arange(8.0).reshape(4, 2) / 10, name="w")
    b = sg.Variable(np.array([0.5, -0.5]), name="b")
    y = sg.nn.softmax(sg.matmul(x, w) + b, name="y")
    s = sg.reduce_sum(x, axis=1, name="s")
    n = sg.reduce_sum(x * k, name="n")
    return x, k, (w, b), (y, s, n)


def _expected(xv, kv):
    z = xv @ (np.arange(8.0).reshape(4, 2) / 10) + [0.5, -0.5]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), xv.sum(axis=1), (xv * kv).sum()


def _feed(k: int, i: int):
    """Thread k's i-th feed: its own values, and one of three row counts."""
    rows = 1 + (k + i) % 3
    xv = np.full((rows, 4), k * 10_000.0 + i) / 1e4 + np.arange(4.0)
    return xv, float(k * CALLS + i)


def test_threads_running_one_session_each_get_their_own_results(g):
    x, k, variables, (y, s, n) = _model(g)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())

    def work(t, barrier):
        barrier.wait()
        for i in range(CALLS):
            xv, kv = _feed(t, i)
            if i % 3 == 0:
                got = sess.run([y, s, n], {x: xv, k: kv})
            elif i % 3 == 1:
                out = sess.run({"n": n, "y": y, "s": s}, feed_dict={"x:0": xv, "k:0": kv})
                got = [out["y"], out["s"], out["n"]]
            else:
                got = [sess.run(y, {x: xv}), sess.run(s, {x: xv}), sess.run(n, {x: xv, k: kv})]
            for name, have, want in zip("ysn", got, _expected(xv, kv)):
                np.testing.assert_allclose(have, want, rtol=1e-12,
                                           err_msg=f"thread {t}, call {i}, fetch {name}")
    _in_threads(work)


def test_threads_sharing_one_callable_each_get_their_own_results(g):
    x, k, variables, (y, s, n) = _model(g)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    both = sess.make_callable((y, s, n), [x, k])
    one = sess.make_callable(s, [x])

    def work(t, barrier):
        barrier.wait()
        for i in range(CALLS):
            xv, kv = _feed(t, i)
            want = _expected(xv, kv)
            got = both(xv, kv)
            for name, have, expect in zip("ysn", got, want):
                np.testing.assert_allclose(have, expect, rtol=1e-12,
                                           err_msg=f"thread {t}, call {i}, fetch {name}")
            np.testing.assert_allclose(one(xv), want[1], rtol=1e-12,
                                       err_msg=f"thread {t}, call {i}, single feed")
    _in_threads(work)


def test_threads_updating_through_one_session_each_get_their_own_feeds(g):
    """An update op whose value is fed per thread: every call returns its own result (the
    variable itself may see other threads' writes, as in TF1 without use_locking)."""
    delta = sg.placeholder(sg.float32, [3], name="delta")
    v = sg.Variable(np.zeros(3, np.float32), name="v")
    step = sg.assign(v, delta) * 2.0  # the value assigned, doubled: this call's feed only
    sess = sg.Session()
    sess.run(v.initializer)

    def work(t, barrier):
        barrier.wait()
        for i in range(CALLS // 4):
            d = np.array([t, i, t * i], np.float32)
            np.testing.assert_array_equal(sess.run(step, {delta: d}), d * 2,
                                          err_msg=f"thread {t}, call {i}")
    _in_threads(work)


@pytest.mark.parametrize("entry", ["run", "one callable", "a callable each", "source"])
def test_concurrent_first_calls_of_one_signature_compile_it_once(g, compiles, entry):
    x, k, variables, (y, s, n) = _model(g)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    compiles.clear()
    shared = sess.make_callable([y, n], [x, k])
    xv = np.ones((2, 4))
    want = _expected(xv, 3.0)

    def work(t, barrier):
        call = sess.make_callable([y, n], [x, k]) if entry == "a callable each" else shared
        barrier.wait()
        if entry == "run":
            got = sess.run([y, n], {x: xv, k: 3.0})
        elif entry == "source":
            assert "def run(x, k)" in sess.source([y, n], {x: xv, k: 3.0})
            return
        else:
            got = call(xv, 3.0)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[2], rtol=1e-12)
    _in_threads(work)
    assert compiles == [("y:0", "n:0")], compiles
    sess.run([y, n], {x: xv, k: 3.0})  # and later calls find it too
    sess.make_callable([y, n], [x, k])(xv, 3.0)
    assert len(compiles) == 1, compiles


def test_concurrent_first_calls_of_different_signatures_compile_each_once(g, compiles):
    x, k, variables, (y, s, n) = _model(g)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    compiles.clear()

    def work(t, barrier):
        xv = np.ones((1 + t % 4, 4))  # four row counts, two threads each
        barrier.wait()
        np.testing.assert_allclose(sess.run(s, {x: xv}), xv.sum(axis=1), rtol=1e-12)
    _in_threads(work)
    assert compiles == [("s:0",)] * 4, compiles


def test_threads_running_fused_blocks_each_get_their_own_results(g):
    """Large elementwise chains run in blocks on helper threads: several callers at once
    (each with its own scratch and its own blocks) still get their own values."""
    size = 300_000  # more than two blocks, so run_blocks hands out shares
    x = sg.placeholder(sg.float32, [size], name="x")
    y = sg.tanh(x * 0.5 + 1.0) * sg.exp(-x) - x
    sess = sg.Session()
    assert "rt.run_blocks(" in sess.source(y, {x: np.zeros(size, np.float32)})

    def work(t, barrier):
        xv = np.linspace(-1, 1, size, dtype=np.float32) + np.float32(t) / 8
        want = np.tanh(xv * 0.5 + 1.0) * np.exp(-xv) - xv
        barrier.wait()
        for i in range(10):
            np.testing.assert_allclose(sess.run(y, {x: xv}), want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"thread {t}, call {i}")
    _in_threads(work)


def test_random_draws_from_threads_are_all_distinct(g):
    """Generators are shared by the threads of one session (NumPy's lock each draw), so no
    two runs get the same draw."""
    r = sg.random_uniform([4], seed=5)
    sess = sg.Session()
    draws = [[] for _ in range(THREADS)]

    def work(t, barrier):
        barrier.wait()
        for _ in range(100):
            draws[t].append(tuple(sess.run(r)))
    _in_threads(work)
    every = [d for per_thread in draws for d in per_thread]
    assert len(set(every)) == len(every) == THREADS * 100


def test_with_one_session_in_two_threads_restores_each_threads_defaults():
    """`with sess:` kept the graph context on the session: a second thread's `with` replaced
    the first's, so one thread's graph stayed default after its block (and the other's
    context was finalized as garbage, popping the wrong stack)."""
    from staticgrad.graph import _default
    graph = sg.Graph()
    sess = sg.Session(graph=graph)
    inside = threading.Barrier(2)
    left_first = threading.Event()
    after = {}

    def work(t, barrier):
        barrier.wait()
        with sess:
            assert sg.get_default_graph() is graph and sg.get_default_session() is sess
            inside.wait(timeout=30)  # both threads are inside their blocks
            if t == 1:
                assert left_first.wait(30)
        if t == 0:
            left_first.set()
        after[t] = (list(_default.stack), sg.get_default_session())
    _in_threads(work, count=2)
    assert after == {0: ([], None), 1: ([], None)}


def test_concurrent_close_and_runs_never_give_wrong_results(g):
    """Runs racing a close() either return their own correct result, raise RuntimeError
    (closed before they began) or CancelledError (closed under them): nothing else."""
    x, k, variables, (y, s, n) = _model(g)
    sess = sg.Session()
    sess.run(sg.global_variables_initializer())
    call = sess.make_callable([y, n], [x, k])
    outcomes = [[] for _ in range(THREADS)]

    def work(t, barrier):
        barrier.wait()
        if t == 0:
            for _ in range(50):
                sess.run(s, {x: np.ones((1, 4))})
            sess.close()
            return
        i = 0
        # until a few calls after the close (however the threads happen to be scheduled)
        while outcomes[t].count("closed") < 3 and i < 100 * CALLS:
            i += 1
            xv, kv = _feed(t, i % CALLS)
            try:
                got = sess.run([y, n], {x: xv, k: kv}) if i % 2 else call(xv, kv)
            except RuntimeError as e:
                assert str(e).startswith("Attempted to use a closed Session."), e
                outcomes[t].append("closed")
                continue
            except sg.errors.CancelledError:
                outcomes[t].append("cancelled")
                continue
            want = _expected(xv, kv)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
            np.testing.assert_allclose(got[1], want[2], rtol=1e-12)
            outcomes[t].append("ok")
    _in_threads(work)
    for t in range(1, THREADS):
        assert outcomes[t][-1] == "closed", outcomes[t][-5:]  # every thread saw it closed
        first_closed = outcomes[t].index("closed")
        assert set(outcomes[t][first_closed:]) == {"closed"}  # and never ran again after


# -- use_locking -----------------------------------------------------------------------------------
STEPS = 300


def _step_from_threads(g, step, init) -> None:
    with sg.Session(graph=g) as sess:
        sess.run(init)
        run = sess.make_callable(step)

        def work(k, barrier):
            barrier.wait()
            for _ in range(STEPS):
                run()
        _in_threads(work)
        return sess.run(g.get_tensor_by_name("w:0"))


def test_use_locking_loses_no_update_of_a_large_variable():
    """8 threads x 300 runs of `w -= 1` on 300,000 elements: with use_locking every update
    lands (without it NumPy's in-place subtract releases the GIL, and updates are lost)."""
    with sg.Graph().as_default() as g:
        w = sg.Variable(np.zeros(300_000, np.float32), name="w")
        step = sg.assign_sub(w, sg.ones_like(w), use_locking=True)
        init = sg.global_variables_initializer()
    final = _step_from_threads(g, step.op, init)
    np.testing.assert_array_equal(final, np.full(300_000, -THREADS * STEPS, np.float32))


@pytest.mark.parametrize("make", [
    lambda: sg.train.GradientDescentOptimizer(0.01, use_locking=True),
    lambda: sg.train.MomentumOptimizer(0.01, 0.9, use_locking=True),
    lambda: sg.train.AdamOptimizer(0.01, use_locking=True),
], ids=["sgd", "momentum", "adam"])
def test_use_locking_makes_concurrent_optimizer_steps_equal_to_sequential_ones(make):
    """With use_locking a run holds its variables' locks from start to end, so slot updates
    (momentum, Adam's moments and beta powers) are serialized too: concurrent steps give what
    the same number of steps one after another gives."""
    def build():
        g = sg.Graph()
        with g.as_default():
            w = sg.Variable(np.linspace(-1, 1, 50_000).astype(np.float32), name="w")
            step = make().minimize(sg.reduce_sum(sg.square(w - 0.5)))
            init = sg.global_variables_initializer()
        return g, step, init
    g, step, init = build()
    concurrent = _step_from_threads(g, step, init)
    g, step, init = build()
    with sg.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(THREADS * STEPS):
            sess.run(step)
        sequential = sess.run(g.get_tensor_by_name("w:0"))
    np.testing.assert_allclose(concurrent, sequential, rtol=1e-5, atol=1e-6)


def test_use_locking_holds_the_locks_in_the_generated_code_and_exported_module(tmp_path):
    with sg.Graph().as_default() as g:
        w = sg.Variable(np.zeros(4, np.float32), name="w")
        step = sg.assign_add(w, sg.ones_like(w), use_locking=True)
        plain = sg.assign_add(w, sg.ones_like(w))
        init = sg.global_variables_initializer()
    with sg.Session(graph=g) as sess:
        sess.run(init)
        assert "with L['w']:" in sess.source(step)
        assert "L[" not in sess.source(plain)
        sg.export(step, [], str(tmp_path / "locked.py"), session=sess)
    import importlib.util
    spec = importlib.util.spec_from_file_location("locked", tmp_path / "locked.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.run()
    np.testing.assert_array_equal(module.run()[0], np.full(4, 2, np.float32))
