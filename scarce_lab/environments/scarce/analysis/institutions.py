"""Institutions in the SCARCE auction (sanctions, public reputation, contracts): the
condition of each run, institutional behaviour with and without each module, and
collective output against the centralised schedulers (the SCARCE paper's open
question "do institutions help or hurt collective output?").

Pure functions on polars frames (no environment, agent or runner import). The unit of
comparison is the *arm* of a run (:func:`institution_settings`): ``<scheduler>`` for a
centralised baseline, ``ballots|<institutions>`` for a negotiated run (``none`` when
every module is off, e.g. ``ballots|sanctions=vote,fine=50,reputation``). Per arm:
institutional behaviour (:func:`institution_frames`, :func:`institution_run_rates`,
:func:`institution_behaviour`), the relational share (:func:`relational_share`) and
collective output against a reference arm on the same seeds (:func:`collective_by_arm`).

Never pooled: every grouped function refuses a group whose runs differ in a condition
setting other than what the group names (:func:`~scarce_lab.analysis.pooling.check_no_pooling`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence

import polars as pl

from scarce_lab.analysis.pooling import check_no_pooling

from ..tables import scarce_run_configs
from .base import SHARE, _grouped, _groups, _need, cluster_ci, mean_over_runs
from .dynamics import _outcome_bounds, paired_outcomes
from .tactics import _has_any

#: Default institution settings (the environment's: every module off).
OFF = {"sanctions": "off", "fine": 100, "fine_to": "bank", "reputation": False, "contracts": False,
       "max_contract": 500}

INSTITUTION_SETTINGS_SCHEMA = {
    "run_id": pl.String, "seed": pl.Int64, "scheduler": pl.String, "institutions": pl.String,
    "sanctions": pl.String, "reputation": pl.Boolean, "contracts": pl.Boolean, "arm": pl.String,
    "settings": pl.String,
}


def institutions_label(ins: Mapping | None) -> str:
    """``none`` when every module is off, else the modules that are on and the
    non-default parameters that apply (``sanctions=vote,fine=50,reputation,contracts``)."""
    ins = {**OFF, **(ins or {})}
    parts = []
    if ins["sanctions"] != "off":
        parts.append(f"sanctions={ins['sanctions']}")
        parts += [f"{k}={ins[k]}" for k in ("fine", "fine_to") if ins[k] != OFF[k]]
    if ins["reputation"]:
        parts.append("reputation")
    if ins["contracts"]:
        parts.append("contracts" + (f"(max={ins['max_contract']})" if ins["max_contract"] != OFF["max_contract"] else ""))
    return ",".join(parts) or "none"


def institution_settings(runs: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per SCARCE run (:data:`INSTITUTION_SETTINGS_SCHEMA`) from the manifest's
    ``config`` JSON (a config without ``institutions`` is a run with every module off),
    with ``settings``: the run's condition settings (canonical JSON of the manifest's
    ``condition_settings``; null where the runs frame has none), so the per-arm tables
    refuse an arm that mixes models, compositions or other settings
    (:func:`~scarce_lab.analysis.pooling.check_no_pooling`)."""
    rows = []
    for r, c in scarce_run_configs(runs):
        ins = {**OFF, **(c.get("institutions") or {})}
        label, sched = institutions_label(ins), c.get("scheduler", "ballots")
        cs = r.get("condition_settings")
        settings = json.dumps(json.loads(cs), sort_keys=True, separators=(",", ":")) if cs else None
        rows.append({"run_id": r["run_id"], "seed": r["seed"], "scheduler": sched, "institutions": label,
                     "settings": settings,
                     "sanctions": ins["sanctions"], "reputation": bool(ins["reputation"]),
                     "contracts": bool(ins["contracts"]),
                     "arm": f"ballots|{label}" if sched == "ballots" else (sched if label == "none" else f"{sched}|{label}")})
    return pl.DataFrame(rows, schema=INSTITUTION_SETTINGS_SCHEMA, orient="row")


#: The event kinds :func:`institution_run_rates` reads.
INSTITUTION_KINDS = ("contention_start", "promise_judged", "breach", "sanction", "contract_offer", "contract_answer",
                     "contract_settlement")


def institution_frames(dataset) -> dict[str, pl.DataFrame]:
    """``kind -> payload frame`` of :data:`INSTITUTION_KINDS` from a loaded dataset
    (``sl.load(...)``; anything with ``payloads(kind, environment)`` returning a
    LazyFrame); a kind with no event is an empty frame with its columns."""
    return {k: dataset.payloads(k, "scarce").collect() for k in INSTITUTION_KINDS}


BEHAVIOUR_METRICS = ("promise_keeping", "breaches_per_contention", "fined_share", "signed_share", "held_share")


