"""Dollar prices and caps.

- :func:`price_of`: the price of the model actually served, in US dollars per token:
  ``llm.prices`` first (USD per million tokens), then a local endpoint (an
  ``api_base`` on this machine or a private network: free), then litellm's price list
  for models called at their provider (no ``api_base``); ``None`` when unknown (a
  remote server under a known model's name is not priced as that model).
- :func:`check_usage`: a server's ``usage`` is a claim, accepted only within what was
  sent (:func:`prompt_range`; ``completion_tokens`` in ``[0, max_tokens +``
  :data:`COMPLETION_SLACK_TOKENS` ``]``); anything else (absent, negative, not an
  integer, NaN, out of range) is recorded as reported, flagged, and costs the worst case.
- :func:`worst_case_usd`: what a call can cost at most: the top of its prompt range plus
  ``max_tokens`` (and the slack) at the model's price; the most any accepted claim costs.
- :class:`SpendLedger`: reservations and spending per scope (``run:<run id>``,
  ``sweep``) in one SQLite file shared by every process and Ray task of a sweep; a
  call is sent only if its worst case fits every cap it is under
  (:meth:`SpendLedger.reserve`, atomic across processes), and its reservation is
  replaced by its actual cost afterwards (:meth:`SpendLedger.settle`: never below 0 nor
  the floor the call's accepted usage allows; an unknown or invalid cost keeps the
  reservation). A reservation never settled (its process was killed) stays counted.

A call refused by a cap is not sent; its record has outcome ``cost_cap`` (a missing
decision: the run stops, resumable, and its manifest says "cost cap").
"""

from __future__ import annotations

import ipaddress
import math
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field

from .models import via_provider


