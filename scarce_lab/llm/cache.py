"""On-disk response cache (SQLite), keyed on model, messages, parameters and seed.

A re-run with the same key returns the stored answer at no cost, so the same seed,
config and cache reproduce the same trajectory. Safe across threads and processes
(SQLite WAL mode, one connection per call).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """``$SCARCE_LAB_CACHE_DIR`` or ``~/.cache/scarce_lab/llm``."""
    env = os.environ.get("SCARCE_LAB_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "scarce_lab" / "llm"


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``(model, messages, params)``.

    ``params`` should hold everything that changes the answer (temperature, max_tokens,
    seed, response_format, tools, reasoning_effort, api_base) and nothing that does not
    (timeouts, API keys).
    """
    blob = json.dumps(
        {"model": model, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """Key -> stored response dict (text, tool_calls, usage, latency_s, cost_usd).

    Raises (on construction):
        ValueError: the cache file exists but is not a usable SQLite database.
    """

    def __init__(self, directory: Path | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "responses.sqlite"
        try:
            with self._connect() as con:
                con.execute("PRAGMA journal_mode=WAL")
                con.execute(
                    "CREATE TABLE IF NOT EXISTS responses ("
                    " key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)"
                )
        except sqlite3.DatabaseError as exc:  # e.g. "file is not a database"
            raise ValueError(
                f"response cache {self.path} is unusable ({exc}); move it away or use another cache folder"
            ) from None

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response for ``key``, or ``None``."""
        with self._connect() as con:
            row = con.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        """Store ``value`` under ``key`` (last write wins)."""
        with self._connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                (key, model, json.dumps(value, ensure_ascii=False), time.time()),
            )

    def __len__(self) -> int:
        with self._connect() as con:
            return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
