"""The program under test runs in a process (and grading box) of its own; the verifier
reaches it only through a proxy module that forwards calls and values as JSON data.

Why: a task directory's verifier imports the evolved program (``tests/compute_reward.py``
loads ``app/program.py``). Inside one interpreter the program can rewrite the verifier's
``json.dumps``, builtins, globals, ``sys.modules`` or frames, register an ``atexit``
hook, signal it or write the ``reward.json`` it writes: its score would be whatever it
says. Here the score is the verifier's alone:

- **Two boxes.** The verifier's box holds the workspace and ``tests/`` with the program's
  file replaced by :data:`PROXY` (the real program is not in that box at all). The
  program's box holds the workspace with the real program and :data:`HOST`, which
  imports it and answers requests (not ``tests/``: the verifier's files, expected
  answers included, are out of the program's sight). Each box has its own uid, pid namespace, folder and
  limits (:meth:`scarce_lab.sandbox.base.Sandbox.grading_box`): no shared memory, no
  signals, no files in common.
- **One relay.** :class:`ProgramBridge` (in the harness, on the host) listens on one
  unix socket per box (bound at :data:`PROGRAM_SOCKET` / :data:`VERIFIER_SOCKET`) and
  forwards each request line of the verifier to the program and each answer line back,
  bounded: an answer over ``answer_bytes`` or later than ``call_timeout_s`` is a failure
  *of the program* (:attr:`ProgramBridge.failure`, recorded in the verification): the
  program's box is killed and every call from then on raises ``ProgramError`` in the
  verifier, which scores it as it scores any failing program (never a crash of the run).
- **Data only.** Requests and answers are JSON lines: ``{"op": "hello"}``,
  ``{"op": "get", "name": N}``, ``{"op": "call", "name": N, "args": [...], "kwargs":
  {...}}``, ``{"op": "dir"}``; answers ``{"ok": V}`` or ``{"err": [TYPE, MESSAGE]}``.
  Values are JSON data: None, bool, int, float (NaN and infinities kept), str, list
  (a tuple arrives as a list), dict (keys arrive as str, as JSON has them). Nothing is
  unpickled or evaluated.

The proxy keeps the format's contract for honest programs: ``import program`` (or
loading the file by path), ``program.f(x)``, ``from program import f``, reading a
module-level constant (``program.N``, read anew each time), ``hasattr``/``dir``. What it
cannot carry: objects that are not JSON data (instances, classes, callbacks, numpy
arrays) as arguments or results (``ProgramError`` naming the type), and running the
program file as a command. The program's exceptions arrive as ``ProgramError("TYPE:
MESSAGE")`` (an ``AttributeError`` as ``AttributeError``), its prints go to its own box.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..data import limits as _limits

#: Paths of the two sockets inside the boxes.
PROGRAM_SOCKET = "/run/scarce/program.sock"
VERIFIER_SOCKET = "/run/scarce/verifier.sock"
#: The largest answer line of the program, and request line of the verifier (bytes):
#: ``LIMITS.program_message_bytes`` of the one table of limits (scarce_lab/data/limits.py).
MAX_ANSWER_BYTES = MAX_REQUEST_BYTES = _limits.LIMITS.program_message_bytes
#: The file name of the program host in the program's box.
HOST_FILE = ".scarce_program_host.py"
#: The proxy's first request (when the verifier imports it): answered with the import's result.
HELLO = b'{"op": "hello"}\n'

#: The module the verifier imports in place of the program (``{sock!r}`` and ``{limit}``, the
#: largest request in bytes, filled in).
PROXY = '''"""Proxy of the program under test (made by scarce_lab): every call and value goes to
the program's own process as JSON data (scarce_lab/tasks/program_proxy.py)."""
import json as _sl_json
import socket as _sl_socket
import threading as _sl_threading


class ProgramError(Exception):
    """The program under test failed: its exception, a timeout, an answer over the
    limit, or a value that is not JSON data."""


_sl_lock = _sl_threading.Lock()
_sl_sock = _sl_socket.socket(_sl_socket.AF_UNIX, _sl_socket.SOCK_STREAM)
_sl_sock.connect({sock!r})
_sl_in = _sl_sock.makefile("rb")


