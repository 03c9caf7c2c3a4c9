"""Compiling generated Python: `compile_module`, a long module a top-level definition at a
time, on helper processes as well as this one.

CPython's `compile()` takes about 5-10 us a statement and holds the GIL throughout, so a
plan of 200,000 statements (a 100,000-op chain and its gradient) spends 2 s in it on one
core whatever else the machine has. Its top-level definitions (run()'s parts,
backends/numpy/parts.py) compile apart from each other, so a long module is cut into
pieces, the pieces into as many shares as there are cores to use, and each share but the
first goes to a helper process; this process compiles the first meanwhile, then loads the
others' code objects (marshal, which is how CPython stores compiled code in a .pyc), and
runs them all in order. TorchInductor farms out its kernels' compilation the same way.

The helpers are plain `python -I -S -c HELPER` processes of this very interpreter (no site
packages, no environment, never the user's program, which a multiprocessing "spawn" would
import again), started when a large plan is being compiled (`prepare`) and kept for later
ones; each reads pieces and answers with their code objects. They are an optimization only:
a helper that cannot start, answers wrongly or dies has its share compiled here instead,
and then no helper is started again in this process. They see nothing but the source
staticgrad generated, which this process would compile all the same.

    STATICGRAD_COMPILE_HELPERS=0    never start one (default: one fewer than the CPUs this
                                    process may run on, at most MAX_HELPERS)
"""

from __future__ import annotations

import atexit
import marshal
import os
import select
import struct
import subprocess
import sys
import threading
import types
from importlib.util import MAGIC_NUMBER

# A module longer than this is compiled a top-level definition at a time (see compile_module).
PIECE_CHARS = 1 << 18
# ... and one longer than this, on helper processes too (a helper's share below about 50 ms of
# compiling gains less than handing it over costs)
HELPED_CHARS = 1 << 20
MAX_HELPERS = 7
OWN_SHARE = 1.25  # this process's share of the compiling, a helper's being 1
_FLAGS = 0  # compile() flags: none, and none inherited from this module (dont_inherit)

# The helper's whole program. A request: the optimization level, the file name, and the
# pieces, each an 8-byte length and its UTF-8 text, ended by a length of 0; the helper reads
# it all before it compiles anything (so that this process, writing, never waits for its
# compiling). Its answer: per piece an 8-byte length and the marshalled code object, or a
# length of 0 for a piece that is not valid Python on its own, all written once all are
# compiled (the helper does not wait for this process to read either). First of all, the
# helper says which CPython it is.
HELPER = r"""
import marshal, signal, struct, sys
from importlib.util import MAGIC_NUMBER
signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C is for the user's process; a helper
#                                               ends when that process closes its pipe)
read, write = sys.stdin.buffer.read, sys.stdout.buffer.write
write(MAGIC_NUMBER + struct.pack("<Q", sys.hexversion))
sys.stdout.flush()
def number():
    data = read(8)
    if len(data) < 8:
        raise SystemExit(0)
    return struct.unpack("<Q", data)[0]
while True:
    optimize = number()
    filename = read(number()).decode()
    texts = []
    while True:
        size = number()
        if not size:
            break
        texts.append(read(size))
    answers = []
    for text in texts:
        try:
            answers.append(marshal.dumps(compile(text.decode(), filename, "exec", 0, True,
                                                 optimize)))
        except SyntaxError:
            answers.append(b"")
    for answer in answers:
        write(struct.pack("<Q", len(answer)))
        write(answer)
    sys.stdout.flush()
"""
HELLO = MAGIC_NUMBER + struct.pack("<Q", sys.hexversion)
HELLO_SECONDS = 10.0  # how long a new helper may take to say hello before it is given up


