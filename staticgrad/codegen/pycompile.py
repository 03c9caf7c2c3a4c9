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
ones (each ends after IDLE_SECONDS without work); each reads pieces and answers with their
code objects. They are an optimization only:
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
import socket
import struct
import subprocess
import sys
import threading
import time
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
HELLO_SECONDS = 10.0  # how long new helpers may take to say hello before they are given up
SEND_SECONDS = 30.0  # how long a helper, which reads a whole request first, may take to read it
ANSWER_SECONDS = 30.0  # how long helpers may take beyond this process's share (at least; 10
#                        times that share's time if longer) before their shares are done here
MAX_ANSWER = 1 << 30  # the largest answer believed (a code object's marshalled bytes)
IDLE_SECONDS = 60  # a helper idle this long ends (this process stops using it 10 s sooner)

# The helper's whole program. A request: the optimization level, the recursion limit and the
# limit on an int literal's digits of this process (which compile() obeys), the file name, and
# the pieces, each an 8-byte length and its UTF-8 text, ended by a length of 0; the helper
# reads it all before it compiles anything (so that this process, writing, never waits for
# its compiling). Its answer: per piece an 8-byte length and the marshalled code object, or
# nothing for a piece that is not valid Python on its own, or "!" for one it could not
# compile otherwise or that warned (this process then compiles it, and its warnings and
# warning filters are the user's); all written once all are compiled (the helper does not
# wait for this process to read either). First of all, the helper says which CPython it is.
# A helper with no request for IDLE_SECONDS ends.
HELPER = r"""
import marshal, select, signal, struct, sys, warnings
from importlib.util import MAGIC_NUMBER
signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C is for the user's process; a helper
#                                               ends when that process closes its socket)
read, write = sys.stdin.buffer.read, sys.stdout.buffer.write
write(MAGIC_NUMBER + struct.pack("<Q", sys.hexversion))
sys.stdout.flush()
def number():
    data = read(8)
    if len(data) < 8:
        raise SystemExit(0)
    return struct.unpack("<Q", data)[0]
while True:
    if not select.select([sys.stdin], [], [], IDLE_SECONDS)[0]:
        raise SystemExit(0)  # (idle: its memory back to the system)
    optimize, limit, digits = number(), number(), number()
    filename = read(number()).decode("utf-8", "surrogatepass")
    try:
        sys.setrecursionlimit(limit)
        if hasattr(sys, "set_int_max_str_digits"):
            sys.set_int_max_str_digits(digits)
    except (ValueError, RecursionError):
        pass
    texts = []
    while True:
        size = number()
        if not size:
            break
        texts.append(read(size))
    answers = []
    for text in texts:
        try:
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                code = compile(text.decode("utf-8", "surrogatepass"), filename, "exec", 0,
                               True, optimize)
            answers.append(b"!" if warned else marshal.dumps(code))
        except SyntaxError:
            answers.append(b"")
        except Exception:
            answers.append(b"!")
    for answer in answers:
        write(struct.pack("<Q", len(answer)))
        write(answer)
    sys.stdout.flush()
    texts = answers = text = code = None  # (not kept while it waits for the next request)
"""
HELLO = MAGIC_NUMBER + struct.pack("<Q", sys.hexversion)
_HERE = b"!"  # a helper's answer for a piece it leaves to this process


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
    helpers = []
    try:
        if len(source) > HELPED_CHARS:
            helpers = _POOL.take(len(source))
        shares = _shares(source, pieces, len(helpers) + 1)
        hello_by = time.monotonic() + HELLO_SECONDS  # (for them all: never one after another)
        sent = [h.send(source, share, filename, hello_by)
                for h, share in zip(helpers, shares[1:])]
        began = time.monotonic()
        # (each code object moved as soon as it is made: the unmoved ones are not all kept)
        codes = [_moved(_compile(source[start:end], filename), line)
                 for start, end, line in shares[0]]
        deadline = time.monotonic() + max(ANSWER_SECONDS, 10 * (time.monotonic() - began))
        for helper, share, ok in zip(helpers, shares[1:], sent):
            answers = helper.receive(share, deadline) if ok else [None] * len(share)
            for code, (start, end, line) in zip(answers, share):  # (None: compiled here)
                if code is None:
                    code = _compile(source[start:end], filename)
                codes.append(_moved(code, line))
    except SyntaxError:  # not cut between statements after all (inside a string?): the
        _POOL.give_back(helpers)  # module as one unit, the helpers' answers left unread
        helpers = []
        return [_compile(source, filename)]
    finally:
        _POOL.give_back(helpers)
    return codes


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
        _POOL.start(expected_chars)