def _sl_ask(msg):
    try:
        data = _sl_json.dumps(msg, allow_nan=True).encode("utf-8") + b"\\n"
    except (TypeError, ValueError, RecursionError) as exc:
        raise ProgramError(f"a value cannot go to the program: it is not JSON data ({{exc}})") from None
    if len(data) > {limit}:
        raise ValueError(f"a request to the program is over {limit} bytes")
    with _sl_lock:
        try:
            _sl_sock.sendall(data)
        except OSError:
            pass  # the relay closed the connection: the line it sent first says why
        line = _sl_in.readline()
    try:
        ans = _sl_json.loads(line)
    except (ValueError, RecursionError):
        raise ProgramError("the program's answer is not JSON data") from None
    if isinstance(ans, dict) and set(ans) == {{"ok"}}:
        return ans["ok"]
    err = ans.get("err") if isinstance(ans, dict) else None
    if not (isinstance(err, list) and len(err) == 2 and all(isinstance(x, str) for x in err)):
        raise ProgramError("the program's answer has neither ok nor err")
    if err[0] == "AttributeError":
        raise AttributeError(err[1])
    raise ProgramError(f"{{err[0]}}: {{err[1]}}")


def _sl_remote(name):
    def call(*args, **kwargs):
        return _sl_ask({{"op": "call", "name": name, "args": list(args), "kwargs": kwargs}})
    call.__name__ = call.__qualname__ = name
    return call


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    got = _sl_ask({{"op": "get", "name": name}})
    if isinstance(got, dict) and got.get("callable") is True:
        f = globals()[name] = _sl_remote(name)
        return f
    if not (isinstance(got, dict) and "value" in got):
        raise ProgramError(f"the program's answer for {{name}} is not a value")
    return got["value"]


def __dir__():
    names = _sl_ask({{"op": "dir"}})
    return sorted(n for n in names if isinstance(n, str)) if isinstance(names, list) else []


_sl_ask({{"op": "hello"}})
'''

#: The program's side, in its own box: imports the program and answers requests on
#: the socket (``{sock!r}``, ``{app!r}``, ``{program!r}`` filled in). Whatever the
#: program does to this process only changes what it answers.
HOST = '''import importlib.util, os, socket, sys
from json import dumps, loads
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({sock!r})
rd, wr = s.makefile("rb"), s.makefile("wb")
def send(obj):
    try:
        data = dumps(obj, allow_nan=True)
    except (TypeError, ValueError, RecursionError) as exc:
        data = dumps({{"err": ["TypeError", "the answer is not JSON data: " + str(exc)[:300]]}})
    wr.write(data.encode("utf-8") + b"\\n")
    wr.flush()
def err(exc):
    try:
        msg = str(exc)[:2000]
    except BaseException:
        msg = "(no message)"
    return {{"err": [type(exc).__name__[:100], msg]}}
app = os.path.abspath({app!r})
path = os.path.join(app, {program!r})
os.chdir(app)
sys.path[:0] = [os.path.dirname(path), app]
try:
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    hello = {{"ok": None}}
except BaseException as exc:
    hello = err(exc)
send(hello)
while True:
    line = rd.readline()
    if not line:
        break
    try:
        req = loads(line)
        op, name = req.get("op"), req.get("name")
        if op == "dir":
            out = {{"ok": [n for n in dir(mod) if not n.startswith("__")]}}
        elif op == "get":
            obj = getattr(mod, name)
            out = {{"ok": {{"callable": True}} if callable(obj) else {{"value": obj}}}}
        elif op == "call":
            out = {{"ok": getattr(mod, name)(*req["args"], **req["kwargs"])}}
        else:
            out = {{"err": ["ValueError", "unknown request"]}}
    except BaseException as exc:
        out = err(exc)
    send(out)
