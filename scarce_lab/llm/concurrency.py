"""A bound on model calls in flight, usable from any event loop and thread.

``asyncio.Semaphore`` binds to the first loop that waits on it, so a client used from
several loops (``run_sync`` makes a fresh one per call) kept one semaphore per loop,
forever. :class:`ConcurrencyLimit` keeps no per-loop state.

Waiters are served by priority, then in arrival order: the model client passes a call's
round, so when a sweep has more calls ready than slots, the games furthest behind go
first (longest remaining chain first, the classic list-scheduling rule for a makespan;
With arrival order the last games' rounds ran alone at the end of a
sweep while other slots were idle).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading


class ConcurrencyLimit:
    """A counting semaphore usable from any event loop and thread (why: module
    docstring): a waiter parks a future on its own loop and a release hands the slot to
    the waiter with the lowest priority value (the oldest among equals) through
    ``call_soon_threadsafe``. Used as ``async with limit: ...`` (priority 0) or
    ``async with limit.slot(priority): ...``.

    Raises:
        ValueError: ``slots`` < 1.
    """

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots!r}")
        self.slots = slots
        self._free = slots
        self._lock = threading.Lock()
        self._waiters: list = []  # heap of (priority, arrival, loop, future)
        self._arrivals = itertools.count()

    @property
    def in_use(self) -> int:
        """Slots held now."""
        with self._lock:
            return self.slots - self._free

    def slot(self, priority: float = 0) -> _Slot:
        """``async with limit.slot(priority): ...``: hold one slot; among waiters, the
        lowest ``priority`` value is served first (arrival order among equals)."""
        return _Slot(self, priority)

    async def acquire(self, priority: float = 0) -> None:
        """Wait for a slot (see :meth:`slot`); pair with :meth:`release`.

        Raises:
            ValueError: ``priority`` is not a number, or NaN (it could not be ordered).
        """
        if isinstance(priority, bool) or not isinstance(priority, int | float) or priority != priority:
            raise ValueError(f"priority must be a number (not NaN), got {priority!r}")
        with self._lock:
            if self._free > 0:
                # a free slot means no live waiter (release hands slots to live waiters
                # first): what is left in the heap was cancelled
                self._waiters.clear()
                self._free -= 1
                return
            loop = asyncio.get_running_loop()
            fut = loop.create_future()
            heapq.heappush(self._waiters, (priority, next(self._arrivals), loop, fut))
        try:
            await fut
        except asyncio.CancelledError:
            # a cancelled waiter stays in the heap; release() skips done futures
            if fut.done() and not fut.cancelled():
                self.release()  # the slot arrived together with the cancellation
            raise

    async def __aenter__(self) -> ConcurrencyLimit:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Free one slot: hand it to the first live waiter (lowest priority value, then
        oldest), else return it."""
        with self._lock:
            while self._waiters:
                _, _, loop, fut = heapq.heappop(self._waiters)
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


class _Slot:
    """``async with`` one slot of a :class:`ConcurrencyLimit` at a priority."""

    __slots__ = ("_limit", "_priority")

    def __init__(self, limit: ConcurrencyLimit, priority: float):
        self._limit, self._priority = limit, priority

    async def __aenter__(self) -> ConcurrencyLimit:
        await self._limit.acquire(self._priority)
        return self._limit

    async def __aexit__(self, *exc: object) -> None:
        self._limit.release()