# -- the helpers ----------------------------------------------------------------------------

class _Helper:
    """One helper process and the socket it reads and answers on (a socket, not pipes: a
    write to a helper that died fails with an error here, never a SIGPIPE that would kill a
    program that set SIGPIPE's default action). `failed`: it did not answer as it should
    (then it is closed, and no helper is started again); `pending`: from the first byte of a
    request on, until its answers are all read (a request or an answer cut short, by Ctrl-C
    or a SyntaxError, leaves it out of step: it is closed, and another takes its place)."""

    def __init__(self):
        mine, theirs = socket.socketpair()
        theirs.setblocking(True)  # (socket.setdefaulttimeout would make it non-blocking)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c",
                 HELPER.replace("IDLE_SECONDS", str(IDLE_SECONDS))], stdin=theirs.fileno(),
                stdout=theirs.fileno(), stderr=subprocess.DEVNULL,
                start_new_session=True)  # (the terminal's Ctrl-C does not reach it)
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        if hasattr(socket, "SO_NOSIGPIPE"):  # (macOS: no MSG_NOSIGNAL)
            mine.setsockopt(socket.SOL_SOCKET, socket.SO_NOSIGPIPE, 1)
        self.socket = mine
        self.greeted = self.failed = self.pending = False
        self.used = time.monotonic()  # when it last answered (or started)

    def stale(self) -> bool:
        """Has it ended, or will it end soon, idle (IDLE_SECONDS)?"""
        return self.process.poll() is not None or \
            time.monotonic() - self.used > IDLE_SECONDS - 10

    def send(self, source: str, share: list, filename: str, hello_by: float) -> bool:
        """Hand over the pieces `share` of `source`; False if the helper cannot take them
        (a new one that has not said hello by `hello_by`). A piece at a time: no copy of the
        whole share is made."""
        self.pending = True
        try:
            if not self.greeted:
                if self._exactly(len(HELLO), hello_by) != HELLO:
                    raise EOFError("the helper is not this CPython")
                self.greeted = True
            self.socket.settimeout(SEND_SECONDS)  # (for each sendall)
            name = filename.encode("utf-8", "surrogatepass")
            digits = getattr(sys, "get_int_max_str_digits", lambda: 0)()
            self._send(struct.pack("<QQQQ", sys.flags.optimize, sys.getrecursionlimit(),
                                   digits, len(name)) + name)
            for start, end, _ in share:
                text = source[start:end].encode("utf-8", "surrogatepass")
                self._send(struct.pack("<Q", len(text)))
                self._send(text)
            self._send(struct.pack("<Q", 0))
            return True
        except (OSError, ValueError, EOFError):
            self.failed = True
            return False

    def receive(self, share: list, deadline: float) -> list:
        """The code objects of the pieces `share` sent, None for each the helper left to this
        process (all of them if it failed or did not answer by `deadline`). A piece it found
        invalid raises SyntaxError here, as compiling it here would."""
        try:
            codes = []
            for _ in share:
                size = struct.unpack("<Q", self._exactly(8, deadline))[0]
                if not size:
                    raise SyntaxError("a piece of the module is not valid Python on its own")
                if size > MAX_ANSWER:
                    raise ValueError(f"an answer of {size} bytes")
                data = self._exactly(size, deadline)
                code = None if data == _HERE else marshal.loads(data)
                if code is not None and type(code) is not types.CodeType:
                    raise ValueError(f"the helper answered a {type(code).__name__}")
                codes.append(code)
            self.pending, self.used = False, time.monotonic()
            return codes
        except (OSError, ValueError, EOFError, TypeError, struct.error):
            self.failed = True
            return [None] * len(share)

    def _send(self, data: bytes) -> None:
        self.socket.sendall(data, getattr(socket, "MSG_NOSIGNAL", 0))

    def _exactly(self, size: int, deadline: float) -> bytes:
        """`size` bytes from the helper (EOFError if it ends first, TimeoutError if they
        have not all come by `deadline`: socket.timeout, BlockingIOError)."""
        data = bytearray(size)
        view, got = memoryview(data), 0
        while got < size:
            # (past the deadline, what has come is still read: a timeout of 0 raises
            # BlockingIOError only when nothing is there)
            self.socket.settimeout(max(0.0, deadline - time.monotonic()))
            n = self.socket.recv_into(view[got:])
            if not n:
                raise EOFError("the helper's socket ended")
            got += n
        return bytes(data)

    def shut(self) -> None:
        """Close this process's end (the helper then ends at its next read); kill it first
        if it may be compiling still, for nobody."""
        if self.pending or self.failed:
            self.process.kill()
        self.socket.close()

    def wait(self, deadline: float) -> None:
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


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
    """This process's helpers: idle ones wait in `idle`, and `live` holds every one started
    and not yet closed, idle or taken. A compile takes the idle ones it can use (a second
    compile at once on another thread gets whichever are left, maybe none)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.idle: list[_Helper] = []
        self.live: set[_Helper] = set()
        self.broken = False  # a helper failed: none is started again
        self.inherited: list[_Helper] = []  # in a forked child: the parent's (see forget)

    def _start(self, count: int) -> None:  # (with the lock held)
        while len(self.live) < count and not self.broken:
            try:
                helper = _Helper()
            except OSError:  # no process can be started here
                self.broken = True
                return
            self.live.add(helper)
            self.idle.append(helper)

    def start(self, chars: int) -> None:
        """Have the helpers a module of `chars` characters would use started."""
        self._ready(chars, take=False)

    def take(self, chars: int) -> list[_Helper]:
        """The helpers for a module of `chars` characters, out of the idle ones (started as
        needed)."""
        return self._ready(chars, take=True)

    def _ready(self, chars: int, take: bool) -> list[_Helper]:
        if self.broken or not _can_run_helpers():
            return []
        wanted = min(_helpers_wanted(), chars // HELPED_CHARS)
        with self.lock:
            gone = [h for h in self.idle if h.stale()]  # (ended idle, or killed by hand)
            self.idle = [h for h in self.idle if h not in gone]
            self.live.difference_update(gone)
            self._start(wanted)
            taken = []
            if take:
                taken, self.idle = self.idle[:wanted], self.idle[wanted:]
        _close(gone)
        return taken

    def give_back(self, helpers: list[_Helper]) -> None:
        done = [h for h in helpers if h.failed or h.pending or h.process.poll() is not None]
        with self.lock:
            self.idle += [h for h in helpers if h not in done]
            self.live.difference_update(done)
            if any(h.failed for h in done):
                self.broken = True
        _close(done)

    def close(self) -> None:
        """At exit: every helper closed, and none started after (by a daemon thread, or an
        atexit function that runs after this one)."""
        with self.lock:
            helpers, self.idle, self.live = list(self.live), [], set()
            self.broken = True
        _close(helpers)

    def forget(self) -> None:
        """In a child forked from this process: the parent's helpers, idle or taken by a
        thread the child does not have, are the parent's. The child closes its copies of
        their sockets (so that they end when the parent closes its own, and not when the
        child does), keeps their process objects (dropped, each would warn that its process
        still runs), and starts helpers of its own."""
        for helper in self.live:
            helper.socket.close()
        self.inherited += self.live
        self.lock = threading.Lock()
        self.idle, self.live = [], set()


def _close(helpers: list[_Helper]) -> None:
    """Close helpers: every socket first, then a second in all to end before they are
    killed."""
    for helper in helpers:
        helper.shut()
    deadline = time.monotonic() + 1.0
    for helper in helpers:
        helper.wait(deadline)


_POOL = _Pool()


def _at_exit() -> None:
    _POOL.close()


def _in_forked_child() -> None:
    _POOL.forget()


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_forked_child)