'''


def _listen(path: Path) -> socket.socket:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    os.chmod(path, 0o777)  # each box runs as an unprivileged uid of its own
    srv.listen(16)
    return srv


def _error_line(why: str) -> bytes:
    return json.dumps({"err": ["ProgramFailure", why]}).encode("utf-8") + b"\n"


class _Lines:
    """Lines from a socket, each at most ``limit`` bytes, read before a deadline."""

    def __init__(self, sock: socket.socket, limit: int):
        self.sock, self.limit, self.buf, self.scanned = sock, limit, bytearray(), 0

    def read(self, deadline: float) -> bytes | str:
        """The next line (with its newline), or ``"timeout"``, ``"over"`` (longer than
        the limit) or ``"closed"``."""
        while True:
            i = self.buf.find(b"\n", self.scanned)
            if i >= self.limit:
                return "over"
            if i >= 0:
                line = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buf)
            if len(self.buf) > self.limit:
                return "over"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            self.sock.settimeout(None if left == math.inf else left)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                return "timeout"
            except OSError:
                return "closed"
            if not chunk:
                return "closed"
            self.buf += chunk


class ProgramBridge:
    """The harness's relay between the verifier's proxy and the program's process (see
    module docstring). Use as a context manager; :meth:`start` once both boxes exist.

    ``call_timeout_s``: real seconds for the program to import, and for each answer;
    ``answer_bytes``: the largest answer line. ``failure`` is '' until the program
    fails (a timeout, an answer over the limit, its process ending); then it says
    what and the program is stopped (``kill``). ``calls``: requests relayed.
    """

    def __init__(self, *, call_timeout_s: float, answer_bytes: int = MAX_ANSWER_BYTES):
        self.call_timeout_s, self.answer_bytes = float(call_timeout_s), int(answer_bytes)
        self.folder = Path(tempfile.mkdtemp(prefix="scarce-prog-"))
        os.chmod(self.folder, 0o755)
        self._psrv = _listen(self.folder / "program.sock")
        self._vsrv = _listen(self.folder / "verifier.sock")
        self.failure, self.calls = "", 0
        self._lock = threading.Lock()
        self._prog: socket.socket | None = None
        self._lines: _Lines | None = None
        self._hello: bytes | None = None
        self._kill: Callable[[], None] = lambda: None
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = False

    def program_binds(self) -> dict[str, str]:
        """Box path -> host path of the program's socket."""
        return {PROGRAM_SOCKET: str(self.folder / "program.sock")}

    def verifier_binds(self) -> dict[str, str]:
        """Box path -> host path of the verifier's socket."""
        return {VERIFIER_SOCKET: str(self.folder / "verifier.sock")}

    def start(self, kill: Callable[[], None]) -> None:
        """Serve the verifier's connections; ``kill`` stops the program's box."""
        self._kill = kill
        self._spawn(self._accept)

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True, name="program-bridge")
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._vsrv.accept()
            except OSError:
                return
            self._conns.append(conn)
            self._spawn(self._serve, conn)

    def _fail(self, why: str) -> bytes:  # under the lock
        if not self.failure:
            self.failure = why
            with contextlib.suppress(Exception):
                self._kill()
        return _error_line(self.failure)

    def _connect_program(self) -> None:  # under the lock: sets the import's answer
        if self._hello is None:
            deadline = time.monotonic() + self.call_timeout_s
            self._psrv.settimeout(self.call_timeout_s)
            try:
                self._prog, _ = self._psrv.accept()
            except OSError:
                self._hello = self._fail(f"the program's process did not start within {self.call_timeout_s:g} s")
                return
            self._lines = _Lines(self._prog, self.answer_bytes)
            got = self._lines.read(deadline)
            self._hello = got if isinstance(got, bytes) else self._why(got, b'{"op": "import"}')
            if isinstance(got, bytes) and not got.startswith(b'{"ok": null}'):
                self._fail(f"the program failed to import: {got[:300].decode('utf-8', 'replace').strip()}")

    def _why(self, got: str, line: bytes) -> bytes:
        try:  # what was asked, for the record (parsed only here: no cost per call)
            req = json.loads(line)
            what = " ".join(str(req[k])[:80] for k in ("op", "name") if k in req)
        except (ValueError, AttributeError, RecursionError):
            what = "the request"
        return self._fail({"timeout": f"{what} gave no answer within {self.call_timeout_s:g} s",
                           "over": f"{what}'s answer is over {self.answer_bytes} bytes",
                           "closed": f"the program's process ended during {what}"}[got])

    def _relay(self, line: bytes) -> bytes:
        with self._lock:
            self.calls += 1
            if not self.failure:
                self._connect_program()
            if line == HELLO and self._hello is not None:
                return self._hello  # the import's answer (the program's own error, if any)
            if self.failure:
                return _error_line(self.failure)
            try:
                self._prog.sendall(line)
            except OSError:
                return self._fail("the program's process ended")
            got = self._lines.read(time.monotonic() + self.call_timeout_s)
            return got if isinstance(got, bytes) else self._why(got, line)

    def _serve(self, conn: socket.socket) -> None:
        lines = _Lines(conn, MAX_REQUEST_BYTES)
        with contextlib.suppress(OSError):
            while True:
                line = lines.read(math.inf)
                if line == "over":  # the verifier's own request: said to it, the program is not blamed
                    conn.sendall(json.dumps({"err": ["ValueError", f"a request is over {MAX_REQUEST_BYTES} bytes"]})
                                 .encode("utf-8") + b"\n")
                if not isinstance(line, bytes):
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                conn.sendall(self._relay(line))

    def __enter__(self) -> ProgramBridge:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving, close every socket and remove the folder."""
        import shutil

        self._closed = True
        for s in (self._vsrv, self._psrv, self._prog, *self._conns):
            if s is not None:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()
        for t in self._threads:
            t.join(timeout=5.0)
        shutil.rmtree(self.folder, ignore_errors=True)
