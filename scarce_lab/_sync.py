"""Running a coroutine from synchronous code, also inside Jupyter's running event loop
(the one implementation: :func:`scarce_lab.runtime.run_sync` re-exports it).

Each call runs on a fresh event loop, so work that a library leaves queued on the loop
(litellm's logging worker queues a success-logging task per call) would be carried to
the next loop and pile up, with a warning per call. Such a library registers a hook
with :func:`at_loop_end`; every hook runs, on the same loop, after the coroutine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
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
    goes on in the background."""
    coro = _then_hooks(coro)
    try:
        asyncio.get_running_loop()
        inside_loop = True
    except RuntimeError:
        inside_loop = False
    if not inside_loop:  # (outside the except: errors carry no "no running event loop" context)
        return asyncio.run(coro)
    where: dict = {}

    async def _tracked():
        where["loop"], where["task"] = asyncio.get_running_loop(), asyncio.current_task()
        return await coro

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        # the caller's context variables (the run scope of scarce_lab.llm.scope) go along
        future = pool.submit(contextvars.copy_context().run, asyncio.run, _tracked())
        try:
            return future.result()
        except KeyboardInterrupt:
            loop, task = where.get("loop"), where.get("task")
            if loop is not None and task is not None:
                loop.call_soon_threadsafe(task.cancel)
            concurrent.futures.wait([future])
            raise
