"""Headless-browser fixtures: Debian's Chromium driven by Playwright, network blocked.

Every test here skips, with the reason, when Playwright for Python or a Chromium
executable cannot be had (``scripts/install.sh`` installs both: ``apt-get install
chromium`` as root, ``playwright`` from the dev extra; never ``playwright install``).
The browser may fetch from 127.0.0.1 (and ``data:``/``blob:`` URLs) only: every other
request is aborted and recorded in ``page.blocked``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1"}


def chromium_path() -> str | None:
    """``$SCARCE_LAB_CHROMIUM``, else /usr/bin/chromium, else ``chromium`` on PATH."""
    for cand in (os.environ.get("SCARCE_LAB_CHROMIUM"), "/usr/bin/chromium"):
        if cand and Path(cand).is_file():
            return cand
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium, one per test module: Playwright's sync API holds an asyncio
    loop in this thread while it runs, so it must stop before other modules' tests
    (which call ``asyncio.run``) start."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright for Python is not installed (pip install -e '.[dev]')")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium executable (apt-get install -y chromium, or set SCARCE_LAB_CHROMIUM)")
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        except Exception as exc:  # noqa: BLE001 - any launch failure is a reason to skip
            pytest.skip(f"Chromium at {exe} does not start: {str(exc)[:300]}")
        yield b
        b.close()


def _local(url: str) -> bool:
    u = urlparse(url)
    return u.scheme in ("data", "blob", "about", "file") or (u.hostname or "") in LOCAL_HOSTS


@pytest.fixture
def page(browser):
    """A fresh page whose requests to anything but 127.0.0.1 are aborted; the aborted
    URLs are in ``page.blocked`` and console errors in ``page.console_errors``."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.blocked = []
    pg.console_errors = []

    def route(r):
        if _local(r.request.url):
            r.continue_()
        else:
            pg.blocked.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    yield pg
    ctx.close()
