"""A bound on model calls in flight, usable from any event loop and thread.

``asyncio.Semaphore`` binds to the first loop that waits on it, so a client used from
several loops (``run_sync`` makes a fresh one per call) kept one semaphore per loop,
forever (issue 11 kind 9). :class:`ConcurrencyLimit` keeps no per-loop state.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque


class ConcurrencyLimit:
    """A counting semaphore usable from any event loop and thread.

    ``asyncio.Semaphore`` binds to the first loop that waits on it, so a client used
    from several loops (``run_sync`` makes a fresh one per call) needed one semaphore
    per loop, kept forever. This one keeps no per-loop state: a waiter parks a future
    on its own loop and a release hands the slot to the oldest waiter through
    ``call_soon_threadsafe``. Used as ``async with limit: ...``.

    Raises:
        ValueError: ``slots`` < 1.
    """

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots!r}")
        self.slots = slots
        self._free = slots
        self._lock = threading.Lock()
        self._waiters: deque = deque()  # (loop, future), oldest first

    @property
    def in_use(self) -> int:
        """Slots held now."""
        with self._lock:
            return self.slots - self._free

    async def __aenter__(self) -> ConcurrencyLimit:
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return self
            loop = asyncio.get_running_loop()
            fut = loop.create_future()
            self._waiters.append((loop, fut))
        try:
            await fut
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove((loop, fut))
                except ValueError:
                    pass
            if fut.done() and not fut.cancelled():
                self.release()  # the slot arrived together with the cancellation
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Free one slot: hand it to the oldest live waiter, else return it."""
        with self._lock:
            while self._waiters:
                loop, fut = self._waiters.popleft()
                if loop.is_closed() or fut.done():
                    continue
                try:
                    loop.call_soon_threadsafe(self._wake, fut)
                except RuntimeError:  # the loop closed meanwhile
                    continue
                return
            self._free += 1

    def _wake(self, fut: asyncio.Future) -> None:
        if fut.done():  # cancelled before the slot arrived: pass it on
            self.release()
        else:
            fut.set_result(None)
