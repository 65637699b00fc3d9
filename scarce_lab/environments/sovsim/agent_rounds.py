"""The SovSim agent-round table's definition, shared by our runs and the published
layouts' adapters (columns documented in :mod:`scarce_lab.environments.sovsim.tables`)."""

from __future__ import annotations

import math
import weakref

import polars as pl

AGENT_ROUND_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String,
    "run_id": pl.String,
    "model": pl.String,
    "condition": pl.String,
    "base_condition": pl.String,
    "settings": pl.String,
    "simulation": pl.Int64,
    "round": pl.Int64,
    "agent": pl.String,
    "agent_index": pl.Int64,
    "role": pl.String,
    "is_leader": pl.Boolean,
    "n_agents": pl.Int64,
    "pool_before": pl.Float64,
    "announced_pool": pl.Float64,
    "pool_seen": pl.Float64,
    "remainder_seen": pl.Float64,
    "extraction": pl.Float64,
    "payoff": pl.Float64,
    "remaining": pl.Float64,
    "collapsed": pl.Boolean,
    "reasoning": pl.String,
    "valid": pl.Boolean,
    "fallback_used": pl.Boolean,
}

SORT_KEYS = ("source", "model", "condition", "run_id", "round", "agent_index")

#: Canonical SovSim roles per condition: (subordinate, leader); the leader is the last agent.
SOVSIM_ROLES = {
    "cpr": ("citizen", "citizen"),
    "bcpr": ("worker", "boss"),
    "kcpr": ("peasant", "king"),
    "kcpr_m": ("peasant", "king"),
}


def number(value: object, field: str) -> float:
    """``float(value)`` of a field of the SovSim authors' files: a JSON number (a bool as 0
    or 1) or a number written as text (``"120"``), finite.

    Raises:
        ValueError: anything else (null, a list, other text, NaN or infinity), naming ``field``.
    """
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x):
        raise ValueError(f"{field} is not a finite number: {value!r}")
    return x


def integer(value: object, field: str) -> int:
    """``int(value)`` of a count of the SovSim authors' files (``round``,
    ``simulation_id``): an integer, also as a whole float or text (``2.0``, ``"2"``).

    Raises:
        ValueError: anything else (``2.5`` was read as 2) or past 64 bits, naming ``field``.
    """
    x = number(value, field)
    if not x.is_integer() or abs(x) >= 2**63:
        raise ValueError(f"{field} is not a whole number of 64 bits: {value!r}")
    return int(value) if isinstance(value, int) else int(x)