def compile_module(source: str, filename: str) -> list[types.CodeType]:
    """The code objects that, run in order in one namespace, do what the module `source`
    does: the whole module, or when it is long, each of its top-level definitions apart
    (with the line numbers they have in `source`), and when it is longer still, some of them
    on helper processes. CPython's compiler holds all of a unit's tokens and syntax tree at
    once, and a long unit costs more a line than a short one: the 250,000 lines of a
    100,000-op chain's run() split into parts (backends/numpy/parts.py) took 650 MB compiled
    as one module, a few MB a definition at a time, and half the time."""
    if len(source) <= PIECE_CHARS:
        return [_compile(source, filename)]
    pieces, start, line = [], 0, 0
    while start < len(source):
        cut = source.find("\n\n\ndef ", start)  # the next top-level definition
        end = len(source) if cut < 0 else cut + 3
        pieces.append((start, end, line))
        line += source.count("\n", start, end)
        start = end
    helpers = _POOL.take(len(source)) if len(source) > HELPED_CHARS else []
    try:
        shares = _shares(source, pieces, len(helpers) + 1)
        sent = [h.send(source, share, filename) for h, share in zip(helpers, shares[1:])]
        codes = [_compile(source[start:end], filename) for start, end, _ in shares[0]]
        for helper, share, ok in zip(helpers, shares[1:], sent):
            answers = helper.receive(len(share)) if ok else None
            if answers is None:  # (the helper is gone: its share is compiled here)
                answers = [_compile(source[start:end], filename) for start, end, _ in share]
            codes += answers
    except SyntaxError:  # not cut between statements after all (inside a string?):
        return [_compile(source, filename)]  # the module as one unit
    finally:
        _POOL.give_back(helpers)
    return [_moved(code, line) for code, (_, _, line) in zip(codes, pieces)]


def _compile(text: str, filename: str) -> types.CodeType:
    """compile() as the helpers call it: no flags inherited from this module."""
    return compile(text, filename, "exec", _FLAGS, True, sys.flags.optimize)


def _shares(source: str, pieces: list, count: int) -> list[list]:
    """`pieces` cut into `count` runs that take about as long to compile each, the first
    (this process's) a quarter longer than a helper's: a helper also marshals its code
    objects, and this process loads them after its own (the first may be empty). CPython's
    compiler takes about as long for a line as for a comma: run()'s long lists of the values
    passed between parts (backends/numpy/parts.py) cost it more a character than the parts'
    statements do."""
    if count == 1:
        return [pieces]
    weights = [source.count("\n", start, end) + source.count(",", start, end)
               for start, end, _ in pieces]
    per = sum(weights) / (count + OWN_SHARE - 1)
    ends = [per * (OWN_SHARE + i) for i in range(count - 1)]  # where each share ends
    shares, done, i = [[] for _ in range(count)], 0, 0
    for piece, weight in zip(pieces, weights):
        while i < len(ends) and done + weight / 2 > ends[i]:
            i += 1
        shares[i].append(piece)
        done += weight
    return [shares[0]] + [share for share in shares[1:] if share]


def _moved(code: types.CodeType, lines: int) -> types.CodeType:
    """`code` (and the functions it defines) as if it began `lines` lines further down."""
    if not lines:
        return code
    consts = tuple(_moved(c, lines) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + lines, co_consts=consts)


def prepare(expected_chars: int) -> None:
    """Start the helpers a module of about `expected_chars` characters would use, so that
    they are ready when it is compiled (the compiler calls this before it renders a large
    program: a helper takes 20-50 ms to start)."""
    if expected_chars > HELPED_CHARS:
        _POOL.start_all()


# -- the helpers ----------------------------------------------------------------------------

