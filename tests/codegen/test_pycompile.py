"""codegen.pycompile: a long generated module compiled a top-level definition at a time, some
of them on helper processes. The code objects are the very ones compiling in this process
gives (bytecode, constants, every line and column), whoever compiled them; a helper that
fails, lies or dies costs nothing but its help; and none runs where it is switched off."""

import os
import sys
import threading

import numpy as np
import pytest

import staticgrad as sg
from staticgrad.codegen import pycompile


@pytest.fixture
def pool(monkeypatch):
    """A pool of this test's own, with thresholds low enough for small modules."""
    fresh = pycompile._Pool()
    monkeypatch.setattr(pycompile, "_POOL", fresh)
    monkeypatch.setattr(pycompile, "PIECE_CHARS", 1_000)
    monkeypatch.setattr(pycompile, "HELPED_CHARS", 2_000)
    monkeypatch.setenv("STATICGRAD_COMPILE_HELPERS", "2")
    yield fresh
    fresh.close()


def _module(defs: int, tag: str = "") -> str:
    """A module of `defs` top-level functions, with a docstring and constants of each kind."""
    out = [f'"""A generated module{tag}."""\n\nimport math\n']
    for i in range(defs):
        out.append(f"\n\ndef f_{i}(a, b=({i}, 'x{tag}', 1.5, None)):\n"
                   f"    # a comment\n"
                   f"    c = a * {i} + b[0]\n"
                   f"    d = [c, math.sin(c), -{i}.25, b\"bytes\"]\n"
                   f"    return (c,\n"
                   f"            d)\n")
    out.append("\n\nRESULT = [f_0(1), f_1(2)]\n")
    return "".join(out)


def _same_code(a, b) -> None:
    """a and b are the same code: bytecode, names, constants (code objects alike, in turn),
    first line, line table and column table."""
    assert (a.co_name, a.co_filename, a.co_firstlineno) == \
        (b.co_name, b.co_filename, b.co_firstlineno)
    assert a.co_code == b.co_code
    assert (a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars) == \
        (b.co_names, b.co_varnames, b.co_freevars, b.co_cellvars)
    assert list(a.co_lines()) == list(b.co_lines())
    assert list(a.co_positions()) == list(b.co_positions())
    assert len(a.co_consts) == len(b.co_consts)
    for x, y in zip(a.co_consts, b.co_consts):
        if hasattr(x, "co_code"):
            _same_code(x, y)
        else:
            assert type(x) is type(y) and x == y


def _helped(monkeypatch) -> list:
    """How many pieces each helper's answer held, as compile_module receives them."""
    answers = []
    receive = pycompile._Helper.receive

    def counted(self, count):
        codes = receive(self, count)
        answers.append(None if codes is None else len(codes))
        return codes
    monkeypatch.setattr(pycompile._Helper, "receive", counted)
    return answers


def _run(codes) -> dict:
    namespace = {}
    for code in codes:
        exec(code, namespace)  # noqa: S102
    return namespace


pytestmark = pytest.mark.skipif(not pycompile._can_run_helpers(),
                                reason="helpers run where sys.executable is CPython on POSIX")


def test_helpers_compile_the_very_code_this_process_would(pool, monkeypatch):
    source = _module(60)
    answers = _helped(monkeypatch)
    helped = pycompile.compile_module(source, "<gen>")
    assert answers and all(answers), "the helpers were not used"
    monkeypatch.setenv("STATICGRAD_COMPILE_HELPERS", "0")
    alone = pycompile.compile_module(source, "<gen>")
    assert len(helped) == len(alone) == 61  # the docstring and imports, 60 defs (RESULT last)
    for a, b in zip(helped, alone):
        _same_code(a, b)
    # and what they do is what the module does, line numbers included
    whole = compile(source, "<gen>", "exec")
    assert _run(helped)["RESULT"] == _run([whole])["RESULT"]
    last = _run(helped)["f_59"].__code__
    assert last.co_firstlineno == _run([whole])["f_59"].__code__.co_firstlineno


def test_helpers_are_kept_for_the_next_module(pool, monkeypatch):
    answers = _helped(monkeypatch)
    for tag in ("one", "two", "three"):
        source = _module(40, tag)
        codes = pycompile.compile_module(source, f"<{tag}>")
        assert _run(codes)["f_3"].__defaults__[0][1] == f"x{tag}"
    assert len(answers) >= 3 and all(answers)
    assert pool.started <= 2 and not pool.broken


def test_a_helper_that_dies_leaves_its_share_to_this_process(pool, monkeypatch):
    send = pycompile._Helper.send

    def send_and_die(self, *args):
        sent = send(self, *args)
        self.process.kill()  # before it answers
        return sent
    monkeypatch.setattr(pycompile._Helper, "send", send_and_die)
    source = _module(50)
    codes = pycompile.compile_module(source, "<gen>")
    assert _run(codes)["RESULT"] == _run([compile(source, "<gen>", "exec")])["RESULT"]
    assert pool.broken and not pool.idle  # no helper is started again in this process
    monkeypatch.setattr(pycompile._Helper, "send", send)
    answers = _helped(monkeypatch)
    pycompile.compile_module(_module(50, "again"), "<gen>")
    assert answers == []


