"""Never pool different conditions: the check every SCARCE and Economy metric runs
before it groups rows.

A condition is every setting that defines it (docs/design.md). Tidy tables carry them in
``settings`` (canonical JSON of the run's condition settings, see
:mod:`scarce_lab.data.tables`). A metric that groups by ``by`` columns may put rows of
several runs in one group only if those runs agree on every condition setting except
the ones the ``by`` columns themselves name (grouping by ``memory`` compares memory
horizons, so runs may differ in ``memory`` and in nothing else), and on every identity
column not in ``by`` (e.g. the solver model when the group is per negotiator model).
Otherwise :func:`check_no_pooling` raises :class:`PoolingError` naming the group, the
settings that differ and their values: a silently pooled number is worse than none.

Grouping by ``condition`` (the label unique per settings within a table) is always
allowed, and still checked: two tables labelled separately and concatenated can give
one label to two different setting sets.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import polars as pl

#: Result-frame column -> the condition setting(s) it stands for (SCARCE and Economy).
SETTING_OF: dict[str, tuple[str, ...]] = {
    "memory": ("memory",),
    "mechanism": ("mechanism",),
    "scheduler": ("scheduler",),
    "reasoning_effort": ("llm.reasoning_effort",),
    "rich_worker_budget": ("rich_worker_budget", "worker_budgets.w0"),
    "mixed_deadlines": ("mixed_deadlines",),
    "workers": ("workers",),
    "subruns": ("subruns",),
    "ablation": ("ablation",),
    "baseline": ("baseline",),
    "task": ("task",),
}
#: Columns that identify what was run besides the settings (checked when present).
IDENTITY_COLUMNS: tuple[str, ...] = ("model", "solver_model")


class PoolingError(ValueError):
    """A metric or table was asked to put runs of different conditions into one group
    (the message names the group, the settings and their values). The one class every
    environment's never-pool check raises (:func:`check_no_pooling` here, and the SovSim
    tables' :func:`scarce_lab.environments.sovsim.analysis.pooling.pool_groups`), so one ``except``
    catches them all."""


def _parse(s: str | None) -> dict[str, Any]:
    return json.loads(s) if s else {}


def differing_settings(settings: Sequence[str | None], sources: Sequence[str | None] | None = None
                       ) -> dict[str, list[str]]:
    """Setting -> its distinct values (as JSON text, sorted) among ``settings`` (canonical
    JSON strings of condition settings; ``None``: the layout records none), for the
    settings that are not all equal. A setting missing from a run that records settings
    counts as the value ``<absent>`` (never as ``null``, a value a run can record).
    Pseudo-settings say what cannot be compared: ``layout`` when ``sources`` (the rows'
    layouts) differ, ``settings unknown`` when runs without recorded settings stand
    beside runs with them."""
    parsed = [_parse(s) for s in dict.fromkeys(s for s in settings if s is not None)]
    out: dict[str, list[str]] = {}
    if sources is not None and len(set(sources)) > 1:
        out["layout"] = sorted({str(s) for s in sources})
    if any(s is None for s in settings) and parsed:
        out["settings unknown"] = ["not recorded by some runs"]
    for k in sorted({k for p in parsed for k in p}):
        vals = sorted({json.dumps(p[k], sort_keys=True, default=str) if k in p else "<absent>" for p in parsed})
        if len(vals) > 1:
            out[k] = vals
    return out


def check_no_pooling(df: pl.DataFrame, by: Sequence[str], *, what: str = "this metric",
                     allow: Sequence[str] = ()) -> None:
    """Raise :class:`PoolingError` if a group of ``by`` mixes runs of different conditions.

    Args:
        df: rows with ``settings`` (rows without that column, or with only null
            settings, are not checked: published layouts carry no settings) and
            optionally the :data:`IDENTITY_COLUMNS`.
        by: the grouping columns of the metric.
        what: the metric's name, for the message.
        allow: settings (dotted names) that may differ within a group besides those the
            ``by`` columns name (:data:`SETTING_OF`), e.g. ``("scheduler",)`` for a
            comparison that pairs schedulers inside one group.

    Raises:
        PoolingError: names the group, the settings that differ and their values, and
            how to avoid it (group by ``condition``, or filter the runs).
    """
    if df.height == 0 or "settings" not in df.columns:
        return
    allowed: set[str] = set(allow)
    if "condition" not in by:
        for col in by:
            allowed.update(SETTING_OF.get(col, ()))
    idents = [c for c in IDENTITY_COLUMNS if c in df.columns and c not in by]
    cols = [*by, "settings", *idents]
    d = df.select([c for c in dict.fromkeys(cols) if c in df.columns]).unique()
    groups = d.group_by(list(by), maintain_order=True) if by else [((), d)]
    for key, part in groups:
        settings = [s for s in part["settings"].to_list() if s is not None]
        diff = {k: v for k, v in differing_settings(settings).items() if k not in allowed}
        for c in idents:
            vals = sorted({str(v) for v in part[c].to_list()})
            if len(vals) > 1:
                diff[c] = vals
        if diff:
            key = key if isinstance(key, tuple) else (key,)
            group = ", ".join(f"{b}={k}" for b, k in zip(by, key, strict=True)) or "all rows"
            detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in diff.items())
            raise PoolingError(
                f"{what}: refusing to pool runs of different conditions in the group {group}: they differ in "
                f"{detail}. Add 'condition' (or the differing column) to by=, or keep only the runs of one "
                f"condition.")
