"""On-disk response cache (SQLite), keyed on model, messages, parameters and seed.

A re-run with the same key returns the stored answer at no cost, so the same seed,
config and cache reproduce the same trajectory. Safe across threads and processes
(SQLite WAL mode, one connection per call).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """``$SCARCE_LAB_CACHE_DIR`` or ``~/.cache/scarce_lab/llm``."""
    env = os.environ.get("SCARCE_LAB_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "scarce_lab" / "llm"


#: litellm arguments that do not change the answer (transport and bookkeeping); they
#: are neither part of the cache key nor recorded.
TRANSPORT_PARAMS = frozenset({
    "timeout", "num_retries", "max_retries", "metadata", "litellm_logging_obj", "logger_fn",
    "client", "stream_timeout", "caching", "cache", "mock_timeout", "litellm_call_id",
})
#: Argument and header names that hold credentials: never keyed, never recorded. A
#: name is a credential when its last segment is a secret word (``api_key``,
#: ``x-api-key``, ``azure_ad_token``, ``client_secret``), when any segment is an
#: auth word (``Authorization``, ``cookie``), or for every ``aws_*`` argument. A
#: secret word that is not last names something else: ``stop_token_ids`` and
#: ``allowed_token_ids`` are sampling parameters that change the answer.
_SECRET = re.compile(
    r"(^|[_-])(key|secret|password|passwd|token|credentials?|bearer)$"
    r"|(^|[_-])(authorization|auth|cookie|password|secret)([_-]|$)|^aws_|token_provider$",
    re.IGNORECASE,
)
#: Names that look like secrets by the pattern above but are ordinary parameters.
_NOT_SECRET = frozenset({"max_tokens", "max_completion_tokens", "top_k", "logit_bias"})


def is_secret_param(name: str) -> bool:
    """True for a parameter or header name that may hold a credential."""
    return name not in _NOT_SECRET and bool(_SECRET.search(name))


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (pydantic models dumped, other objects as text)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "model_json_schema") and isinstance(value, type):
        return {"pydantic_schema": value.__name__, "schema": value.model_json_schema()}
    if hasattr(value, "model_dump"):
        return _jsonable(value.model_dump(mode="json"))
    return str(value)


def answer_params(params: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Every request parameter that can change the answer, as JSON data: ``params``
    (temperature, max_tokens, seed, response_format with its schema, tools,
    tool_choice, reasoning_effort, api_base) plus each extra litellm argument
    (``top_p``, ``stop``, ``logit_bias``, ``presence_penalty``, ``frequency_penalty``,
    ``mock_response``...), except :data:`TRANSPORT_PARAMS` and credentials (API keys,
    tokens, authorization headers). This is both the cache key's ``params`` and the
    recorded ``params``.
    """
    out: dict[str, Any] = {}
    for k, v in {**params, **extra}.items():
        if k in TRANSPORT_PARAMS or is_secret_param(k) or v is None:
            continue
        if k in ("extra_headers", "headers") and isinstance(v, dict):
            v = {h: x for h, x in v.items() if not is_secret_param(str(h))}
            if not v:
                continue
        out[k] = str(v) if k == "mock_response" else _jsonable(v)
    return out


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``(model, messages, params)``.

    ``params`` holds everything that changes the answer and nothing that does not
    (timeouts, API keys): build it with :func:`answer_params`.
    """
    blob = json.dumps(
        {"model": model, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """Key -> stored response dict (text, tool_calls, finish_reason, refusal,
    n_choices, prompt/completion tokens, latency_s). Entries written before
    ``finish_reason`` was stored read it as ``None``.

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
