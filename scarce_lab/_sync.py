"""Running a coroutine from synchronous code, also inside Jupyter's running event loop
(the one implementation: :func:`scarce_lab.runtime.run_sync` re-exports it)."""

from __future__ import annotations

import asyncio
import concurrent.futures


def run_sync(coro):
    """Run ``coro`` to completion from sync code; inside a running event loop (Jupyter)
    it runs on a fresh loop in a worker thread. Returns its result, raises its error."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