class ModelPrice(BaseModel):
    """A model's price in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(..., ge=0, allow_inf_nan=False, description="USD per million prompt tokens")
    output_per_mtok: float = Field(..., ge=0, allow_inf_nan=False, description="USD per million completion tokens")


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


#: Completion tokens a server may count beyond ``max_tokens``: the end-of-generation
#: token, which llama.cpp- and vLLM-style servers stop on and some count in
#: ``completion_tokens`` (one token; OpenAI's and Anthropic's counts never pass the limit).
COMPLETION_SLACK_TOKENS = 1
#: A claimed ``prompt_tokens`` is accepted from ``counted * PROMPT_CLAIM_LOW``...
PROMPT_CLAIM_LOW = 0.25
#: ...to ``counted * PROMPT_CLAIM_HIGH + PROMPT_CLAIM_PAD`` tokens, ``counted`` being our
#: count (the model's tokenizer through litellm, else characters / 4) of the messages,
#: tools and response format. Tokenizers differ from the one we count with by well under
#: 2x either way for text (a larger vocabulary gives fewer tokens); the pad covers chat
#: template tokens and system text a provider adds (Anthropic's tool-use prompt is ~350).
PROMPT_CLAIM_HIGH = 2.0
PROMPT_CLAIM_PAD = 512


def prompt_range(counted: int | tuple[int, int]) -> tuple[int, int]:
    """``(lowest, highest)`` prompt tokens a server may claim for what we counted
    (:func:`counted_prompt`: ``(message tokens, tool and response-format tokens)``, or
    an int for messages alone): the low end from the messages only (a provider may not
    bill the schema), the high end from both (:data:`PROMPT_CLAIM_LOW`,
    :data:`PROMPT_CLAIM_HIGH`, :data:`PROMPT_CLAIM_PAD`)."""
    msgs, extra = counted if isinstance(counted, tuple) else (counted, 0)
    return int(msgs * PROMPT_CLAIM_LOW), math.ceil((msgs + extra) * PROMPT_CLAIM_HIGH) + PROMPT_CLAIM_PAD


def worst_case_usd(price: tuple[float, float], counted: int | tuple[int, int], max_tokens: int) -> float:
    """The most a call can cost, in USD: the top of :func:`prompt_range` of its
    ``counted`` prompt tokens and ``max_tokens`` plus :data:`COMPLETION_SLACK_TOKENS`, at
    ``price`` (USD per token). No usage claim :func:`check_usage` accepts costs more."""
    return prompt_range(counted)[1] * price[0] + (max_tokens + COMPLETION_SLACK_TOKENS) * price[1]


@dataclass(frozen=True)
class UsageClaim:
    """What :func:`check_usage` made of a response's ``usage``.

    ``prompt_tokens``/``completion_tokens``: the accepted counts (both ``None`` when the
    claim is not accepted); ``reported``: the usage as the server sent it, JSON-safe
    (non-finite numbers and other types as their ``repr``; ``None`` when absent);
    ``problem``: ``None`` when accepted, else what is wrong, naming the field and value.
    """

    prompt_tokens: int | None
    completion_tokens: int | None
    reported: dict[str, Any] | None
    problem: str | None


def _json_safe(value: Any) -> Any:
    """``value`` as a loader can read it back: ``None``, a bool, a 64-bit int, a finite
    float or a string of 200 characters at most as it is; anything else (a giant int
    too) as its ``repr``, cut to 200 characters."""
    if value is None or isinstance(value, bool | str) or (isinstance(value, float) and math.isfinite(value)) \
            or (isinstance(value, int) and -2**63 <= value < 2**63):
        return value[:200] if isinstance(value, str) else value
    return repr(value)[:200]


def _reported(usage: Any) -> dict[str, Any] | None:
    if usage is None:
        return None
    if isinstance(usage, BaseModel):
        usage = dict(usage)
    if not isinstance(usage, dict):
        usage = {k: getattr(usage, k, None) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        if all(v is None for v in usage.values()):
            return {"repr": repr(usage)[:200]}
    return {str(k)[:100]: _json_safe(v) for k, v in list(usage.items())[:20]
            if not isinstance(v, dict | list | BaseModel) or k in ("prompt_tokens", "completion_tokens")}


def _digits(n: int) -> str:
    """An integer for a message: as it is up to 24 digits, else its first 12 and its length."""
    s = str(n)
    return s if len(s) <= 24 else f"{s[:12]}... ({len(s)} digits)"


def _count(value: Any) -> int | None:
    """A token count as the integer it is (an integral finite float too), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def check_usage(usage: Any, *, max_tokens: int, counted: int | tuple[int, int] | None) -> UsageClaim:
    """Accept or flag a response's ``usage`` (an object or dict with ``prompt_tokens``
    and ``completion_tokens``) against what was sent.

    Accepted: both counts integers (an integral float too), ``completion_tokens`` in
    ``[0, max_tokens + COMPLETION_SLACK_TOKENS]`` and ``prompt_tokens`` in
    :func:`prompt_range` of ``counted`` (only ``>= 0`` when ``counted`` is ``None``:
    a free call, whose prompt is not counted). Everything else (no usage object, a count
    missing, negative, a string, NaN, infinite, out of range) is flagged in ``problem``;
    the caller then charges the worst case (:func:`worst_case_usd`). Never raises.
    """
    reported = _reported(usage)
    if usage is None:
        return UsageClaim(None, None, None, "usage missing: the response has no usage object")
    get = usage.get if isinstance(usage, dict) else (lambda k: getattr(usage, k, None))
    raw_p, raw_c = get("prompt_tokens"), get("completion_tokens")
    p, c = _count(raw_p), _count(raw_c)
    problem = None
    for name, raw, n in (("prompt_tokens", raw_p, p), ("completion_tokens", raw_c, c)):
        if n is None:
            problem = f"usage.{name} is {'missing' if raw is None else 'not a token count'}: {raw!r:.80}"
        elif n < 0:
            problem = f"usage.{name} is negative: {_digits(n)}"
        if problem:
            break
    if problem is None and c > max_tokens + COMPLETION_SLACK_TOKENS:
        problem = f"usage.completion_tokens {_digits(c)} is more than the max_tokens {max_tokens} that were asked for"
    if problem is None and counted is not None:
        low, high = prompt_range(counted)
        if not low <= p <= high:
            problem = f"usage.prompt_tokens {_digits(p)} is outside [{low}, {high}], the range for what was sent"
    if problem is not None:
        return UsageClaim(None, None, reported, problem)
    return UsageClaim(p, c, reported, None)


#: What a scope has spent or reserved: each row counted at 0 at least (a row this module
#: never writes, planted in a ledger file handed over with a sweep, cannot lower it).
_SPENT = "SELECT COALESCE(SUM(MAX(usd, 0)), 0) FROM spend WHERE scope = ?"


