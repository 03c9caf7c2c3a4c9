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
    """a and b are the same code: bytecode, names, flags, sizes, constants (code objects
    alike, in turn), first line, line, exception and column tables."""
    for field in ("co_name", "co_qualname", "co_filename", "co_firstlineno", "co_code",
                  "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_flags",
                  "co_stacksize", "co_argcount", "co_posonlyargcount", "co_kwonlyargcount",
                  "co_exceptiontable", "co_linetable"):
        assert getattr(a, field, None) == getattr(b, field, None), field
    assert list(a.co_lines()) == list(b.co_lines())
    if hasattr(a, "co_positions"):
        assert list(a.co_positions()) == list(b.co_positions())
    assert len(a.co_consts) == len(b.co_consts)
    for x, y in zip(a.co_consts, b.co_consts):
        if hasattr(x, "co_code"):
            _same_code(x, y)
        else:
            assert type(x) is type(y) and x == y


def _same_as_here(codes, source: str, filename: str = "<gen>") -> None:
    """`codes` are, piece by piece, what this process makes alone (helpers off): a helper's
    share, answered or compiled here after it failed, is checked as well as the first
    pieces (which RESULT alone would read)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STATICGRAD_COMPILE_HELPERS", "0")
        alone = pycompile.compile_module(source, filename)
    assert len(codes) == len(alone) > 2
    for a, b in zip(codes, alone):
        _same_code(a, b)


def _after_sending(monkeypatch, action):
    """Each helper's send followed by action(helper); the real send, to put back."""
    send = pycompile._Helper.send

    def send_then(self, *args):
        sent = send(self, *args)
        action(self)
        return sent
    monkeypatch.setattr(pycompile._Helper, "send", send_then)
    return send


def _helped(monkeypatch) -> list:
    """How many pieces each helper compiled, per answer, as compile_module receives them."""
    answers = []
    receive = pycompile._Helper.receive

    def counted(self, share, deadline):
        codes = receive(self, share, deadline)
        answers.append(sum(code is not None for code in codes))
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
        if tag == "one":
            first = {h.process.pid for h in pool.live}
    assert len(answers) >= 3 and all(answers)
    assert {h.process.pid for h in pool.live} == first and not pool.broken


def test_a_helper_that_dies_leaves_its_share_to_this_process(pool, monkeypatch):
    send = _after_sending(monkeypatch, lambda helper: helper.process.kill())  # unanswered
    source = _module(50)
    codes = pycompile.compile_module(source, "<gen>")
    assert _run(codes)["RESULT"] == _run([compile(source, "<gen>", "exec")])["RESULT"]
    _same_as_here(codes, source)
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
    _same_as_here(codes, source)
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
    _same_as_here(codes, source)
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
    assert _run(codes)["f_7"].__defaults__[0][1] == "xafter"
    assert answers and all(answers) and not pool.broken


def test_no_helper_is_started_when_switched_off(pool, monkeypatch):
    monkeypatch.setenv("STATICGRAD_COMPILE_HELPERS", "0")
    pycompile.prepare(10 ** 9)
    codes = pycompile.compile_module(_module(50), "<gen>")
    assert len(codes) == 51 and not pool.live and not pool.idle


def test_modules_compiled_on_several_threads_at_once(pool, monkeypatch):
    answers = _helped(monkeypatch)
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
    assert answers and all(answers)


def test_a_request_cut_short_leaves_no_helper_out_of_step(pool, monkeypatch):
    """Ctrl-C (or any exception) while a share is handed over: the helper got part of a
    request, and would read the next one out of step (answering the old module's pieces,
    or waiting for ever). It is closed, and a new one compiles the next module."""
    for cut_after in (1, 3, 6):  # between the head and a piece, inside the pieces, at the end
        sends = []
        real = pycompile._Helper._send

        def interrupted(self, data, real=real, sends=sends, cut_after=cut_after):
            sends.append(len(data))
            if len(sends) == cut_after:
                raise KeyboardInterrupt
            real(self, data)
        monkeypatch.setattr(pycompile._Helper, "_send", interrupted)
        with pytest.raises(KeyboardInterrupt):
            pycompile.compile_module(_module(50, "old"), "<old>")
        monkeypatch.setattr(pycompile._Helper, "_send", real)
        answers = _helped(monkeypatch)
        source = _module(50, f"new{cut_after}")
        codes = pycompile.compile_module(source, "<new>")
        names = _run(codes)
        assert names["f_49"].__defaults__[0][1] == f"xnew{cut_after}"
        assert [c.co_filename for c in codes] == ["<new>"] * len(codes)
        assert answers and all(answers) and not pool.broken
        monkeypatch.undo()
        monkeypatch.setattr(pycompile, "_POOL", pool)
        monkeypatch.setattr(pycompile, "PIECE_CHARS", 1_000)
        monkeypatch.setattr(pycompile, "HELPED_CHARS", 2_000)
        monkeypatch.setenv("STATICGRAD_COMPILE_HELPERS", "2")