class _Helper:
    """One helper process and its two pipes. `failed`: it did not answer as it should (then it
    is closed, and no helper is started again); `pending`: answers sent for and not read (a
    compile that stopped half-way, at a SyntaxError: then it is closed too)."""

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", HELPER], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.greeted = self.failed = self.pending = False

    def send(self, source: str, share: list, filename: str) -> bool:
        """Hand over the pieces `share` of `source`; False if the helper cannot take them.
        (A piece at a time: no copy of the whole share is made.)"""
        try:
            stdin, stdout = self.process.stdin.fileno(), self.process.stdout
            if not self.greeted:  # waiting for it at most HELLO_SECONDS
                ready, _, _ = select.select([stdout], [], [], HELLO_SECONDS)
                if not ready or _read(stdout, len(HELLO)) != HELLO:
                    raise EOFError("the helper is not this CPython")
                self.greeted = True
            name = filename.encode()
            _write(stdin, struct.pack("<QQ", sys.flags.optimize, len(name)) + name)
            for start, end, _ in share:
                text = source[start:end].encode()
                _write(stdin, struct.pack("<Q", len(text)))
                _write(stdin, text)
            _write(stdin, struct.pack("<Q", 0))
            self.pending = True
            return True
        except (OSError, ValueError, EOFError):
            self.failed = True
            return False

    def receive(self, count: int) -> list | None:
        """The code objects of the `count` pieces sent, or None if the helper failed. A piece
        it found invalid raises SyntaxError here, as compiling it here would."""
        try:
            codes = []
            for _ in range(count):
                size = struct.unpack("<Q", _read(self.process.stdout, 8))[0]
                if not size:
                    raise SyntaxError("a piece of the module is not valid Python on its own")
                codes.append(marshal.loads(_read(self.process.stdout, size)))
            self.pending = False
            return codes
        except (OSError, ValueError, EOFError, TypeError, struct.error):
            self.failed = True
            return None

    def close(self) -> None:
        if self.pending or self.failed:  # (it may be compiling still: nobody will read it)
            self.process.kill()
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _write(fd: int, data: bytes) -> None:
    """All of `data` into the pipe `fd`."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read(pipe, size: int) -> bytes:
    """Exactly `size` bytes from `pipe` (EOFError if it ends first)."""
    chunks, left = [], size
    while left:
        chunk = pipe.read(left)
        if not chunk:
            raise EOFError("the helper's pipe ended")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _helpers_wanted() -> int:
    """STATICGRAD_COMPILE_HELPERS, or one fewer than the CPUs this process may use."""
    text = os.environ.get("STATICGRAD_COMPILE_HELPERS", "").strip()
    if text:
        try:
            return max(0, min(int(text), MAX_HELPERS))
        except ValueError:
            return 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return max(0, min(cpus - 1, MAX_HELPERS))


def _can_run_helpers() -> bool:
    """A POSIX system whose sys.executable is a CPython interpreter (not a program embedding
    one, which `-I -S -c` would not make run a script)."""
    name = os.path.basename(sys.executable or "")
    return os.name == "posix" and sys.implementation.name == "cpython" and \
        name.startswith("python")


class _Pool:
    """This process's helpers: idle ones wait in `idle`; a compile takes them all (a second
    compile at once on another thread gets whichever are left, maybe none)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.idle: list[_Helper] = []
        self.started = 0
        self.broken = False  # a helper failed: none is started again

    def _start(self, count: int) -> None:  # (with the lock held)
        while self.started < count and not self.broken:
            try:
                self.idle.append(_Helper())
            except OSError:  # no process can be started here
                self.broken = True
                return
            self.started += 1

    def start_all(self) -> None:
        if self.broken or not _can_run_helpers():
            return
        with self.lock:
            self._start(_helpers_wanted())

    def take(self, chars: int) -> list[_Helper]:
        if self.broken or not _can_run_helpers():
            return []
        wanted = min(_helpers_wanted(), chars // HELPED_CHARS)
        with self.lock:
            gone = [h for h in self.idle if h.process.poll() is not None]  # (killed by hand)
            self.idle = [h for h in self.idle if h not in gone]
            self.started -= len(gone)
            self._start(wanted)
            taken, self.idle = self.idle[:wanted], self.idle[wanted:]
        for helper in gone:
            helper.close()
        return taken

    def give_back(self, helpers: list[_Helper]) -> None:
        done = [h for h in helpers if h.failed or h.pending or h.process.poll() is not None]
        with self.lock:
            self.idle += [h for h in helpers if h not in done]
            self.started -= len(done)
            if any(h.failed for h in done):
                self.broken = True
        for helper in done:
            helper.close()

    def close(self) -> None:
        with self.lock:
            helpers, self.idle = self.idle, []
        for helper in helpers:
            helper.close()

    def forget(self) -> None:
        """In a child forked from this process: the parent's helpers are the parent's (its
        copies of their pipes closed here, so that they see their end when the parent's
        end); the child starts its own."""
        for helper in self.idle:
            for pipe in (helper.process.stdin, helper.process.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
        self.lock = threading.Lock()
        self.idle, self.started = [], 0


_POOL = _Pool()


def _at_exit() -> None:
    _POOL.close()


def _in_forked_child() -> None:
    _POOL.forget()


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_forked_child)