def institution_run_rates(frames: Mapping[str, pl.DataFrame], settings: pl.DataFrame) -> pl.DataFrame:
    """Per run: the institutional rates of :data:`BEHAVIOUR_METRICS`, null where the
    run has nothing to rate, and always where the module that records it was off (a run
    without sanctions or reputation judges no commitment: its breach rate is unknown,
    not 0); the method: :func:`~.findings.institution_behaviour`.

    Args:
        frames: :func:`institution_frames` (kind -> payload frame with ``run_id``).
        settings: :func:`institution_settings` of the runs to report.
    """
    _need(settings, ("run_id", "sanctions", "reputation", "contracts"), "settings")
    rows = []
    for rid, sanctions, reputation, contracts in settings.select(
            "run_id", "sanctions", "reputation", "contracts").iter_rows():
        judged_on = sanctions != "off" or bool(reputation)

        def of(kind, rid=rid):
            d = frames.get(kind, pl.DataFrame(schema={"run_id": pl.String}))
            return d.filter(pl.col("run_id") == rid) if d.height else d

        cont, judged, breach, sanc = of("contention_start"), of("promise_judged"), of("breach"), of("sanction")
        offers, answers, settled = of("contract_offer"), of("contract_answer"), of("contract_settlement")

        def share(num, den, on=True):
            return None if den == 0 or not on else num / den

        rows.append({
            "run_id": rid,
            "promise_keeping": share(int(judged["kept"].sum()) if judged.height else 0, judged.height, judged_on),
            "breaches_per_contention": share(breach.height, cont.height, judged_on),
            "fined_share": share(int(sanc["passed"].sum()) if sanc.height else 0, sanc.height,
                                 sanctions != "off"),
            "signed_share": share(int(answers["signed"].sum()) if answers.height else 0, offers.height, bool(contracts)),
            "held_share": share(int(settled["held"].sum()) if settled.height else 0, settled.height, bool(contracts)),
        })
    return pl.DataFrame(rows, schema={"run_id": pl.String, **dict.fromkeys(BEHAVIOUR_METRICS, pl.Float64)},
                        orient="row")


def institution_behaviour(rates: pl.DataFrame, settings: pl.DataFrame, *, by: Sequence[str] = ("arm",)) -> pl.DataFrame:
    """:func:`institution_run_rates` per ``by`` group: ``metric``, ``value``, ``lo``,
    ``hi`` (t interval over runs, bounded to [0, 1] for shares; none from one run),
    ``runs`` (runs with a value).

    Raises:
        PoolingError: a group mixes conditions (``settings`` column present).
    """
    d = rates.join(settings, on="run_id", how="left")
    _need(d, ("run_id", *by), "rates joined with settings")
    check_no_pooling(d, list(by), what="institution_behaviour")
    rows = []
    for base, part in _groups(d, by):
        for m in BEHAVIOUR_METRICS:
            bounds = None if m == "breaches_per_contention" else SHARE
            ci = mean_over_runs(part[m].to_list(), bounds=bounds)
            rows.append(base | {"metric": m, "value": ci["value"], "lo": ci["lo"], "hi": ci["hi"], "runs": ci["runs"]})
    schema = {b: d.schema[b] for b in by} | {"metric": pl.String, "value": pl.Float64, "lo": pl.Float64,
                                              "hi": pl.Float64, "runs": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def relational_share(rounds: pl.DataFrame, relational: Collection[str], *, by: Sequence[str] = ("arm",)) -> pl.DataFrame:
    """Share of labelled agent-rounds with at least one relational label, per ``by``
    group (cluster interval over runs). ``rounds``: labelled rounds (``run_id``,
    ``labels`` list) joined with the ``by`` columns (e.g. :func:`institution_settings`).

    Raises:
        PoolingError: a group mixes conditions.
    """
    _need(rounds, ("run_id", "labels", *by), "rounds")
    check_no_pooling(rounds, list(by), what="relational_share")
    d = rounds.with_columns(_has_any(relational).cast(pl.Float64).alias("_rel"))
    return _grouped(d, by, lambda part: cluster_ci(part, "_rel", bounds=SHARE))


COLLECTIVE_METRICS = ("deadline_miss_rate", "mean_partial_score", "total_queue_wait_s")


def collective_by_arm(outcomes: pl.DataFrame, *, by: Sequence[str] = ("arm",), reference: str | None = "ballots|none",
                      pair_on: Sequence[str] = ("seed",)) -> pl.DataFrame:
    """Collective output (:data:`COLLECTIVE_METRICS`) per ``by`` group, the method:
    :func:`~.findings.collective_output`; ``diff``/``diff_lo``/``diff_hi``/``pairs``
    null without pairs on ``pair_on``.

    Args:
        outcomes: :func:`~.dynamics.collective_outcomes` joined with
            :func:`institution_settings` (``arm``, ``seed``).

    Raises:
        PoolingError: a group mixes conditions.
    """
    _need(outcomes, ("run_id", *by, *pair_on, *COLLECTIVE_METRICS), "outcomes")
    check_no_pooling(outcomes, list(by), what="collective_by_arm")
    ref = outcomes.filter(pl.col(by[0]) == reference) if reference is not None else outcomes.clear()
    bounds = lambda part, m: SHARE if m == "deadline_miss_rate" else _outcome_bounds(part, m)  # noqa: E731
    return paired_outcomes(outcomes, by, ref, COLLECTIVE_METRICS, bounds, pair_on=pair_on).drop("se")
