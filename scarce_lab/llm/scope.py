"""Where a model call belongs: the run, round (or subrun) and agent, carried in a
:mod:`contextvars` variable instead of a ``run_id=`` argument on every call.

A runner binds the run once (``with run_scope(run_id=...)``) and narrows it per round
or agent (``with run_scope(round=3, agent="a0")``); every model call made inside (also
in tasks started there, and through :func:`scarce_lab._sync.run_sync`, which copies
the context into its worker thread) reads it with :func:`current_scope`. The client
fills each field a call's own :class:`~scarce_lab.llm.client.CallContext` leaves unset
from the scope, so the records, the per-run dollar cap and the call ids all name the
run without the agents passing it.

Call ids (:func:`call_id_for`) are deterministic: a hash of run, agent, round,
purpose, seed and the prompt, plus the number of earlier identical calls in the same
run scope. A resumed run replays the same calls with the same seeds and prompts, and a
cached answer is asked for with the same key, so both get the ids the first run gave.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["RunScope", "call_id_for", "current_scope", "run_scope"]


@dataclass(frozen=True)
class RunScope:
    """The run context of the calls made inside it.

    Attributes:
        run_id: the run's id (as in its manifest); ``None`` outside a run.
        round: the environment's round (SovSim round, SCARCE contention, Economy
            episode), ``None`` where none applies.
        subrun: SCARCE's subrun index; ``None`` elsewhere.
        agent: the acting agent, ``None`` for calls of the environment itself.
        issued: call keys issued in this run scope and how often (shared by every
            narrower scope of the same run; makes identical calls' ids distinct).
    """

    run_id: str | None = None
    round: int | None = None
    subrun: int | None = None
    agent: str | None = None
    issued: dict[str, int] = field(default_factory=dict, compare=False, repr=False)


_SCOPE: ContextVar[RunScope | None] = ContextVar("scarce_lab_run_scope", default=None)
_GLOBAL = RunScope()
#: issued call counts of calls made outside any run scope (see :func:`call_id_for`)
_OUTSIDE_RUNS: dict[str, int] = {}


def current_scope() -> RunScope:
    """The innermost bound :class:`RunScope` (an empty one outside any run)."""
    return _SCOPE.get() or _GLOBAL


@contextmanager
def run_scope(**fields: Any) -> Iterator[RunScope]:
    """Bind a scope for the calls made inside the ``with`` block: the current scope
    with ``fields`` replaced. A new ``run_id`` starts a fresh count of issued calls;
    a narrower scope of the same run shares the run's count.

    Raises:
        TypeError: a field :class:`RunScope` does not have.
    """
    unknown = set(fields) - {"run_id", "round", "subrun", "agent"}
    if unknown:
        raise TypeError(f"run_scope: unknown field(s) {sorted(unknown)} (run_id, round, subrun, agent)")
    cur = current_scope()
    new_run = "run_id" in fields and fields["run_id"] != cur.run_id
    scope = replace(cur, **fields, issued={} if (new_run or cur is _GLOBAL) else cur.issued)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def call_id_for(*, run_id: str | None, agent: str | None, round: int | None, purpose: str, seed: int,
                messages_hash: str, attempt: int, model: str = "", params: Any = None,
                scope: RunScope | None = None) -> str:
    """The deterministic id of a call (16 hex characters; ``-N`` appended for the
    N-th identical call of the same run scope, N >= 1).

    The key is everything that defines the call: run, agent, round, purpose, seed,
    prompt hash, attempt (0 first call, 1 second call of a decision), model and the
    parameters sent (so two models asked the same question in one run, a mixed
    population, never share an id). Outside a run scope the ``-N`` count is the
    process's: two identical calls there are two calls (their ``decision_id`` must
    not merge two decisions), so such ids are unique but not reproducible.
    """
    key = json.dumps([run_id, agent, round, purpose, seed, messages_hash, attempt, model, params],
                     separators=(",", ":"), sort_keys=True, default=str)
    base = hashlib.sha256(key.encode()).hexdigest()[:16]
    scope = scope or current_scope()
    issued = _OUTSIDE_RUNS if scope is _GLOBAL else scope.issued
    n = issued.get(base, 0)
    issued[base] = n + 1
    return base if n == 0 else f"{base}-{n}"
