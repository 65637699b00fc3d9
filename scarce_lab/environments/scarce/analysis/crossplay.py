"""SCARCE cross-play inputs: per-worker payoffs by model, and the choices behind
exclusive alliances (who ranks whom first on ballots, who messages whom), for
:mod:`scarce_lab.analysis.crossplay`.

Models per worker come from the run's manifest: ``w0.negotiator`` / ``w0.solver``
(runs with seats), else the run's ``negotiator`` / ``solver`` (every worker the same).
``part`` (default ``negotiator``: the ballots and messages are the negotiator's) picks
which of a worker's two models names it. Payoff and alliances: the methods of
:func:`focal_payoff_matrix` and :func:`alliances`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import polars as pl

from scarce_lab.analysis.crossplay import (
    CompositionError,
    complete_runs,
    condition_without_composition,
)
from scarce_lab.analysis.findings import finding_function
from scarce_lab.analysis.pooling import PoolingError

#: The part whose model names a worker by default.
DEFAULT_PART = "negotiator"


def worker_models(ds: Any, part: str = DEFAULT_PART) -> pl.DataFrame:
    """``run_id, condition, agent, model, seat_settings`` for every worker that played
    of a complete run (from the manifests; the workers are those of the run's
    ``submission`` events; runs that are not complete are left out with a warning);
    ``seat_settings``: the rest of the worker's seat (the other part's model and
    settings, memory) as text, which must be one per model
    (:func:`scarce_lab.analysis.crossplay.focal_runs` refuses otherwise).

    Raises:
        ValueError: ``part`` is not ``solver`` or ``negotiator``.
        CompositionError: no model recorded for a worker (named).
        PoolingError: two runs of one base condition with other settings.
    """
    if part not in ("solver", "negotiator"):
        raise ValueError(f"part must be 'solver' or 'negotiator', got {part!r}")
    subs = ds.payloads("submission", "scarce").select("run_id", "agent").unique().collect()
    workers: dict[str, list[str]] = {}
    for r in subs.iter_rows(named=True):
        workers.setdefault(r["run_id"], []).append(r["agent"])
    rows, key_of = [], {}
    for m in complete_runs(ds, "scarce"):
        cond = condition_without_composition(m.condition_settings or {})
        base = m.condition_settings.get("base_condition") or str(m.condition).split(",")[0]
        key = json.dumps(cond, sort_keys=True, default=str)
        if key_of.setdefault(base, key) != key:
            raise PoolingError(f"SCARCE runs of condition {base!r} differ in other settings (e.g. run {m.run_id}): "
                               "load them separately; a cross-play cell never pools settings")
        seats = (m.condition_settings or {}).get("seats") or {}
        other = "solver" if part == "negotiator" else "negotiator"
        for w in sorted(workers.get(m.run_id, [])):
            model = (m.models or {}).get(f"{w}.{part}") or (m.models or {}).get(part)
            if not model or model == "mixed":
                raise CompositionError(f"run {m.run_id}: the manifest names no {part} model for worker {w}")
            if w in seats:  # the seat's record without the model that names it
                own = {k: v for k, v in seats[w].items() if k != part}
                own[part] = {k: v for k, v in (seats[w].get(part) or {}).items() if k != "model"}
            else:  # no seats: the run's settings of the worker
                own = {other: {"model": (m.models or {}).get(other)}, part: {}, "memory": m.condition_settings.get("memory")}
            rows.append({"run_id": m.run_id, "condition": base, "agent": w, "model": model,
                         "seat_settings": json.dumps(own, sort_keys=True, default=str)})
    return pl.DataFrame(rows, schema={"run_id": pl.String, "condition": pl.String, "agent": pl.String,
                                      "model": pl.String, "seat_settings": pl.String})


def per_agent(ds: Any, part: str = DEFAULT_PART) -> pl.DataFrame:
    """``run_id, condition, agent, model, payoff`` (mean submission score per worker)."""
    scores = (ds.payloads("submission", "scarce").select("run_id", "agent", "score").collect()
              .group_by("run_id", "agent").agg(pl.col("score").cast(pl.Float64).mean().alias("payoff")))
    return worker_models(ds, part).join(scores, on=["run_id", "agent"], how="inner").sort("run_id", "agent")


def _contests(ds: Any) -> pl.DataFrame:
    return ds.payloads("contention_start", "scarce").select("run_id", "round", "participants").collect()


def _choice_rows(run_id: str, chooser: str, picked: str, options: list[str], model_of: dict) -> list[dict]:
    """The rows of one choice; none when its rivals all play one model (the choice then
    says nothing about models)."""
    by_model = Counter(model_of[o] for o in options)
    if len(by_model) < 2:
        return []
    return [{"run_id": run_id, "chooser_model": model_of[chooser], "chosen_model": mm, "expected": k / len(options),
             "picked": int(model_of[picked] == mm)} for mm, k in by_model.items()]


def _models_by_run(ds: Any, part: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for r in worker_models(ds, part).iter_rows(named=True):
        out.setdefault(r["run_id"], {})[r["agent"]] = r["model"]
    return out


def ballot_choices(ds: Any, part: str = DEFAULT_PART) -> pl.DataFrame:
    """One row per (ballot, rival model): the voter's model, the rival model, the
    uniform chance of ranking a worker of that model first among the others, and
    whether the voter did (the method: :func:`alliances`). Contentions with fewer than
    3 participants are left out."""
    models = _models_by_run(ds, part)
    parts = {(r["run_id"], r["round"]): r["participants"] for r in _contests(ds).iter_rows(named=True)}
    rows: list[dict] = []
    for b in ds.payloads("ballot", "scarce").select("run_id", "round", "agent", "entries").collect().iter_rows(named=True):
        who = parts.get((b["run_id"], b["round"])) or []
        others = [w for w in who if w != b["agent"]]
        ranked = [e["worker"] for e in b["entries"] if e["worker"] != b["agent"] and e["worker"] in others]
        if len(others) < 2 or not ranked or b["run_id"] not in models:
            continue
        rows += _choice_rows(b["run_id"], b["agent"], ranked[0], others, models[b["run_id"]])
    return _frame(rows)


def message_choices(ds: Any, part: str = DEFAULT_PART) -> pl.DataFrame:
    """One row per (private message, rival model): the sender's model, the rival
    model, the uniform chance of writing to a worker of that model, and whether the
    message went to one. Contentions with fewer than 3 participants are left out."""
    models = _models_by_run(ds, part)
    parts = {(r["run_id"], r["round"]): r["participants"] for r in _contests(ds).iter_rows(named=True)}
    rows: list[dict] = []
    msgs = ds.payloads("private_message", "scarce").select("run_id", "round", "sender", "recipient").collect()
    for m in msgs.iter_rows(named=True):
        others = [w for w in parts.get((m["run_id"], m["round"])) or [] if w != m["sender"]]
        if len(others) < 2 or m["recipient"] not in others or m["run_id"] not in models:
            continue
        rows += _choice_rows(m["run_id"], m["sender"], m["recipient"], others, models[m["run_id"]])
    return _frame(rows)


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"run_id": pl.String, "chooser_model": pl.String, "chosen_model": pl.String,
                                      "expected": pl.Float64, "picked": pl.Int64})


#: What a SCARCE focal payoff is.
PAYOFF = "mean task score per subrun (0..1)"
#: A task score lies in 0..1 (a missed deadline scores 0): the intervals stay inside.
SCORE_BOUNDS = (0.0, 1.0)
#: The protocol each cross-play finding's convention names (the results copy it).
_CONVENTION = {"protocol": "focal/background (Melting Pot)"}


def crossplay_runs(data: Any, focal: str | list[str] = "w0", part: str = DEFAULT_PART, *,
                   simulations: bool = False) -> pl.DataFrame:
    """One row per run of ``data`` (a path or a Dataset): focal and background models
    (of each worker's ``part``), focal and residents' mean score, their difference
    (:func:`scarce_lab.analysis.crossplay.focal_runs`, ``by=["condition"]``).
    ``simulations``: add ``simulation``, the run's seed (the common-random-numbers key
    that pairs compositions: the ratings and the population game need it)."""
    from scarce_lab.analysis.crossplay import dataset, focal_runs

    ds = dataset(data)
    agents = per_agent(ds, part)
    if not simulations:
        return focal_runs(agents, focal, by=["condition"])
    seeds = pl.DataFrame({"run_id": [m.run_id for m in ds.manifests], "simulation": [m.seed for m in ds.manifests]},
                         schema={"run_id": pl.String, "simulation": pl.Int64})
    return focal_runs(agents.join(seeds, on="run_id", how="left"), focal, by=["condition", "simulation"])


@finding_function("scarce")
def focal_payoff_matrix(ds: Any, *, focal: str | list[str] = "w0", part: str = DEFAULT_PART) -> Any:
    """Which model does best in the focal seats, against which background? The focal
    payoff matrix of a cross-play grid (Melting Pot's focal/background protocol): per
    condition, the focal workers' (``focal``: ``w0`` or ``w0,w1``) mean task score
    (0..1; a missed deadline scores 0) per focal model (rows) x background model
    (columns), each worker named by its ``part``'s model (``negotiator`` or ``solver``),
    mean over runs with a 95% bounded interval (the t/score hull clipped to 0..1; the run
    is the unit; printed from 2 runs: the coverage benchmark measured at least 98.7% at
    2-30 runs) (:func:`crossplay_runs`). A cell with one run has no interval and says
    why. Each composition is its own condition, never pooled; runs of one condition
    whose other settings differ are refused.

    Raises:
        CompositionError: a run lacks the focal worker or a worker's model.
        PoolingError: two runs of one condition with other settings.
    """
    from scarce_lab.analysis.crossplay import matrix_result

    return matrix_result(crossplay_runs(ds, focal, part), by=["condition"], payoff=PAYOFF,
                         name="scarce_crossplay_focal_payoff", convention=_CONVENTION, bounds=SCORE_BOUNDS)


@finding_function("scarce")
def invader_advantage(ds: Any, *, focal: str | list[str] = "w0", part: str = DEFAULT_PART) -> Any:
    """Does one invader gain among residents? The focal workers' mean task score minus
    the residents' in the same run, paired per run, per condition x focal model x
    background model: mean over runs with a 95% bounded interval of the paired
    differences (bounds -1..1); self-play compositions are left out (there the
    difference is the seat's, not an invader's). ``focal`` and ``part`` as
    :func:`focal_payoff_matrix`.

    Raises:
        CompositionError, PoolingError: as :func:`focal_payoff_matrix`.
    """
    from scarce_lab.analysis.crossplay import advantage_result

    return advantage_result(crossplay_runs(ds, focal, part), by=["condition"], payoff=PAYOFF,
                            name="scarce_crossplay_invader_advantage", convention=_CONVENTION, bounds=SCORE_BOUNDS)


@finding_function("scarce")
def crossplay_ratings(ds: Any, *, focal: str | list[str] = "w0", part: str = DEFAULT_PART,
                      method: str = "bradley-terry", alpha: float | None = None, population_size: int | None = None,
                      n_boot: int | None = None, seed: int | None = None) -> Any:
    """Which negotiator (or solver: ``part``) ranks highest at the focal workers? Two
    readings of the grid per condition (never pooled;
    :func:`scarce_lab.analysis.population_game.crossplay_ranking`), by the focal workers' mean
    task score (0..1):

    - ``method="bradley-terry"``: ratings from invasion comparisons: model F at the focal
      workers over background B against B's own self-play with the same seed; a win, a
      loss or a tie (half: equal scores are common) per seed, fitted by maximum
      likelihood; centred log-odds and Elo points with 95% intervals (se clustered by
      seed, t quantile; printed from 3 seeds per cell: the coverage benchmark measured
      0.95-0.97 at 3-30 without ties). A condition whose comparisons are not strongly
      connected gets no finite rating and says so
      (:func:`scarce_lab.analysis.ratings.bradley_terry`).
    - ``method="population-game"``: which negotiator a population would drift to: the
      focal payoff matrix read as a symmetric population game: single-population
      alpha-rank (Omidshafiei et al. 2019; ``alpha`` per payoff range, default 10,
      ``population_size`` m, default 50) and the replicator dynamics' rest points with
      their stability, with the share of ``n_boot`` (default 500) bootstrap resamples of
      seeds (drawn with ``seed``, default 0) in which each model tops and each rest point
      stays stable: bootstrap shares, not coverage-checked intervals. Needs every cell
      at every seed (a missing cell is named).

    Raises:
        ValueError: an unknown method, or a population-game setting with bradley-terry.
    """
    from scarce_lab.analysis.population_game import crossplay_ranking

    return crossplay_ranking(crossplay_runs(ds, focal, part, simulations=True), method=method, by=["condition"],
                             payoff=PAYOFF, name="scarce_crossplay", convention=_CONVENTION, alpha=alpha,
                             population_size=population_size, n_boot=n_boot, seed=seed)


@finding_function("scarce")
def alliances(ds: Any, *, part: str = DEFAULT_PART, via: str = "ballots") -> Any:
    """Do workers favour their own model? Exclusive alliances by model, against uniform
    choice among the rivals: ``via="ballots"``, who ranks whom first on ballots (the
    highest-placed worker other than the voter, in contentions with at least two
    rivals; :func:`ballot_choices`); ``via="messages"``, who writes private messages to
    whom (:func:`message_choices`); by the chooser's and the chosen worker's model (each
    named by its ``part``'s model). The baseline is a uniform choice among the rivals
    (each with chance 1/(n-1): the expected count of a model is its share among the
    chooser's rivals); the excess share is (observed - expected) / choices per run, mean over runs with a
    95% Student-t interval. Choices whose rivals all play one model say nothing about
    models and are left out. A positive excess toward one's own model with a negative
    one toward another is the pattern of an exclusive alliance.

    Raises:
        ValueError: ``via`` is neither.
    """
    from scarce_lab.analysis.crossplay import choices_result

    if via == "ballots":
        return choices_result(ballot_choices(ds, part), what="first place on ballots among the others",
                              name="scarce_crossplay_ballot_first", convention=_CONVENTION)
    if via == "messages":
        return choices_result(message_choices(ds, part), what="private message recipients",
                              name="scarce_crossplay_messages", convention=_CONVENTION)
    raise ValueError(f"alliances: via must be 'ballots' or 'messages', got {via!r}")


def seat_payoffs(run_dir: Any) -> dict[str, float]:
    """Each worker's mean task score per subrun (:data:`PAYOFF`, 0..1) in the one
    complete run of ``run_dir`` (a run folder): what a selection chain selects on
    (:attr:`scarce_lab.registry.EnvironmentSpec.seat_payoffs`).

    Raises:
        ValueError: the folder holds no complete run, or more than one.
    """
    from scarce_lab.analysis.crossplay import dataset, one_run_payoffs

    return one_run_payoffs(per_agent(dataset(run_dir)), run_dir, "SCARCE run")