class SpendLedger:
    """Spending per scope in a SQLite file (or in memory when ``path`` is ``None``),
    atomic across threads and processes.

    Rows: one per call (scope, call id, USD, settled). A reservation holds the call's
    worst case until :meth:`settle` replaces it by the actual cost (0 for a call that
    was not billed, the worst case kept when the cost is unknown or not a finite
    number). A row whose process died before settling stays at its worst case (it is
    never released: the call may have been sent and billed).
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
            row = con.execute(_SPENT, (scope,)).fetchone()
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
        scope, its cap, what is spent and the call's worst case.

        Raises:
            ValueError: ``usd`` is negative or not a finite number (a reservation that
                would lower the spending).
        """
        if not (isinstance(usd, int | float) and math.isfinite(usd) and usd >= 0):
            raise ValueError(f"a reservation must be a finite number of USD >= 0, got {usd!r}")
        rid = uuid.uuid4().hex
        with self._lock:
            con = self._connect()
            con.execute("BEGIN IMMEDIATE")
            try:
                for scope, cap in caps.items():
                    (spent,) = con.execute(_SPENT, (scope,)).fetchone()
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

    def settle(self, rid: str, usd: float | None, floor: float = 0.0) -> None:
        """Replace reservation ``rid`` by the actual cost ``usd``, clamped to at least
        ``max(0, floor)`` (the least the call's accepted usage allows); ``None``, NaN or
        an infinite value keeps the reservation (the worst case)."""
        ok = isinstance(usd, int | float) and math.isfinite(usd)
        with self._lock:
            con = self._connect()
            if not ok:
                con.execute("UPDATE spend SET settled = 1 WHERE id = ?", (rid,))
            else:
                low = max(0.0, float(floor)) if math.isfinite(floor) else 0.0
                con.execute("UPDATE spend SET usd = ?, settled = 1 WHERE id = ?", (max(float(usd), low), rid))
            if self._mem is not None:
                con.commit()

    def unsettled(self, scope: str) -> int:
        """How many reservations under ``scope`` were never settled (a process killed
        between reserve and settle; they stay counted at their worst case)."""
        with self._lock:
            row = self._connect().execute("SELECT COUNT(*) FROM spend WHERE scope = ? AND settled = 0", (scope,))
            return int(row.fetchone()[0])


_LEDGERS: dict[str | None, SpendLedger] = {}
_LEDGERS_LOCK = threading.Lock()


def ledger_at(path: Path | None) -> SpendLedger:
    """The process's ledger for ``path`` (one per file; ``None``: one in memory)."""
    key = str(Path(path).resolve()) if path is not None else None
    with _LEDGERS_LOCK:
        if key not in _LEDGERS:
            _LEDGERS[key] = SpendLedger(Path(key) if key else None)
        return _LEDGERS[key]


def counted_prompt(model: str, messages: list[dict[str, Any]], extra: Any = None) -> tuple[int, int]:
    """Prompt tokens of a request as we count them: ``(tokens of messages, tokens of
    extra)``. Messages with the model's tokenizer (litellm's counter; the embedded
    model's own), else characters / 4; ``extra`` (the tools and response format) as
    characters / 4 of its JSON text."""
    import json

    from .context import count_prompt_tokens
    from .models import is_embedded
    from .ratelimit import estimate_tokens
    from .transport import load_litellm

    counted = count_prompt_tokens(model, messages, None if is_embedded(model) else load_litellm())
    if counted is None:
        counted = estimate_tokens(messages, 0)
    return counted, len(json.dumps(extra, default=str)) // 4 if extra else 0


def reserve_call(settings: Any, model: str, counted: int | tuple[int, int], max_tokens: int,
                 price: tuple[float, float] | None, run_id: str | None) -> tuple[SpendLedger, str, float] | str | None:
    """Reserve one call's worst case (:func:`worst_case_usd` of its ``counted`` prompt
    tokens, :func:`counted_prompt`) under the caps of ``settings``
    (``max_cost_usd`` as scope ``run:<run_id>``, ``sweep_max_cost_usd`` as ``sweep``, in
    the ledger at ``spend_ledger``): ``None`` when no cap is set, ``(ledger,
    reservation id, USD reserved)`` when it fits, else the refusal text (``cost cap: ...``;
    a model without a price under a cap is refused too)."""
    caps = {}
    if settings.max_cost_usd is not None:
        caps[f"run:{run_id}"] = settings.max_cost_usd
    if settings.sweep_max_cost_usd is not None:
        caps["sweep"] = settings.sweep_max_cost_usd
    if not caps:
        return None
    if price is None:
        return f"{COST_CAP}: model {model!r} has no known price and a cap is set; give one in llm.prices"
    ledger = ledger_at(settings.spend_ledger)
    usd = worst_case_usd(price, counted, max_tokens)
    rid, why = ledger.reserve(caps, usd)
    return why if rid is None else (ledger, rid, usd)


def settle_call(reservation: Any, usd: float | None, floor: float = 0.0) -> None:
    """Replace a :func:`reserve_call` reservation by the call's actual cost (clamped by
    :meth:`SpendLedger.settle`: at least ``max(0, floor)``; ``None`` keeps the worst case)."""
    if isinstance(reservation, tuple):
        ledger, rid, _ = reservation
        ledger.settle(rid, usd, floor)


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
