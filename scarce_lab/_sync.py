"""Running a coroutine from synchronous code, also inside Jupyter's running event loop
(the one implementation: :func:`scarce_lab.runtime.run_sync` re-exports it).

Each call runs on a fresh event loop, so work that a library leaves queued on the loop
(litellm's logging worker queues a success-logging task per call) would be carried to
the next loop and pile up, with a warning per call. Such a library registers a hook
with :func:`at_loop_end`; every hook runs, on the same loop, after the coroutine.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable

_LOOP_END_HOOKS: list[Callable[[], Awaitable[None]]] = []
_log = logging.getLogger(__name__)


def at_loop_end(hook: Callable[[], Awaitable[None]]) -> None:
    """Run ``hook()`` (a coroutine function) at the end of every :func:`run_sync`, on its
    loop, after the coroutine (also when it raised). Registering a hook twice is a no-op.
    A hook that raises is logged, never raised in place of the coroutine's result."""
    if hook not in _LOOP_END_HOOKS:
        _LOOP_END_HOOKS.append(hook)


async def _then_hooks(coro):
    try:
        return await coro
    finally:
        for hook in list(_LOOP_END_HOOKS):
            try:
                await hook()
            except Exception:  # noqa: BLE001 - a clean-up hook never replaces the result
                _log.warning("loop-end hook %r failed", hook, exc_info=True)


def run_sync(coro):
    """Run ``coro`` to completion from sync code; inside a running event loop (Jupyter)
    it runs on a fresh loop in a worker thread. Returns its result, raises its error.

    An interrupt (KeyboardInterrupt: a notebook's stop button) while the worker thread
    runs cancels the coroutine there and waits for it to unwind (runs record themselves
    as interrupted and release their run folders) before it is raised: the work never
    goes on in the background. That holds wherever the interrupt lands: before the
    coroutine's task exists (it is cancelled as it starts), or before the thread runs
    it at all (it never starts)."""
    inner = coro
    coro = _then_hooks(coro)
    try:
        asyncio.get_running_loop()
        inside_loop = True
    except RuntimeError:
        inside_loop = False
    if not inside_loop:  # (outside the except: errors carry no "no running event loop" context)
        return asyncio.run(coro)
    # One lock orders the interrupt against the worker: the work either has not begun
    # (then it never does), or its task is cancelled (at once, or as it is registered).
    lock = threading.Lock()
    state: dict = {"stopped": False, "begun": False, "loop": None, "task": None}
    outcome: dict = {}
    done = threading.Event()

    async def _tracked():
        task = asyncio.current_task()
        with lock:
            state["loop"], state["task"] = asyncio.get_running_loop(), task
            if state["stopped"]:  # interrupted while the loop was being set up
                task.cancel()
        try:
            return await coro
        finally:
            with lock:  # the loop closes after this: no cancel may be sent to it
                state["task"] = None

    def _work(context):
        try:
            with lock:
                if state["stopped"]:  # interrupted before the thread got here
                    return
                state["begun"] = True
            # the caller's context variables (the run scope of scarce_lab.llm.scope) go along
            outcome["result"] = context.run(asyncio.run, _tracked())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as it is
            outcome["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=_work, args=(contextvars.copy_context(),), name="run_sync")
    try:
        worker.start()
        done.wait()
    except KeyboardInterrupt:
        with lock:
            state["stopped"] = True
            begun, loop, task = state["begun"], state["loop"], state["task"]
            if task is not None:  # under the lock: the task's loop is still open
                loop.call_soon_threadsafe(task.cancel)
        _log.debug("interrupted: the work in the worker thread is stopped (begun: %s)", begun)
        if begun:  # the coroutine unwinds (cancelled) before the interrupt goes on
            try:
                done.wait()
            except KeyboardInterrupt:  # pressed again while it unwinds: still wait for it
                done.wait()
        else:  # it never runs: close it (and what it wraps) instead of leaving it unawaited
            coro.close()
            if hasattr(inner, "close"):
                inner.close()
        raise
    worker.join()
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome["result"]
