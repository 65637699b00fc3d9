"""Fixtures of the attack suite: every attack runs against both backends.

``backend`` is ``"local"`` (bubblewrap: needs root, bubblewrap and cgroups) and
``"docker"`` (starts an engine when none answers and the machine allows it, builds
the offline task image once, cached by its recipe hash). A backend that cannot run
here skips with the reason; CI runs as root, where both run.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from scarce_lab.sandbox import SandboxError, make_sandbox
from scarce_lab.sandbox.local import detect_capabilities
from scarce_lab.tasks import load_task

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def backend_problem(kind: str) -> str:
    """'' when ``kind`` can run here, else why not."""
    if kind == "local":
        caps = detect_capabilities()
        return "" if caps.mode == "bwrap" else caps.reason
    from scarce_lab.sandbox.docker_image import engine_client, engine_problem, ensure_image

    why = engine_problem()
    if why:
        return why
    try:
        ensure_image(engine_client(start=True))
    except SandboxError as exc:
        return str(exc)
    return ""


def needs(kind: str):
    """Skip unless backend ``kind`` runs here."""
    why = backend_problem(kind)
    if why:
        pytest.skip(f"{kind} sandbox unavailable here: {why}")


@pytest.fixture(params=["local", "docker"])
def backend(request) -> str:
    needs(request.param)
    return request.param


@pytest.fixture
def make_sb(backend):
    """``make_sb(**kw)`` -> a sandbox of the backend, closed after the test."""
    made = []

    def make(**kw):
        sb = make_sandbox(backend, **kw)
        made.append(sb)
        return sb

    yield make
    for sb in made:
        sb.close()


@pytest.fixture
def rev():
    return load_task("rev")


@pytest.fixture
def outside_dir(tmp_path_factory):
    """A fresh root-owned folder outside /tmp and outside the checkout (under /run)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="scarce-sec-", dir="/run" if os.access("/run", os.W_OK) else None))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# -- waiting for what a test needs, not for a fixed time ----------------------------
# On a loaded machine a command, or a process it starts, can take seconds to run: a fixed
# sleep ("it has started by now") then fails the test. These wait for the event itself;
# their deadlines only bound a hang.

#: A shell loop (format it with a ``test`` expression) that waits up to 60 s until the
#: expression holds, e.g. ``UNTIL % "-e hb"`` for "until the file hb exists".
UNTIL = "for _ in $(seq 1200); do [ %s ] && break; sleep 0.05; done;"

#: Shell that starts the original (``./rev``) reading a pipe that stays open for the rest
#: of the command, and sets ``$p`` to its pid once it is blocked reading (state S: the
#: launcher has executed the hidden original). It lives until the command ends.
RUNNING_ORIGINAL = ("(sleep 600 | ./rev) & p=; for _ in $(seq 1200); do p=$(pgrep -n -x rev || pgrep -n rev) && "
                    "[ \"$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)\" = S ] && break; sleep 0.05; done; ")


def wait_for(condition, timeout_s: float = 60.0, every_s: float = 0.05) -> None:
    """Return once ``condition()`` is true; fail the test if it is not after ``timeout_s``."""
    import time

    end = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"not within {timeout_s} s: {getattr(condition, '__name__', condition)}")
        time.sleep(every_s)
