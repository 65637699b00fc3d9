"""Dollar prices and caps.

- :func:`price_of`: the price of the model actually served, in US dollars per token:
  ``llm.prices`` first (USD per million tokens), then a local endpoint (an
  ``api_base`` on this machine or a private network: free), then litellm's price list
  for models called at their provider (no ``api_base``); ``None`` when unknown (a
  remote server under a known model's name is not priced as that model).
- :func:`worst_case_usd`: what a call can cost at most: its counted prompt tokens plus
  ``max_tokens`` at the model's price.
- :class:`SpendLedger`: reservations and spending per scope (``run:<run id>``,
  ``sweep``) in one SQLite file shared by every process and Ray task of a sweep; a
  call is sent only if its worst case fits every cap it is under
  (:meth:`SpendLedger.reserve`, atomic across processes), and its reservation is
  replaced by its actual cost afterwards (:meth:`SpendLedger.settle`).

A call refused by a cap is not sent; its record has outcome ``cost_cap`` (a missing
decision: the run stops, resumable, and its manifest says "cost cap").
"""

from __future__ import annotations

import ipaddress
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field

from .models import via_provider


class ModelPrice(BaseModel):
    """A model's price in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(..., ge=0, description="USD per million prompt tokens")
    output_per_mtok: float = Field(..., ge=0, description="USD per million completion tokens")


#: Marks a refused call's error (outcome ``cost_cap``); the manifest error carries it.
COST_CAP = "cost cap"


def is_local_endpoint(api_base: str | None) -> bool:
    """True for an ``api_base`` on this machine or a private network (``localhost``,
    loopback, RFC 1918, link-local addresses)."""
    if not api_base:
        return False
    host = urlparse(api_base if "://" in api_base else f"http://{api_base}").hostname or ""
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def price_of(model: str, api_base: str | None, prices: dict[str, Any] | None = None
             ) -> tuple[float, float] | None:
    """``(USD per prompt token, USD per completion token)`` of the model served, or
    ``None`` when unknown (see the module docstring for the order of sources).
    ``prices`` maps model strings to :class:`ModelPrice` (or dicts of its fields)."""
    if not via_provider(model):
        return 0.0, 0.0
    for key in (model, model.split("/", 1)[-1]):
        if prices and key in prices:
            p = prices[key]
            p = p if isinstance(p, ModelPrice) else ModelPrice.model_validate(p)
            return p.input_per_mtok / 1e6, p.output_per_mtok / 1e6
    if is_local_endpoint(api_base):
        return 0.0, 0.0
    if api_base:
        return None
    from .transport import load_litellm

    try:
        info = load_litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - unknown to litellm
        return None
    i, o = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if i is None or o is None:
        return None
    return float(i), float(o)


def call_cost(price: tuple[float, float] | None, prompt_tokens: int | None, completion_tokens: int | None
              ) -> float | None:
    """US dollars of a call at ``price``, ``None`` when the price or usage is unknown."""
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return prompt_tokens * price[0] + completion_tokens * price[1]


def worst_case_usd(price: tuple[float, float], prompt_tokens: int, max_tokens: int) -> float:
    """The most a call can cost: ``prompt_tokens`` and ``max_tokens`` at ``price``."""
    return prompt_tokens * price[0] + max_tokens * price[1]


class SpendLedger:
    """Spending per scope in a SQLite file (or in memory when ``path`` is ``None``),
    atomic across threads and processes.

    Rows: one per call (scope, call id, USD, settled). A reservation holds the call's
    worst case until :meth:`settle` replaces it by the actual cost (0 for a failed
    call, the worst case kept when the cost is unknown).
    """

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._mem = sqlite3.connect(":memory:", check_same_thread=False) if self.path is None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            if self.path is not None:
                con.execute("PRAGMA journal_mode=WAL")
            con.execute("CREATE TABLE IF NOT EXISTS spend (scope TEXT, id TEXT, usd REAL, settled INTEGER, t REAL)")
            con.execute("CREATE TABLE IF NOT EXISTS refused (scope TEXT, usd REAL, t REAL, cap REAL)")

    def _connect(self) -> sqlite3.Connection:
        if self._mem is not None:
            return self._mem
        return sqlite3.connect(self.path, timeout=60, isolation_level=None)

    def spent(self, scope: str) -> float:
        """US dollars reserved or spent under ``scope``."""
        with self._lock:
            con = self._connect()
            row = con.execute("SELECT COALESCE(SUM(usd), 0) FROM spend WHERE scope = ?", (scope,)).fetchone()
            return float(row[0])

    def refused(self, scope: str, cap: float) -> bool:
        """True once a call was refused under ``scope`` with this ``cap`` or a larger
        one (the cap is reached for calls of that size: a sweep starts no further run;
        a resume with a larger cap starts again)."""
        with self._lock:
            con = self._connect()
            row = con.execute("SELECT 1 FROM refused WHERE scope = ? AND cap >= ? LIMIT 1", (scope, cap - 1e-12))
            return row.fetchone() is not None

    def reserve(self, caps: dict[str, float], usd: float) -> tuple[str | None, str | None]:
        """Reserve ``usd`` under every scope of ``caps`` (scope -> cap in USD) if it
        fits them all: ``(reservation id, None)``, else ``(None, why)`` naming the
        scope, its cap, what is spent and the call's worst case."""
        rid = uuid.uuid4().hex
        with self._lock:
            con = self._connect()
            con.execute("BEGIN IMMEDIATE")
            try:
                for scope, cap in caps.items():
                    (spent,) = con.execute("SELECT COALESCE(SUM(usd), 0) FROM spend WHERE scope = ?",
                                           (scope,)).fetchone()
                    if spent + usd > cap + 1e-12:
                        con.execute("ROLLBACK")
                        con.execute("INSERT INTO refused VALUES (?, ?, ?, ?)", (scope, usd, time.time(), cap))
                        if self._mem is not None:
                            con.commit()
                        return None, (f"{COST_CAP}: {scope} has spent or reserved ${spent:.6f} of its "
                                      f"${cap:g} cap; this call could cost up to ${usd:.6f}")
                for scope in caps:
                    con.execute("INSERT INTO spend VALUES (?, ?, ?, 0, ?)", (scope, rid, usd, time.time()))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK") if con.in_transaction else None
                raise
        return rid, None

    def settle(self, rid: str, usd: float | None) -> None:
        """Replace reservation ``rid`` by the actual cost (kept at the worst case when
        ``usd`` is ``None``)."""
        with self._lock:
            con = self._connect()
            if usd is None:
                con.execute("UPDATE spend SET settled = 1 WHERE id = ?", (rid,))
            else:
                con.execute("UPDATE spend SET usd = ?, settled = 1 WHERE id = ?", (float(usd), rid))
            if self._mem is not None:
                con.commit()


