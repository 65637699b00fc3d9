"""Ratings of a cross-play population: a Bradley-Terry fit of invasion comparisons
(any environment; the environment packages build the runs frame).

The comparison. In a focal/background grid (:mod:`.crossplay`) simulation ``s`` of
the composition "F in the focal seats over background B" is paired with simulation
``s`` of B's self-play (B in the focal seats over background B): the same seats, the
same background, the same run seed (common random numbers, data/crossplay/README.md).
F *beats* B in that pair when F's focal payoff exceeds B's, loses when it is lower,
and ties when they are equal (a tie counts half a win and half a loss, Elo's rule).
This is the first condition of an evolutionarily stable strategy (Maynard Smith and
Price 1973: B resists F when E(F, B) < E(B, B)), scored per simulation; comparing
payoffs in one seat keeps the seat's own advantage (a king earns more than a
peasant) out of the rating, which a focal-versus-resident win/loss would need a seat
term for. Every ordered pair F != B with both cells present gives one comparison per
simulation; a (F, B) pair and its reverse are two different comparisons of F and B.

The fit. Bradley and Terry (1952): P(F beats B) = 1 / (1 + exp(-(r_F - r_B))),
fitted by maximum likelihood as a binomial GLM with a logit link and no intercept
(statsmodels; ties as outcome 0.5, a quasi-binomial score). Ratings are centred (mean
0 over the population): ``rating`` is in log-odds, ``elo`` = 400 / ln 10 x rating
(Elo's scale: 400 points are odds of 10 to 1). The ML estimate exists only when
the comparison graph is strongly connected (Zermelo 1929, Ford 1957: every split of
the population into two groups has a win, or a tie, each way); otherwise a member
that never loses (or never wins) against the rest has an infinite rating, and the
condition gets no ratings and a note saying which members (never a huge finite
number). Comparisons within a simulation share the background's self-play payoff,
so they are not independent: the standard errors are clustered by simulation
(statsmodels' cluster-robust covariance) and the interval uses a t quantile with
(simulations - 1) degrees of freedom; the model-based Wald interval ignores that
sharing and covered only 0.90-0.93 with 4-5 members at 5-30 simulations.

Intervals. 95%: estimate +- t(0.975, S - 1) x clustered se of the centred rating,
printed from :data:`MIN_SIMS_INTERVAL` simulations per cell. ``benchmarks/bench_coverage.py``
rows "Bradley-Terry" simulate the grid's design (3 and 5 members; each cell's focal
payoff = strength + Gumbel noise, so the comparison is exactly Bradley-Terry while B's
self-play payoff is shared by every comparison against B in that simulation) and
measured, among datasets with a finite estimate, 0.95-0.97 at 3, 5, 10 and 30
simulations per cell (2000 datasets each; 0.97 with strengths far apart, where at 3-5
simulations a finite estimate exists in only 58-82% of datasets). With 2 simulations
the t quantile (12.7) makes the interval uninformative, so none is printed and
``ci_note`` says why. The benchmark has no ties; ties (equal payoffs, common with
deterministic policies and bounded scores) enter as half wins, a quasi-likelihood whose
interval that benchmark does not check. Conditions are never pooled: each
value of the ``by`` columns is its own fit, and a frame whose ``condition`` column
varies outside ``by`` is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

#: Simulations per cell from which a rating gets its interval (coverage: module docstring).
MIN_SIMS_INTERVAL = 3
#: The interval method (stated in each table's ``ci`` column).
CI_METHOD = ("95% Wald-t interval of the centred Bradley-Terry rating: se clustered by simulation, "
             "t quantile with simulations - 1 df (statsmodels GLM)")
#: Elo points per unit of log-odds (400 points: odds of 10 to 1).
ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: The columns a runs frame must carry (besides ``by``).
RUN_COLUMNS = ("focal_model", "background_model", "focal_payoff", "simulation")

__all__ = ["CI_METHOD", "ELO_PER_LOGIT", "MIN_SIMS_INTERVAL", "RatingError", "bradley_terry", "cells_by_simulation",
           "comparisons", "fit_bradley_terry", "no_population", "one_model_conditions", "ratings_result"]


class RatingError(ValueError):
    """Runs that cannot be rated or played as a population game (the cell, the
    simulation or the column is named)."""


def _cell(key: dict, f: str, b: str) -> str:
    cond = ", ".join(f"{k}={v}" for k, v in key.items())
    return f"cell focal {f} over background {b}" + (f" ({cond})" if cond else "")


def cells_by_simulation(runs: pl.DataFrame, *, by: Sequence[str] = ("condition",)) -> pl.DataFrame:
    """The checked core of every population statistic: one row per (condition, focal
    model, background model, simulation) with its focal payoff.

    Args:
        runs: :func:`scarce_lab.analysis.crossplay.focal_runs`' frame with a
            ``simulation`` column (the run seed's index, shared across compositions).
        by: the condition columns; each value is its own population.

    Returns:
        Columns ``*by, focal_model, background_model, simulation, focal_payoff``.

    Raises:
        RatingError: a missing column; a ``condition`` column varying outside ``by``
            (pooled conditions); a NaN or null payoff, or two runs of one cell and
            simulation (each named by cell and simulation).
    """
    need = {*RUN_COLUMNS, *by}
    if missing := sorted(need - set(runs.columns)):
        raise RatingError(f"cross-play runs lack column(s) {missing} (have {runs.columns}); "
                          "build them with the environment's crossplay_runs(..., simulations=True)")
    for c in ("condition", "base_condition"):
        if c in runs.columns and c not in by and runs[c].n_unique() > 1:
            raise RatingError(f"the runs hold {runs[c].n_unique()} values of {c!r} ({sorted(runs[c].unique())[:3]}) "
                              f"but by={list(by)}: ratings are per condition, never pooled (pass by=[{c!r}])")
    keys = [*by, "focal_model", "background_model", "simulation"]
    bad = runs.filter(pl.col("focal_payoff").is_null() | pl.col("focal_payoff").cast(pl.Float64).is_nan())
    if bad.height:
        r = bad.row(0, named=True)
        raise RatingError(f"{_cell({c: r[c] for c in by}, r['focal_model'], r['background_model'])}, simulation "
                          f"{r['simulation']}: the focal payoff is {r['focal_payoff']} (run {r.get('run_id')})")
    dup = runs.group_by(keys).agg(pl.len().alias("n")).filter(pl.col("n") > 1)
    if dup.height:
        r = dup.row(0, named=True)
        raise RatingError(f"{_cell({c: r[c] for c in by}, r['focal_model'], r['background_model'])}: {r['n']} runs "
                          f"of simulation {r['simulation']}; a cell has one run per simulation (load one grid)")
    return runs.select(*keys, pl.col("focal_payoff").cast(pl.Float64)).sort(keys)


def one_model_conditions(runs: pl.DataFrame, by: Sequence[str]) -> tuple[pl.DataFrame, list[str]]:
    """``runs`` without the conditions whose grid holds one model (no population to rate
    or play: nothing to compare), and those conditions as text (for the reading)."""
    if runs.is_empty():
        return runs, []
    both = pl.concat([runs.select(*by, pl.col("focal_model").alias("_m")),
                      runs.select(*by, pl.col("background_model").alias("_m"))])
    if not by:
        return (runs.clear(), ["all runs"]) if both["_m"].n_unique() < 2 else (runs, [])
    lone = both.group_by(list(by)).agg(pl.col("_m").n_unique().alias("_n")).filter(pl.col("_n") < 2).sort(list(by))
    text = [", ".join(f"{c}={r[c]}" for c in by) for r in lone.iter_rows(named=True)]
    return runs.join(lone.select(list(by)), on=list(by), how="anti", nulls_equal=True), text


def no_population(name: str, lone: list[str], conv: dict, stale: tuple[str, ...] = ()):
    """The finding of a grid in which every condition holds one model: a sentence, no table."""
    from .figures import NoFigure
    from .findings import Finding

    why = f"{name}: every condition holds one model ({'; '.join(lone) or 'no runs'}), so there is nothing to compare"
    return Finding(name, frame=None, reading=f"No table: {why}.", chart=NoFigure(why), convention=conv,
                   stale=(name, *stale))


def comparisons(runs: pl.DataFrame, *, by: Sequence[str] = ("condition",)) -> pl.DataFrame:
    """One row per invasion comparison (module docstring): F over background B in
    simulation s against B's self-play in simulation s.

    Returns:
        Columns ``*by, simulation, model, opponent, payoff, opponent_payoff, outcome``
        (``model`` = F, ``opponent`` = B; ``outcome`` 1 win, 0 loss, 0.5 tie).

    Raises:
        RatingError: as :func:`cells_by_simulation`; a cell F over B whose B self-play
            cell lacks that simulation (the missing cell and simulation named).
    """
    cells = cells_by_simulation(runs, by=by)
    selfp = (cells.filter(pl.col("focal_model") == pl.col("background_model"))
             .select(*by, pl.col("background_model"), "simulation", pl.col("focal_payoff").alias("opponent_payoff")))
    inv = cells.filter(pl.col("focal_model") != pl.col("background_model"))
    out = inv.join(selfp, on=[*by, "background_model", "simulation"], how="left", nulls_equal=True)
    lost = out.filter(pl.col("opponent_payoff").is_null())
    if lost.height:
        r = lost.row(0, named=True)
        raise RatingError(f"{_cell({c: r[c] for c in by}, r['background_model'], r['background_model'])} (self-play) "
                          f"has no run of simulation {r['simulation']}, which {r['focal_model']} over "
                          f"{r['background_model']} needs for its comparison: run the full grid")
    return (out.rename({"focal_model": "model", "background_model": "opponent", "focal_payoff": "payoff"})
            .with_columns(outcome=pl.when(pl.col("payoff") > pl.col("opponent_payoff")).then(1.0)
                          .when(pl.col("payoff") < pl.col("opponent_payoff")).then(0.0).otherwise(0.5))
            .select(*by, "simulation", "model", "opponent", "payoff", "opponent_payoff", "outcome"))


def _strongly_connected(n: int, i: np.ndarray, j: np.ndarray, y: np.ndarray) -> tuple[bool, list[int]]:
    """Whether the graph with an edge a -> b for each win or tie of a over b is strongly
    connected, and when not the members of a component that no edge enters (they
    never lose against the rest, which then never win against them)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    src = np.r_[i[y > 0], j[y < 1]]
    dst = np.r_[j[y > 0], i[y < 1]]
    g = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    k, labels = connected_components(g, directed=True, connection="strong")
    if k == 1:
        return True, []
    # a component no edge enters from outside: its members never lose (nor tie) against the rest
    entered = {int(labels[b]) for a, b in zip(src, dst, strict=True) if labels[a] != labels[b]}
    source = next(c for c in range(k) if c not in entered)
    return False, [int(m) for m in np.flatnonzero(labels == source)]


def fit_bradley_terry(n: int, i: Sequence[int], j: Sequence[int], y: Sequence[float],
                      groups: Sequence[int]) -> dict:
    """Maximum-likelihood Bradley-Terry ratings of ``n`` members from comparisons
    ``i[k]`` vs ``j[k]`` with outcome ``y[k]`` (1: i won, 0: j won, 0.5: tie), their
    standard errors clustered by ``groups[k]`` (the simulation).

    Returns:
        ``{"ok": True, "rating": array (n,), centred log-odds, "se": array (n,),
        "q": the t quantile (clusters - 1 df) of a 95% interval}``, or ``{"ok": False,
        "never_lose": [members], "reason": str}`` when no finite estimate exists (the
        comparison graph is not strongly connected).

    Raises:
        RatingError: fewer than 2 members or 2 clusters, a member index outside
            0..n-1, or an outcome outside {0, 0.5, 1}.
    """
    import warnings

    from scipy.stats import t as student_t
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM

    i, j, y, groups = np.asarray(i, int), np.asarray(j, int), np.asarray(y, float), np.asarray(groups)
    n_groups = len(np.unique(groups))
    if n < 2 or n_groups < 2:
        raise RatingError(f"a rating needs at least 2 members and 2 simulations, got {n} and {n_groups}")
    if len(i) and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
        raise RatingError(f"member index outside 0..{n - 1}")
    if not np.isin(y, (0.0, 0.5, 1.0)).all():
        raise RatingError(f"outcomes must be 0, 0.5 or 1, got {sorted(set(y.tolist()) - {0.0, 0.5, 1.0})[:3]}")
    ok, side = _strongly_connected(n, i, j, y)
    if not ok:
        return {"ok": False, "never_lose": side,
                "reason": "no finite maximum-likelihood rating: the comparison graph is not strongly connected "
                          "(Zermelo 1929; Ford 1957)"}
    x = np.zeros((len(y), n))
    x[np.arange(len(y)), i] += 1.0
    x[np.arange(len(y)), j] -= 1.0
    x = x[:, 1:]  # member 0 is the reference (rating 0) in the fit, centred below
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns about non-integer binomial outcomes (ties)
        res = GLM(y, x, family=Binomial()).fit(cov_type="cluster", cov_kwds={"groups": groups})
    beta = np.r_[0.0, res.params]
    cov = np.zeros((n, n))
    cov[1:, 1:] = res.cov_params()
    centre = np.eye(n) - 1.0 / n
    se = np.sqrt(np.clip(np.diag(centre @ cov @ centre.T), 0.0, None))
    return {"ok": True, "rating": centre @ beta, "se": se, "q": float(student_t.ppf(0.975, n_groups - 1))}


def bradley_terry(runs: pl.DataFrame, *, by: Sequence[str] = ("condition",)) -> pl.DataFrame:
    """Bradley-Terry ratings of every model of a cross-play grid, per condition
    (module docstring: the comparison, the fit, the interval and where it is printed).

    Args:
        runs: focal runs with ``simulation`` (:func:`cells_by_simulation`).
        by: the condition columns; each value is its own fit (never pooled).

    Returns:
        One row per condition x model: ``*by, model, rating`` (centred log-odds),
        ``elo`` (Elo points, centred on 0), ``se``, ``ci_low``, ``ci_high`` (log-odds;
        null below :data:`MIN_SIMS_INTERVAL` simulations or without a finite
        estimate), ``comparisons``, ``wins``, ``ties``, ``simulations`` (fewest per
        cell of the condition), ``ci``, ``ci_note`` (why there is no interval, or
        no rating). Without a finite estimate ``rating`` is null and ``ci_note``
        names the members that never lose (or never win) against the rest.

    Raises:
        RatingError: as :func:`comparisons`.
    """
    comp = comparisons(runs, by=by)
    cells = cells_by_simulation(runs, by=by)
    schema = {**{c: runs.schema[c] for c in by}, "model": pl.String, "rating": pl.Float64, "elo": pl.Float64,
              "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "comparisons": pl.Int64,
              "wins": pl.Float64, "ties": pl.Int64, "simulations": pl.Int64, "ci": pl.String, "ci_note": pl.String}
    rows = []
    groups = comp.group_by(list(by), maintain_order=True) if by else [((), comp)]
    for key, g in groups:
        cond = dict(zip(by, key, strict=True))
        models = sorted(set(g["model"]) | set(g["opponent"]))
        idx = {m: k for k, m in enumerate(models)}
        sub = cells
        for c, v in cond.items():
            sub = sub.filter(pl.col(c) == v)
        sims = int(sub.group_by("focal_model", "background_model").agg(pl.len().alias("n"))["n"].min())
        fit = fit_bradley_terry(len(models), [idx[m] for m in g["model"]], [idx[m] for m in g["opponent"]],
                                g["outcome"].to_list(), g["simulation"].to_list())
        for m in models:
            mine = g.filter(pl.col("model") == m)
            theirs = g.filter(pl.col("opponent") == m)
            wins = float(mine["outcome"].sum() + (1.0 - theirs["outcome"]).sum())
            ties = int((mine["outcome"] == 0.5).sum() + (theirs["outcome"] == 0.5).sum())
            row = {**cond, "model": m, "comparisons": mine.height + theirs.height, "wins": wins, "ties": ties,
                   "simulations": sims, "ci": CI_METHOD, "rating": None, "elo": None, "se": None, "ci_low": None,
                   "ci_high": None}
            if not fit["ok"]:
                side = ", ".join(models[k] for k in fit["never_lose"])
                rest = ", ".join(models[k] for k in range(len(models)) if k not in fit["never_lose"])
                row["ci_note"] = f"{fit['reason']}: {side} never lose against {rest}"
            else:
                r, s = float(fit["rating"][idx[m]]), float(fit["se"][idx[m]])
                row.update(rating=r, elo=ELO_PER_LOGIT * r, se=s)
                if sims >= MIN_SIMS_INTERVAL:
                    row.update(ci_low=r - fit["q"] * s, ci_high=r + fit["q"] * s, ci_note="")
                else:
                    row["ci_note"] = (f"{sims} simulation(s) per cell: no interval (the clustered interval is "
                                      f"checked to cover 95% from {MIN_SIMS_INTERVAL} simulations on)")
            rows.append(row)
    return pl.DataFrame(rows, schema=schema)


def ratings_result(runs: pl.DataFrame, *, by: Sequence[str] = ("condition",), payoff: str,
                   name: str = "crossplay_ratings", convention: dict | None = None):
    """:func:`bradley_terry` as a :class:`~scarce_lab.analysis.findings.Finding`: the
    frame (saved), a table per condition (shown: rating and Elo with interval, wins of
    comparisons), a chart (rating with its interval per model, one panel per
    condition) and a reading. ``payoff`` names the focal payoff compared (and its unit)."""
    from .crossplay import _short
    from .figures import markdown_table
    from .findings import Finding

    runs, lone = one_model_conditions(cells_by_simulation(runs, by=by), by)
    conv = {"unit": "simulation (comparisons clustered by it); conditions never pooled", "intervals": CI_METHOD,
            "interval_from": f"{MIN_SIMS_INTERVAL} simulations per cell",
            "comparison": "F over background B vs B's self-play, same simulation (invasion)", "payoff": payoff,
            **(convention or {})}
    if runs.is_empty():
        return no_population(name, lone, conv)
    table = bradley_terry(runs, by=by)

    def cell(r: dict) -> str:
        if r["rating"] is None:
            return "no finite rating"
        if r["ci_low"] is None:
            return f"{r['rating']:+.2f} (no interval)"
        return f"{r['rating']:+.2f} [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"

    shown = pl.DataFrame([{**{c: r[c] for c in by}, "model": _short(r["model"]), "rating (log-odds) [95% CI]": cell(r),
                           "Elo": "-" if r["elo"] is None else f"{r['elo']:+.0f}",
                           "wins / comparisons": f"{r['wins']:g} / {r['comparisons']}", "ties": r["ties"],
                           "simulations": r["simulations"]} for r in table.iter_rows(named=True)])
    reading = _ratings_reading(table, by, payoff) + (
        f" Left out (one model, nothing to compare): {'; '.join(lone)}." if lone else "")
    return Finding(name, frame=table, text=markdown_table(shown) if shown.height else None, reading=reading,
                   chart=_ratings_chart(table, by), convention=conv)


def _ratings_reading(table: pl.DataFrame, by: Sequence[str], payoff: str) -> str:
    from .crossplay import _short

    parts = []
    groups = table.group_by(list(by), maintain_order=True) if by else [((), table)]
    for key, g in groups:
        where = ", ".join(str(k) for k in key) or "all runs"
        rated = g.filter(pl.col("rating").is_not_null()).sort("rating", descending=True)
        if rated.is_empty():
            parts.append(f"{where}: no finite rating ({g['ci_note'][0]})")
            continue
        top = rated.row(0, named=True)
        sep = "" if top["ci_low"] is None else (
            f", interval [{top['ci_low']:+.2f}, {top['ci_high']:+.2f}]"
            + (" above 0" if top["ci_low"] > 0 else " spanning 0"))
        parts.append(f"{where}: {_short(top['model'])} rates highest ({top['rating']:+.2f} log-odds, "
                     f"{top['elo']:+.0f} Elo{sep}; {top['wins']:g} of {top['comparisons']} comparisons won)")
    return (f"Bradley-Terry ratings from invasion comparisons (a model over another's background against that "
            f"model's self-play in the same simulation, by {payoff}); centred log-odds, each interval 95% on its own "
            f"({CI_METHOD}; printed from {MIN_SIMS_INTERVAL} simulations per cell). " + "; ".join(parts) + ".")


def _ratings_chart(table: pl.DataFrame, by: Sequence[str]):
    import altair as alt

    from .crossplay import _short
    from .figures import REFERENCE, NoFigure, caption, titled

    df = table.filter(pl.col("rating").is_not_null())
    if df.is_empty():
        return NoFigure("ratings: no condition has a finite rating")
    df = df.with_columns(pl.col("model").map_elements(_short, return_dtype=pl.String).alias("member"))
    base = alt.Chart()
    y = alt.Y("member:N", title="model")
    x = alt.X("rating:Q", title="rating (centred log-odds of winning a comparison)", scale=alt.Scale(padding=8))
    tips = ["model", alt.Tooltip("rating:Q", format="+.2f"), alt.Tooltip("elo:Q", format="+.0f"),
            alt.Tooltip("ci_low:Q", format="+.2f"), alt.Tooltip("ci_high:Q", format="+.2f"), "wins", "comparisons",
            "ci_note"]
    pts = base.mark_point(filled=True, size=60).encode(x=x, y=y, tooltip=tips)
    bars = base.mark_rule().encode(x="ci_low:Q", x2="ci_high:Q", y=y)
    zero = base.mark_rule(color=REFERENCE, strokeDash=[4, 3]).encode(x=alt.datum(0.0))
    chart = alt.layer(zero, bars, pts, data=df.to_pandas()).properties(
        width=360, height=max(90, 22 * df["member"].n_unique()))
    if by and df[by[0]].n_unique() > 1:
        chart = chart.facet(row=alt.Row(f"{by[0]}:N", title=by[0]))
    lo, hi = int(df["simulations"].min()), int(df["simulations"].max())
    return titled(chart, "Bradley-Terry ratings from invasion comparisons", caption(
        "0: the population's mean", f"simulations per cell {lo}" + (f"-{hi}" if hi > lo else ""), "bars: " + CI_METHOD,
        f"no bar: fewer than {MIN_SIMS_INTERVAL} simulations"))

