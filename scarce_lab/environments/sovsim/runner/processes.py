"""A SovSim sweep spread over several local processes.

One Python process runs every model call of :func:`~scarce_lab.environments.sovsim.runner.play.arun_sweep`
on one event loop; against a fast provider its CPU (litellm builds, sends, parses and
prices each call: several milliseconds) becomes the limit, and the games wait for the
loop instead of the provider. :func:`run_sweep_processes` deals the games round-robin
over ``processes`` child processes, each a plain
:func:`~scarce_lab.environments.sovsim.runner.play.run_sweep` with its own model client. The games, their
seeds and their run folders are exactly those of a one-process sweep (same configs, same
run ids, the one resume rule of :func:`scarce_lab.runtime.open_run`).

Children are forked where the platform allows it (Linux), after the parent has imported
litellm once (about 3.5 s of CPU that each child would otherwise pay again); elsewhere
they start as ``python -m scarce_lab.environments.sovsim.runner.processes JOB`` (callers need no
``if __name__ == "__main__"`` guard either way).

Limits are split, not multiplied (:func:`split_settings`); a limit a process learns
from a 429 stays in that process. A child that dies (killed, out of memory, an exception
outside a game) is reported per game (:func:`run_sweep_processes`); the run folders of
its unfinished games stay resumable (``--resume``).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from collections import Counter
from pathlib import Path
from typing import IO

from scarce_lab.llm.client import LLMSettings
from scarce_lab.llm.models import needs_client

from ..config import SovSimConfig
from .play import GameResult

_RESULT = "result "
_ERROR = "error "


def split_settings(settings: LLMSettings, processes: int, concurrency: int, index: int = 0) -> LLMSettings:
    """``settings`` for process ``index`` of ``processes``: its share of ``concurrency``
    (shares differ by at most one and sum to ``concurrency``) and every rate limit (rpm,
    tpm) divided by ``processes`` (rounded down). A single request larger than a
    process's share of tpm cannot be sent: use fewer processes for such limits.

    Raises:
        ValueError: ``processes`` or ``concurrency`` below 1, ``processes`` above
            ``concurrency``, ``index`` outside 0..processes-1, or a limit smaller than
            ``processes`` (a share below 1 would have to be rounded up: more than the
            limit in all).
    """
    if processes < 1 or concurrency < processes or not 0 <= index < processes:
        raise ValueError(f"processes={processes}, concurrency={concurrency}, index={index}: need "
                         "1 <= processes <= concurrency and 0 <= index < processes")
    for key, limit in settings.rate_limits.items():
        for kind in ("rpm", "tpm"):
            value = getattr(limit, kind)
            if value is not None and value < processes:
                raise ValueError(f"rate limit {key}.{kind}={value} cannot be split over {processes} processes "
                                 "(each would get less than 1); use fewer processes")
    limits = {
        key: limit.model_copy(update={
            "rpm": None if limit.rpm is None else limit.rpm // processes,
            "tpm": None if limit.tpm is None else limit.tpm // processes,
        })
        for key, limit in settings.rate_limits.items()
    }
    share = concurrency // processes + (index < concurrency % processes)
    return settings.model_copy(update={"max_concurrency": share, "rate_limits": limits})


def run_sweep_processes(
    configs: list[SovSimConfig],
    out_dir: Path,
    *,
    processes: int,
    concurrency: int = 8,
    settings: LLMSettings | None = None,
    resume: bool = False,
    progress: bool = True,
    start: str | None = None,
) -> list[GameResult]:
    """Run a SovSim sweep in ``processes`` child processes; results in ``configs`` order.

    Args:
        configs: the games (each a :class:`SovSimConfig`).
        out_dir: the dataset folder (one run folder per game, as one process writes it).
        processes: child processes (>= 1; at most ``concurrency`` and one per game are
            started); games are dealt round-robin.
        concurrency: concurrent model calls over all processes.
        settings: the model client's settings (default: the first model-driven config's
            ``llm`` settings, as :func:`~scarce_lab.environments.sovsim.runner.play.arun_sweep` uses),
            split by :func:`split_settings`.
        resume: continue unfinished runs (see :func:`scarce_lab.runtime.open_run`).
        progress: a progress bar over finished games (a failed game is counted beside it,
            never as done).
        start: ``"fork"`` or ``"exec"`` (``python -m``); default fork on Linux, exec
            elsewhere.

    Returns:
        one :class:`GameResult` per config; a game whose child process died before
        reporting it is ``failed`` with the child's exit status and error.

    Raises:
        ValueError: ``processes`` or ``concurrency`` below 1, an unknown ``start``, or
            the same game (run id) twice in ``configs``.
    """
    from tqdm import tqdm

    from scarce_lab.llm import make_client

    twice = sorted(r for r, k in Counter(c.run_id for c in configs).items() if k > 1)
    if twice:
        raise ValueError(f"the sweep holds the same game more than once (one run folder each): {twice[:5]}")
    model_driven = [c for c in configs if any(needs_client(m) for m in c.seat_models().values())]
    if settings is None:
        settings = make_client(model_driven[0].llm).settings if model_driven else LLMSettings()
        settings = settings.model_copy(update={"reasoning_effort": None})  # each agent sends its seat's
    if processes < 1 or concurrency < 1:
        raise ValueError(f"processes={processes} and concurrency={concurrency} must be at least 1")
    processes = max(1, min(processes, concurrency, len(configs)))
    if start is None:
        # fork only on Linux: macOS lists it, but forking after ssl/litellm loaded can crash there
        start = "fork" if sys.platform.startswith("linux") else "exec"
    if start not in ("fork", "exec"):
        raise ValueError(f"start must be 'fork' or 'exec', got {start!r}")
    if start == "fork" and model_driven:
        from scarce_lab.llm.transport import load_litellm

        load_litellm()  # once here, inherited by every child
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    shards = [s for s in (configs[i::processes] for i in range(processes)) if s]
    found: dict[str, GameResult] = {}
    lock = threading.Lock()
    bar = None
    try:
        with tempfile.TemporaryDirectory(prefix="scarce-lab-sweep-") as tmp:
            children = []
            for i, shard in enumerate(shards):
                per = split_settings(settings, len(shards), concurrency, i)
                job = {"out_dir": str(out_dir), "settings": per.model_dump(mode="json"), "resume": resume}
                children.append(_start(start, shard, job, Path(tmp) / f"shard{i}.json"))
            # the bar (and its monitor thread) only after the forks
            bar = tqdm(total=len(configs), unit="game", desc="sovsim", disable=not progress)
            readers = [threading.Thread(target=_collect, args=(child, shard, found, lock, bar))
                       for child, shard in zip(children, shards, strict=True)]
            for r in readers:
                r.start()
            for r in readers:
                r.join()
    finally:
        if bar is not None:
            bar.close()
    return [found[c.run_id] for c in configs]


class _Child:
    """A started child: its result lines, how to wait for it, its error output."""

    def __init__(self, lines: IO[str], wait, errors):
        self.lines, self.wait, self.errors = lines, wait, errors


def _start(start: str, shard: list[SovSimConfig], job: dict, job_file: Path) -> _Child:
    payload = {**job, "configs": [c.model_dump(mode="json") for c in shard]}
    if start == "fork":
        read_fd, write_fd = os.pipe()
        proc = multiprocessing.get_context("fork").Process(
            target=_forked_child, args=(payload, write_fd, read_fd), daemon=True
        )
        proc.start()
        os.close(write_fd)

        def _wait() -> int:
            proc.join()
            return proc.exitcode

        return _Child(os.fdopen(read_fd, encoding="utf-8", errors="replace"), _wait, lambda: "")
    job_file.write_text(json.dumps(payload))
    env = dict(os.environ)
    # the child imports the scarce_lab this module belongs to, as the parent does
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    proc = subprocess.Popen(
        [sys.executable, "-m", "scarce_lab.environments.sovsim.runner.processes", str(job_file)],
        stdout=subprocess.PIPE, stderr=stderr, env=env, text=True, errors="replace",
    )

    def _errors() -> str:
        stderr.seek(0)
        return " | ".join(stderr.read().strip().splitlines()[-5:])

    return _Child(proc.stdout, proc.wait, _errors)


def _collect(child: _Child, shard: list[SovSimConfig], found: dict, lock: threading.Lock, bar) -> None:
    error = ""
    with child.lines:
        for line in child.lines:
            if line.startswith(_RESULT):
                res = GameResult(**json.loads(line[len(_RESULT):]))
                with lock:
                    found[res.run_id] = res
                    if res.status in ("complete", "skipped"):  # a failed game is not progress
                        bar.update(1)
                    else:
                        n_failed = sum(r.status not in ("complete", "skipped") for r in found.values())
                        bar.set_postfix_str(f"{n_failed} failed", refresh=True)
            elif line.startswith(_ERROR):
                error = json.loads(line[len(_ERROR):])
    code = child.wait()
    error = error or child.errors() or "no error output"
    with lock:
        for cfg in shard:
            if cfg.run_id not in found:
                found[cfg.run_id] = GameResult(
                    cfg.run_id, "failed",
                    error=f"sweep process exited with status {code} before the game finished: {error[-1500:]}",
                )


def _run_shard(payload: dict, out: IO[str]) -> None:
    """Run one shard's games, one result line per finished game on ``out``."""
    import asyncio

    from scarce_lab.llm import make_client
    from scarce_lab.runtime import run_sync

    from .play import arun_sweep

    configs = [SovSimConfig.model_validate(c) for c in payload["configs"]]
    settings = LLMSettings.model_validate(payload["settings"])
    client = make_client(settings) if any(needs_client(m) for c in configs for m in c.seat_models().values()) else None
    out_dir = Path(payload["out_dir"])

    async def _all() -> None:
        limit = asyncio.Semaphore(max(1, 4 * settings.max_concurrency))

        async def _one(cfg: SovSimConfig) -> None:
            async with limit:
                (res,) = await arun_sweep([cfg], out_dir, client=client, resume=payload["resume"],
                                          concurrency=settings.max_concurrency, progress=False)
            out.write(_RESULT + json.dumps(res.__dict__) + "\n")
            out.flush()

        await asyncio.gather(*(_one(c) for c in configs))

    run_sync(_all())  # in a thread of its own if the fork copied a running loop


def _die_with_parent() -> None:
    """Linux: this process gets SIGTERM when its parent dies (``PR_SET_PDEATHSIG``), so
    an orphaned child stops calling the model; its unfinished runs stay resumable."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the closed pipe below still stops it
        return
    if os.getppid() == 1:  # the parent died before the call
        os._exit(1)


def _forked_child(payload: dict, write_fd: int, read_fd: int) -> None:
    # only the parent reads: with the read end closed here, a write after the parent's
    # death fails (EPIPE) instead of filling the pipe and blocking forever
    os.close(read_fd)
    _die_with_parent()
    with os.fdopen(write_fd, "w", encoding="utf-8") as out:
        try:
            _run_shard(payload, out)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, then exit 1
            out.write(_ERROR + json.dumps(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}") + "\n")
            out.flush()
            raise SystemExit(1) from None


if __name__ == "__main__":
    _run_shard(json.loads(Path(sys.argv[1]).read_text()), sys.stdout)
