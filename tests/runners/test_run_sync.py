"""run_sync: hooks registered with at_loop_end run on the coroutine's loop before it
closes, so litellm's logging worker does not carry one task per sync call (with a
warning each) from loop to loop."""

from __future__ import annotations

import asyncio
import logging

import pytest

from scarce_lab import _sync
from scarce_lab._sync import at_loop_end, run_sync


@pytest.fixture
def hooks(monkeypatch):
    monkeypatch.setattr(_sync, "_LOOP_END_HOOKS", [])
    return _sync._LOOP_END_HOOKS


def test_hooks_run_on_the_same_loop_after_the_coroutine_also_when_it_raises(hooks):
    seen = []

    async def hook():
        seen.append(("hook", asyncio.get_running_loop()))

    async def work(fail):
        seen.append(("work", asyncio.get_running_loop()))
        if fail:
            raise KeyError("boom")
        return 7

    at_loop_end(hook)
    at_loop_end(hook)  # twice is once
    assert run_sync(work(False)) == 7
    assert [s[0] for s in seen] == ["work", "hook"] and seen[0][1] is seen[1][1]
    seen.clear()
    with pytest.raises(KeyError, match="boom"):
        run_sync(work(True))
    assert [s[0] for s in seen] == ["work", "hook"]


def test_a_failing_hook_is_logged_not_raised(hooks, caplog):
    async def bad():
        raise RuntimeError("hook broke")

    async def work():
        return "result"

    at_loop_end(bad)
    with caplog.at_level(logging.WARNING):
        assert run_sync(work()) == "result"
    assert "loop-end hook" in caplog.text


def test_litellm_logging_tasks_finish_inside_the_sync_call():
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    from scarce_lab.llm.transport import flush_litellm_logging, load_litellm

    load_litellm()
    assert flush_litellm_logging in _sync._LOOP_END_HOOKS
    done = []

    async def logged():
        await asyncio.sleep(0.05)
        done.append(True)

    async def call():  # what litellm does after each completion
        GLOBAL_LOGGING_WORKER.ensure_initialized_and_enqueue(async_coroutine=logged())
        return "answer"

    for _ in range(3):
        assert run_sync(call()) == "answer"
    assert done == [True, True, True]
    assert GLOBAL_LOGGING_WORKER.pending_count == 0


def test_an_interrupt_inside_a_running_loop_stops_the_work(hooks):
    """In Jupyter (a running loop) run_sync works in a thread: the stop button raised
    KeyboardInterrupt only once the work had finished, and a second press left it
    running in the background (a re-run then found its run folder still being written)."""
    import signal
    import threading
    import time

    ticks: list[int] = []

    async def long():
        for i in range(100):
            ticks.append(i)
            await asyncio.sleep(0.02)

    async def notebook_cell():  # runs inside a loop, as a notebook cell does
        main = threading.main_thread().ident
        threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run_sync(long())
        return time.monotonic() - t0, len(ticks)

    loop = asyncio.new_event_loop()  # not asyncio.run: its SIGINT handler would cancel instead
    try:
        took, n = loop.run_until_complete(notebook_cell())
    finally:
        loop.close()
    time.sleep(0.3)
    assert took < 1.5 and n < 100 and len(ticks) == n  # stopped, and nothing runs on