def test_a_helper_that_stops_answering_is_not_waited_for(pool, monkeypatch):
    import signal
    monkeypatch.setattr(pycompile, "ANSWER_SECONDS", 1.0)
    stopped = []

    def stop(helper):  # alive, and silent
        os.kill(helper.process.pid, signal.SIGSTOP)
        stopped.append(helper.process)
    _after_sending(monkeypatch, stop)
    source = _module(50)
    codes = pycompile.compile_module(source, "<gen>")
    assert _run(codes)["RESULT"] == _run([compile(source, "<gen>", "exec")])["RESULT"]
    _same_as_here(codes, source)
    assert stopped and all(p.poll() is not None for p in stopped)  # killed and reaped
    assert pool.broken


def test_helpers_that_say_half_a_hello_are_not_waited_for(pool, monkeypatch, tmp_path):
    """Two of them: one wait for both, not one after the other."""
    import time
    impostor = tmp_path / "python3-slow"
    impostor.write_text("#!/bin/sh\nprintf 'abc'\nsleep 30\n")
    impostor.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(impostor))
    monkeypatch.setattr(pycompile, "HELLO_SECONDS", 2.5)
    source = _module(100)
    began = time.monotonic()
    codes = pycompile.compile_module(source, "<gen>")
    assert time.monotonic() - began < 4.6  # (one after the other: 5 s and more)
    assert _run(codes)["RESULT"] == _run([compile(source, "<gen>", "exec")])["RESULT"]
    _same_as_here(codes, source)
    assert pool.broken and not pool.live


def test_a_default_socket_timeout_of_the_program_changes_nothing(pool, monkeypatch):
    """socket.setdefaulttimeout makes new sockets non-blocking: the helper's end, its stdin
    and stdout, must not be (a read would find nothing there and the helper die)."""
    import socket
    monkeypatch.setattr(socket, "_GLOBAL_DEFAULT_TIMEOUT", socket._GLOBAL_DEFAULT_TIMEOUT)
    before = socket.getdefaulttimeout()
    socket.setdefaulttimeout(5)
    try:
        answers = _helped(monkeypatch)
        source = _module(60)
        codes = pycompile.compile_module(source, "<gen>")
    finally:
        socket.setdefaulttimeout(before)
    assert _run(codes)["RESULT"] == _run([compile(source, "<gen>", "exec")])["RESULT"]
    _same_as_here(codes, source)
    assert answers and all(answers) and not pool.broken


def test_answers_that_came_in_time_are_read_after_the_deadline(pool):
    """Past the deadline (this process paused, or busy with a failed helper's share), what
    a helper has already answered is still read rather than thrown away."""
    import select
    import time
    pycompile.prepare(10 ** 9)
    helper = pool.take(10 ** 9)[0]
    source = _module(30)
    share = [(0, len(source), 0)]
    assert helper.send(source, share, "<gen>", time.monotonic() + 10)
    select.select([helper.socket], [], [], 30)  # it answers meanwhile
    time.sleep(0.5)
    codes = helper.receive(share, time.monotonic() - 1)
    pool.give_back([helper])
    assert codes[0] is not None and not helper.failed and not pool.broken
    _same_code(codes[0], compile(source, "<gen>", "exec", 0, True))


def test_a_piece_that_warns_warns_here(pool, monkeypatch):
    """A helper's warnings would go nowhere: a piece that warns is compiled in this process
    instead, where the user's warning filters see it (and turn it into an error where they
    say so, as without helpers)."""
    import warnings
    source = _module(60) + '\n\n\ndef escape():\n    return "\\d"\n'
    answers = _helped(monkeypatch)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        codes = pycompile.compile_module(source, "<gen>")
    assert _run(codes)["escape"]() == "\\d"
    assert any("escape" in str(w.message) for w in warned)
    assert answers and not pool.broken
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SyntaxError):
            pycompile.compile_module(source, "<gen>")


def test_no_helper_starts_after_the_pool_is_closed(pool):
    pycompile.prepare(10 ** 9)
    pool.close()
    codes = pycompile.compile_module(_module(50), "<gen>")
    assert len(codes) == 51 and not pool.live and not pool.idle