def test_a_helper_killed_while_idle_is_replaced(pool, monkeypatch):
    pycompile.prepare(10 ** 9)
    killed = [h.process for h in pool.idle]
    for process in killed:
        process.kill()
        process.wait()
    answers = _helped(monkeypatch)
    source = _module(50)
    codes = pycompile.compile_module(source, "<gen>")
    assert _run(codes)["RESULT"] == _run([compile(source, "<gen>", "exec")])["RESULT"]
    assert answers and all(answers) and not pool.broken
    assert not {h.process.pid for h in pool.idle} & {p.pid for p in killed}


def test_a_helper_that_is_not_this_python_is_not_believed(pool, monkeypatch, tmp_path):
    impostor = tmp_path / "python3-impostor"
    impostor.write_text("#!/bin/sh\nprintf 'not a marshal stream at all'\ncat >/dev/null\n")
    impostor.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(impostor))
    source = _module(50)
    codes = pycompile.compile_module(source, "<gen>")
    assert _run(codes)["RESULT"] == _run([compile(source, "<gen>", "exec")])["RESULT"]
    assert pool.broken


def test_a_cut_inside_a_string_compiles_the_module_whole(pool, monkeypatch):
    """A top-level definition's text is looked for, not parsed: a string holding one makes a
    piece that is not Python on its own, in this process's share or a helper's. The module
    is then compiled as one unit, and a helper whose answers were left unread is not used
    again (its next answer would be the old one)."""
    inside = '\n\nTEXT = """a string\n\n\ndef not_a_function():\n    pass\n"""\n'
    for where in (1, 45):  # a cut in this process's share, then in a helper's
        parts = _module(50).split("\n\n\ndef ")
        parts[where] += inside
        source = "\n\n\ndef ".join(parts)
        codes = pycompile.compile_module(source, "<gen>")
        assert len(codes) == 1
        _same_code(codes[0], compile(source, "<gen>", "exec"))
    answers = _helped(monkeypatch)
    source = _module(50, "after")
    codes = pycompile.compile_module(source, "<gen>")
    assert _run(codes)["f_7"].__defaults__[0][1] == "xafter" and all(answers)


def test_no_helper_is_started_when_switched_off(pool, monkeypatch):
    monkeypatch.setenv("STATICGRAD_COMPILE_HELPERS", "0")
    pycompile.prepare(10 ** 9)
    codes = pycompile.compile_module(_module(50), "<gen>")
    assert len(codes) == 51 and pool.started == 0 and not pool.idle


def test_modules_compiled_on_several_threads_at_once(pool):
    results, errors = {}, []

    def compile_one(tag):
        try:
            codes = pycompile.compile_module(_module(40, tag), f"<{tag}>")
            results[tag] = _run(codes)["f_5"].__defaults__[0][1]
        except Exception as e:  # pragma: no cover (reported below)
            errors.append(e)
    threads = [threading.Thread(target=compile_one, args=(f"t{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {f"t{i}": f"xt{i}" for i in range(6)}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_compiles_with_helpers_of_its_own(pool):
    pycompile.prepare(10 ** 9)
    parents = [h.process.pid for h in pool.idle]
    pid = os.fork()
    if pid == 0:  # the child: its own helpers, the right code
        status = 1
        try:
            codes = pycompile.compile_module(_module(50, "child"), "<child>")
            ok = _run(codes)["f_9"].__defaults__[0][1] == "xchild"
            mine = [h.process.pid for h in pycompile._POOL.idle]
            status = 0 if ok and mine and not set(mine) & set(parents) else 2
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    codes = pycompile.compile_module(_module(50, "parent"), "<parent>")
    assert _run(codes)["f_9"].__defaults__[0][1] == "xparent"
    assert [h.process.pid for h in pool.idle] == parents


def test_a_plan_compiled_with_helpers_runs_and_names_its_lines(g, pool, monkeypatch):
    """A long chain's plan, its parts compiled partly by helpers: the values of hand NumPy,
    and an error late in the program (a helper's share) names the op and the user's line."""
    from staticgrad.backends.numpy import parts
    monkeypatch.setattr(parts, "SPLIT_ABOVE", 400)
    monkeypatch.setattr(parts, "PART_LINES", 200)
    answers = _helped(monkeypatch)
    x = sg.placeholder(sg.float32, [4], name="x")
    idx = sg.placeholder(sg.int32, [1], name="idx")
    y = x
    for _ in range(80):
        y = sg.sin(y) * 1.0001
    picked = sg.gather(y, idx, name="pick")
    line = sys._getframe().f_lineno - 1
    feed = np.linspace(0.1, 0.4, 4, dtype=np.float32)
    want = feed
    for _ in range(80):
        want = np.sin(want) * np.float32(1.0001)
    sess = sg.Session()
    got = sess.run(picked, {x: feed, idx: [2]})
    np.testing.assert_allclose(got, want[[2]], rtol=1e-6)
    assert answers and all(answers)
    with pytest.raises(sg.errors.InvalidArgumentError) as info:
        sess.run(picked, {x: feed, idx: [7]})
    assert "pick" in str(info.value) and f":{line}" in str(info.value)