_LEDGERS: dict[str | None, SpendLedger] = {}
_LEDGERS_LOCK = threading.Lock()


def ledger_at(path: Path | None) -> SpendLedger:
    """The process's ledger for ``path`` (one per file; ``None``: one in memory)."""
    key = str(Path(path).resolve()) if path is not None else None
    with _LEDGERS_LOCK:
        if key not in _LEDGERS:
            _LEDGERS[key] = SpendLedger(Path(key) if key else None)
        return _LEDGERS[key]


def reserve_call(settings: Any, model: str, messages: list[dict[str, Any]], max_tokens: int,
                 price: tuple[float, float] | None, run_id: str | None) -> tuple[SpendLedger, str] | str | None:
    """Reserve one call's worst case under the caps of ``settings``
    (``max_cost_usd`` as scope ``run:<run_id>``, ``sweep_max_cost_usd`` as ``sweep``, in
    the ledger at ``spend_ledger``): ``None`` when no cap is set, ``(ledger,
    reservation id)`` when it fits, else the refusal text (``cost cap: ...``; a model
    without a price under a cap is refused too). Prompt tokens are counted with the
    model's tokenizer (litellm's counter; the embedded model's own), else estimated."""
    caps = {}
    if settings.max_cost_usd is not None:
        caps[f"run:{run_id}"] = settings.max_cost_usd
    if settings.sweep_max_cost_usd is not None:
        caps["sweep"] = settings.sweep_max_cost_usd
    if not caps:
        return None
    if price is None:
        return f"{COST_CAP}: model {model!r} has no known price and a cap is set; give one in llm.prices"
    from .context import count_prompt_tokens
    from .models import is_embedded
    from .ratelimit import estimate_tokens
    from .transport import load_litellm

    counted = count_prompt_tokens(model, messages, None if is_embedded(model) else load_litellm())
    if counted is None:
        counted = estimate_tokens(messages, 0)
    ledger = ledger_at(settings.spend_ledger)
    rid, why = ledger.reserve(caps, worst_case_usd(price, counted, max_tokens))
    return why if rid is None else (ledger, rid)


def settle_call(reservation: Any, usd: float | None) -> None:
    """Replace a :func:`reserve_call` reservation by the call's actual cost."""
    if isinstance(reservation, tuple):
        ledger, rid = reservation
        ledger.settle(rid, usd)


def sweep_cap_spent(settings: Any) -> str | None:
    """Why no further run of the sweep should start (its ``sweep_max_cost_usd`` is
    spent in the ledger at ``spend_ledger``), or ``None``."""
    cap = getattr(settings, "sweep_max_cost_usd", None)
    if cap is None:
        return None
    ledger = ledger_at(getattr(settings, "spend_ledger", None))
    spent = ledger.spent("sweep")
    if spent >= cap - 1e-12 or ledger.refused("sweep", cap):
        return f"{COST_CAP}: the sweep's ${cap:g} cap is spent (${spent:.6f}, a call was refused); run not started"
    return None