def test_a_helper_dying_never_kills_a_program_that_lets_sigpipe_kill(tmp_path):
    """A program piped to `head` often sets SIGPIPE's default action (death). A helper that
    died before it read its share must cost that program its help, not its life."""
    import subprocess
    script = tmp_path / "sigpipe.py"
    script.write_text(f"""
import signal, sys, time
sys.path.insert(0, {os.getcwd()!r})
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
from staticgrad.codegen import pycompile
from tests.codegen.test_pycompile import _module
pycompile.PIECE_CHARS, pycompile.HELPED_CHARS = 1000, 2000
real = pycompile._Helper.send
def send(self, *args):  # the helper says hello, then dies before it reads its share
    assert self._exactly(len(pycompile.HELLO), time.monotonic() + 10) == pycompile.HELLO
    self.greeted = True
    self.process.kill()
    self.process.wait()
    return real(self, *args)
pycompile._Helper.send = send
source = _module(400)
codes = pycompile.compile_module(source, "<gen>")
namespace = {{}}
for code in codes:
    exec(code, namespace)
print("alive", namespace["f_399"](1)[0], pycompile._POOL.broken)
""")
    env = {**os.environ, "STATICGRAD_COMPILE_HELPERS": "1"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["alive", "798", "True"]


def test_helpers_obey_this_process_s_limits_and_file_name(pool, monkeypatch):
    """What compile() reads from the process besides the text: the recursion limit (a
    deeply nested expression), the limit on an int literal's digits, the optimization level
    (asserts), and a file name that is not UTF-8 (an export to such a path)."""
    limit = sys.getrecursionlimit()
    monkeypatch.setattr(sys, "getrecursionlimit", lambda: 6000)  # what is sent
    sys.setrecursionlimit(6000)
    try:
        deep = "\n\n\ndef deep():\n    return " + "-" * 3000 + "1\n"
        huge = "\n\n\ndef huge():\n    return " + "7" * 5000 + "\n"
        digits = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        source = _module(50) + deep + huge
        answers = _helped(monkeypatch)
        for filename in (os.fsdecode(b"/tmp/export_\xff.py"), "/tmp/\ud800.py"):
            codes = pycompile.compile_module(source, filename)
            assert answers and all(answers) and not pool.broken
            names = _run(codes)
            assert names["deep"]() == 1 and names["huge"]() == int("7" * 5000)
            assert {c.co_filename for c in codes} == {filename}
    finally:
        sys.setrecursionlimit(limit)
        sys.set_int_max_str_digits(digits)


def test_helpers_compile_as_python_O_does(tmp_path):
    import subprocess
    script = tmp_path / "optimized.py"
    script.write_text(f"""
import sys
sys.path.insert(0, {os.getcwd()!r})
from staticgrad.codegen import pycompile
pycompile.PIECE_CHARS, pycompile.HELPED_CHARS = 1000, 2000
body = "\\n\\n\\ndef check_{{}}():\\n    assert False, 'not stripped'\\n    return __debug__\\n"
source = "X = 1\\n" + "".join(body.format(i) for i in range(200))
codes = pycompile.compile_module(source, "<gen>")
namespace = {{}}
for code in codes:
    exec(code, namespace)
print(all(namespace[f"check_{{i}}"]() is False for i in range(200)),
      bool(pycompile._POOL.live))
""")
    env = {**os.environ, "STATICGRAD_COMPILE_HELPERS": "1"}
    proc = subprocess.run([sys.executable, "-O", str(script)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "True"]


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


def test_idle_helpers_end_and_are_replaced(pool, monkeypatch):
    """A helper with nothing to do for IDLE_SECONDS ends (its memory back to the system);
    this process stops using one 10 s before that, so that none ends as it is handed work."""
    import time
    monkeypatch.setattr(pycompile, "IDLE_SECONDS", 1)
    pycompile.prepare(10 ** 9)
    first = list(pool.idle)
    assert first and all(h.process.wait(timeout=30) == 0 for h in first)  # ended by themselves
    monkeypatch.setattr(pycompile, "IDLE_SECONDS", 11)
    answers = _helped(monkeypatch)
    codes = pycompile.compile_module(_module(50), "<gen>")
    assert len(codes) == 51 and answers and all(answers) and not pool.broken
    second = list(pool.idle)
    assert second and not set(second) & set(first)
    time.sleep(1.2)  # idle past IDLE_SECONDS - 10: not used again
    codes = pycompile.compile_module(_module(50), "<gen>")
    assert not set(pool.idle) & set(second) and not pool.broken
