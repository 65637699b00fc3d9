"""SovSim cross-play inputs: one row per (game, agent) with the agent's model (from
the run's manifest), its role and its payoff over the game, for
:mod:`scarce_lab.analysis.crossplay`.

Payoff: the agent's total gain, the sum of its per-round payoffs (paper eq. 4: z/3 +
remaining/4 per settled round; units of the pool). The condition column ``condition``
is the power condition with every other condition-defining setting except the
composition (``composition``, ``seats``) and the sampling settings (``llm.*``): the
composition is the cross-play cell, and runs whose other settings differ are refused
(never pooled). The sampling settings are each agent's: ``seat_settings`` (its seat's
record, else the run's ``llm.*`` for a model; none for a scripted policy), and a model
that plays with two settings is refused by :func:`scarce_lab.analysis.crossplay.focal_runs`.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from scarce_lab.analysis.crossplay import (
    CompositionError,
    advantage_result,
    complete_runs,
    condition_without_composition,
    dataset,
    focal_runs,
    matrix_result,
    one_run_payoffs,
)
from scarce_lab.analysis.findings import finding_function
from scarce_lab.analysis.pooling import PoolingError
from scarce_lab.data.schema import is_scripted

from .metrics import require_dataset


def per_agent(ds: Any) -> pl.DataFrame:
    """``run_id, condition, simulation, agent, role, aliases (["leader"] for the leader in
    its first round), model, seat_settings, payoff`` for every agent of
    every SovSim game in ``ds`` (a :class:`~scarce_lab.data.loaders.Dataset`).

    Only complete runs count (:func:`complete_runs`).

    Raises:
        CompositionError: a run whose manifest names no model for one of its agents.
        PoolingError: two runs of one power condition whose other settings differ.
    """
    from ..tables import from_dataset

    rounds = from_dataset(ds)
    meta, key_of = [], {}
    manifests = complete_runs(ds, "sovsim")
    rounds = rounds.filter(pl.col("run_id").is_in([m.run_id for m in manifests]))
    for m in manifests:
        settings = m.condition_settings or {}
        cond = {k: v for k, v in condition_without_composition(settings).items() if not k.startswith("llm.")}
        base = str(cond.get("condition", m.condition))
        key = json.dumps(cond, sort_keys=True, default=str)
        if key_of.setdefault(base, key) != key:
            raise PoolingError(f"SovSim runs of condition {base!r} differ in other settings (e.g. run {m.run_id}): "
                               "load them separately; a cross-play cell never pools settings")
        seats = settings.get("seats") or {}
        run_llm = {k.split(".", 1)[1]: v for k, v in settings.items() if k.startswith("llm.") and v is not None}
        for a, model in (m.models or {}).items():
            own = {k: v for k, v in (seats.get(a) or run_llm if not is_scripted(model) else {}).items()
                   if k != "model"}
            meta.append({"run_id": m.run_id, "agent": a, "model": model, "condition": base,
                         "seat_settings": json.dumps(own, sort_keys=True, default=str)})
    models = pl.DataFrame(meta, schema={"run_id": pl.String, "agent": pl.String, "model": pl.String,
                                        "condition": pl.String, "seat_settings": pl.String})
    totals = (rounds.group_by("run_id", "agent", "simulation")
              .agg(pl.col("payoff").sum().cast(pl.Float64), pl.col("role").sort_by("round").first(),
                   pl.col("is_leader").sort_by("round").first()))
    totals = totals.with_columns(aliases=pl.when(pl.col("is_leader")).then(pl.lit(["leader"]))
                                 .otherwise(pl.lit([], dtype=pl.List(pl.String))))
    out = totals.join(models, on=["run_id", "agent"], how="left")
    lost = out.filter(pl.col("model").is_null())
    if lost.height:
        r = lost.row(0, named=True)
        raise CompositionError(f"run {r['run_id']}: the manifest names no model for agent {r['agent']}")
    return out.select("run_id", "condition", "simulation", "agent", "role", "aliases", "model", "seat_settings",
                      "payoff").sort("run_id", "agent")


#: What a SovSim focal payoff is.
PAYOFF = "total gain over the game (pool units)"


def crossplay_runs(data: Any, focal: str | list[str] = "king", *, simulations: bool = False) -> pl.DataFrame:
    """One row per game of ``data`` (a Dataset, or a path: loaded): focal and background models,
    focal and residents' total gain, their difference
    (:func:`scarce_lab.analysis.crossplay.focal_runs`, ``by=["condition"]``).
    ``focal``: the focal seats the grid used (``king``/``boss``/``leader``, ``a0``...);
    ``simulations``: keep the game's ``simulation`` index (the common-random-numbers key
    that pairs compositions: the ratings and the population game need it)."""
    return focal_runs(per_agent(dataset(data)), focal, by=["condition", "simulation"] if simulations else ["condition"])


@finding_function("sovsim")
def focal_payoff_matrix(ds: Any, *, focal: str | list[str] = "leader") -> Any:
    """Which model does best in the focal seats, against which background? The focal
    payoff matrix (Melting Pot's focal/background protocol): per power condition, the
    focal seats' mean total gain over the game (pool units; paper eq. 4) per focal model
    (rows) x background model (columns), with Student-t 95% intervals over runs (the run
    is the unit; printed from 2 runs with spread: the coverage benchmark measured
    0.93-0.95 at 3-30 runs). A cell with one run, or whose runs all gave the same value,
    has no interval and says why. Each composition is its own condition, never pooled;
    runs of one power condition whose other settings differ are refused.

    ``focal``: the focal seats the grid used (``leader``, a role such as ``king`` or
    ``boss``, or agent ids ``a0``...). The finding's ``frame``: one row per condition x
    focal x background model (:func:`scarce_lab.analysis.crossplay.focal_payoff_matrix`).
    """
    return matrix_result(crossplay_runs(require_dataset(ds), focal), by=["condition"], payoff=PAYOFF,
                         name="sovsim_crossplay_focal_payoff", convention=_convention(focal))


@finding_function("sovsim")
def invader_advantage(ds: Any, *, focal: str | list[str] = "leader") -> Any:
    """Does one invader gain among residents? The focal seats' total gain minus the
    residents' mean total gain in the same game (pool units), paired per game, per power
    condition x focal model x background model, with Student-t 95% intervals over games;
    self-play compositions are left out (there the difference is the seat's, not an
    invader's). ``focal`` as :func:`focal_payoff_matrix`.
    """
    return advantage_result(crossplay_runs(require_dataset(ds), focal), by=["condition"], payoff=PAYOFF,
                            name="sovsim_crossplay_invader_advantage", convention=_convention(focal))


@finding_function("sovsim")
def crossplay_ratings(ds: Any, *, focal: str | list[str] = "leader", method: str = "bradley-terry",
                      alpha: float | None = None, population_size: int | None = None, n_boot: int | None = None,
                      seed: int | None = None) -> Any:
    """Which model ranks highest in the focal seats? Two readings of the grid per power
    condition (never pooled; :func:`scarce_lab.analysis.population_game.crossplay_ranking`):

    - ``method="bradley-terry"``: ratings from invasion comparisons: model F leading over
      background B against B's own self-play, in the same simulation (same seats and run
      seed), by the focal seats' total gain (pool units); a win, a loss or a tie (half)
      per simulation, fitted by maximum likelihood; centred log-odds and Elo points, with
      95% intervals (se clustered by simulation, t quantile; printed from 3 simulations
      per cell: the coverage benchmark measured 0.95-0.97 at 3-30). A condition whose
      comparisons are not strongly connected (a model that never loses) gets no finite
      rating and says so (:func:`scarce_lab.analysis.ratings.bradley_terry`).
    - ``method="population-game"``: which leader policy a population would drift to: the
      focal payoff matrix read as a symmetric population game: single-population
      alpha-rank (Omidshafiei et al. 2019; ``alpha`` per payoff range, default 10,
      ``population_size`` m, default 50) and the replicator dynamics' rest points with
      their stability (Jacobian eigenvalues), with the share of ``n_boot`` (default 500)
      bootstrap resamples of simulations (drawn with ``seed``, default 0) in which each
      model tops alpha-rank and each rest point stays stable: bootstrap shares, not
      coverage-checked intervals. Needs every cell at every simulation (a missing cell
      is named).

    ``focal`` as :func:`focal_payoff_matrix`.

    Raises:
        ValueError: an unknown method, or a population-game setting with bradley-terry.
    """
    from scarce_lab.analysis.population_game import crossplay_ranking

    return crossplay_ranking(crossplay_runs(require_dataset(ds), focal, simulations=True), method=method,
                             by=["condition"], payoff=PAYOFF, name="sovsim_crossplay", convention=_convention(focal),
                             alpha=alpha, population_size=population_size, n_boot=n_boot, seed=seed)


def _convention(focal: str | list[str]) -> dict[str, Any]:
    return {"protocol": "focal/background (Melting Pot)", "focal": focal}


def seat_payoffs(run_dir: Any) -> dict[str, float]:
    """Each agent's total gain over the game (:data:`PAYOFF`) in the one complete game
    of ``run_dir`` (a run folder): what a selection chain selects on
    (:attr:`scarce_lab.registry.EnvironmentSpec.seat_payoffs`).

    Raises:
        ValueError: the folder holds no complete game, or more than one.
    """
    return one_run_payoffs(per_agent(dataset(run_dir)), run_dir, "SovSim game")
