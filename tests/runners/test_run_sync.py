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


#: ticks of 10 ms of the interrupted work: far more than its interrupt takes, even on a
#: loaded machine; only a broken interrupt lets it run them all (and the test then fails)
LONG = 3000


def _press_stop():
    """The stop button: SIGINT to the main thread (Python raises KeyboardInterrupt there)."""
    import signal
    import threading

    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def _long_work(ticks: list, ended: list, press_at: int | None = None):
    async def long():
        try:
            for i in range(LONG):
                ticks.append(i)
                if i == press_at:
                    _press_stop()
                await asyncio.sleep(0.01)
            ended.append("finished")
        except asyncio.CancelledError:
            await asyncio.sleep(0.1)  # unwinding takes a while (a run records itself as interrupted)
            ended.append("cancelled")
            raise

    return long()


def _interrupted_in_a_notebook(work, ticks: list, ended: list) -> dict:
    """``run_sync(work)`` inside a running loop, as a notebook cell runs it: it must raise
    KeyboardInterrupt. Returns how far the work had got at the moment it raised."""
    at_raise: dict = {}

    async def notebook_cell():
        with pytest.raises(KeyboardInterrupt):
            run_sync(work)
        at_raise.update(ended=list(ended), ticks=len(ticks))

    loop = asyncio.new_event_loop()  # not asyncio.run: its SIGINT handler would cancel instead
    try:
        loop.run_until_complete(notebook_cell())
    finally:
        loop.close()
    return at_raise


def test_an_interrupt_inside_a_running_loop_stops_the_work(hooks):
    """In Jupyter (a running loop) run_sync works in a thread: the stop button raised
    KeyboardInterrupt only once the work had finished, and a second press left it
    running in the background (a re-run then found its run folder still being written).
    The work presses the button itself once it runs: a timer, on a loaded machine, fired
    before the work had begun (see the next two tests for those moments)."""
    ticks: list[int] = []
    ended: list[str] = []
    at_raise = _interrupted_in_a_notebook(_long_work(ticks, ended, press_at=3), ticks, ended)
    # cancelled (not run to its end), and unwound before the interrupt was raised
    assert at_raise["ended"] == ["cancelled"] and 4 <= at_raise["ticks"] < LONG
    assert len(ticks) == at_raise["ticks"]  # nothing ran on


def test_an_interrupt_before_the_work_has_its_task_stops_it_as_it_starts(hooks, monkeypatch, caplog):
    """The stop button pressed while the worker thread sets up its loop (on a loaded
    machine, the first moments): the work was not cancelled (its task did not exist yet)
    and ran to its end. The press is taken by the main thread before the loop exists."""
    import logging
    import threading

    taken = threading.Event()

    class Taken(logging.Handler):  # run_sync says when it has taken the interrupt
        def emit(self, record):
            if record.getMessage().startswith("interrupted"):
                taken.set()

    real_run = asyncio.run

    def run_after_a_press(main, **kw):  # in the worker thread, before its loop exists
        _press_stop()
        taken.wait(60)
        return real_run(main, **kw)

    ticks: list[int] = []
    ended: list[str] = []
    log = logging.getLogger("scarce_lab._sync")
    caplog.set_level(logging.DEBUG, logger=log.name)
    log.addHandler(handler := Taken())
    monkeypatch.setattr(asyncio, "run", run_after_a_press)
    try:
        at_raise = _interrupted_in_a_notebook(_long_work(ticks, ended), ticks, ended)
    finally:
        log.removeHandler(handler)
    assert at_raise == {"ended": ["cancelled"], "ticks": 1}  # cancelled at its first wait
    assert len(ticks) == 1 and taken.is_set()


def test_an_interrupt_before_the_worker_thread_starts_runs_nothing(hooks, monkeypatch):
    """The stop button pressed as run_sync starts its worker thread: nothing runs, and the
    coroutine is closed (no 'was never awaited' warning), not left for the thread."""
    import gc
    import threading
    import warnings

    real_start = threading.Thread.start

    def start_after_a_press(self):
        if self.name == "run_sync":
            _press_stop()  # in the main thread: raised here, before the thread starts
        real_start(self)

    ticks: list[int] = []
    ended: list[str] = []
    monkeypatch.setattr(threading.Thread, "start", start_after_a_press)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        at_raise = _interrupted_in_a_notebook(_long_work(ticks, ended), ticks, ended)
        gc.collect()
    assert at_raise == {"ended": [], "ticks": 0} and ticks == []
    assert not [w for w in caught if "never awaited" in str(w.message)]