def record_rows(rec: dict, *, source: str, run_id: str, model: str, condition: str, settings: str | None,
                simulation: int, remainder: float | None = None) -> list[dict]:
    """The agent-round rows of one round record of the SovSim authors' files (the
    released ``rationales.json`` and the run files ``sim_XX.json``): ``round``,
    ``pool_before``, ``extractions`` (by agent, the leader last outside ``cpr``),
    ``payoffs``, ``final_pool``, ``collapsed``; ``announced_pool`` in ``kcpr_m`` (then a
    peasant's ``pool_seen``); optional ``reasonings``. The leader's ``remainder_seen``
    is ``remainder`` where the record states it, else ``max(0, pool_before - the others'
    extractions)``. Every number is taken with :func:`number`, ``round`` with :func:`integer`.

    Raises:
        ValueError: naming the field: not a number, ``extractions`` or ``payoffs`` not
            lists of one number per agent, ``collapsed`` not true or false, ``reasonings``
            not a list (or null), or a reasoning that is not text (half a surrogate pair).
    """
    for f in ("extractions", "payoffs"):
        if not isinstance(rec[f], list):
            raise ValueError(f"{f} is not a list: {rec[f]!r}")
    z = [number(x, f"extractions[{i}]") for i, x in enumerate(rec["extractions"])]
    n = len(z)
    if len(rec["payoffs"]) != n:
        raise ValueError(f"payoffs has {len(rec['payoffs'])} values for {n} extractions")
    pay = [number(x, f"payoffs[{i}]") for i, x in enumerate(rec["payoffs"])]
    pool, remaining, t = number(rec["pool_before"], "pool_before"), number(rec["final_pool"], "final_pool"), \
        integer(rec["round"], "round")
    if rec["collapsed"] not in (True, False):
        raise ValueError(f"collapsed is not true or false: {rec['collapsed']!r}")
    announced = rec.get("announced_pool")
    announced = None if announced is None else number(announced, "announced_pool")
    sub_role, lead_role = SOVSIM_ROLES[condition]
    has_leader = condition != "cpr"
    if has_leader and remainder is None:
        remainder = max(0.0, pool - sum(z[:-1]))
    reasons = rec.get("reasonings") or [None] * n
    if not isinstance(reasons, list):
        raise ValueError(f"reasonings is not a list: {reasons!r:.80}")
    for i, r in enumerate(reasons):
        if isinstance(r, str) and not r.isascii():
            try:
                r.encode()
            except UnicodeEncodeError:
                raise ValueError(f"reasonings[{i}] is not text (half of a surrogate pair alone): {r!r:.80}") from None
    rows = []
    for i in range(n):
        leader = has_leader and i == n - 1
        hidden = condition == "kcpr_m" and not leader and announced is not None
        rows.append({
            "source": source, "run_id": run_id, "model": model, "condition": condition, "base_condition": condition,
            "settings": settings, "simulation": simulation, "round": t, "agent": f"a{i}",
            "agent_index": i, "role": lead_role if leader else sub_role, "is_leader": leader, "n_agents": n,
            "pool_before": pool, "announced_pool": announced, "pool_seen": announced if hidden else pool,
            "remainder_seen": number(remainder, "remaining_before_leader") if leader else None, "extraction": z[i],
            "payoff": pay[i], "remaining": remaining,
            "collapsed": bool(rec["collapsed"]), "reasoning": reasons[i] if i < len(reasons) else None,
        })
    return rows


def agent_round_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows (dicts; a column a row lacks is null) -> a DataFrame with exactly
    :data:`AGENT_ROUND_SCHEMA`, sorted (rows with equal keys in their given order)."""
    df = pl.DataFrame(
        [{k: r.get(k) for k in AGENT_ROUND_SCHEMA} for r in rows],
        schema=AGENT_ROUND_SCHEMA,
        orient="row",
    )
    return df.sort(*SORT_KEYS, maintain_order=True)


def in_order(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` sorted by :data:`SORT_KEYS`, rows with equal keys in their order in ``df``:
    returned as it is when its rows are already in that order with no key repeated
    (checked on the key columns, none of them null: a reader's frame built in order is not
    copied, which a sort of a million rows would do), else sorted (stable)."""
    if df.height < 2:
        return df
    if any(df[k].null_count() for k in SORT_KEYS):
        return df.sort(*SORT_KEYS, maintain_order=True)
    ordered = None  # each row against the next, the last key first: < on it, < or (== and ...) above
    for k in reversed(SORT_KEYS):
        a, b = df[k].slice(0, df.height - 1), df[k].slice(1)
        ordered = (a < b) if ordered is None else (a < b) | ((a == b) & ordered)
    return df if ordered.all() else df.sort(*SORT_KEYS, maintain_order=True)


#: ids of the lazy tables that parse files each time they are collected (:func:`parsed_scan`).
_PARSED: set[int] = set()


def parsed_scan(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Mark ``lf`` as a scan that parses its files whenever it is collected (a published
    layout's JSON, :func:`.published.sovsim_json.scan_rationales_many`), unlike a Parquet
    scan that reads only the columns asked: a table that queries it twice collects the
    columns it needs once (:func:`is_parsed_scan`). Returns ``lf``."""
    key = id(lf)
    _PARSED.add(key)
    weakref.finalize(lf, _PARSED.discard, key)
    return lf


def is_parsed_scan(lf: pl.DataFrame | pl.LazyFrame) -> bool:
    """Whether ``lf`` is a lazy table marked by :func:`parsed_scan`."""
    return isinstance(lf, pl.LazyFrame) and id(lf) in _PARSED
