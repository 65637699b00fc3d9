"""The population game of a cross-play grid: alpha-rank and the replicator dynamics'
rest points of the focal payoff matrix, with their stability over bootstrap resamples
of simulations (any environment; the environment packages build the runs frame).

The game. ``M[i, j]`` is the mean focal payoff of model i over background j (the
focal payoff matrix of :mod:`.crossplay`, one condition), read as the payoff of
strategy i against strategy j in a symmetric population game: the empirical game of
empirical game-theoretic analysis (Wellman 2006), as Melting Pot and the Concordia
contest read their focal/background scores. A SovSim focal seat is the leader, so
``M[i, j]`` is what a leader playing i earns among subordinates playing j: the game is
"which leader policy a population of would-be leaders drifts to", not a game of
symmetric seats.

Alpha-rank (Omidshafiei et al. 2019, "alpha-Rank: Multi-Agent Evaluation by
Evolution", Sci. Rep. 9:9937; the single-population model, its eqs. 3-5): states are
monomorphic populations of ``m`` individuals; a mutant tau arises in a population of
sigma with rate eta = 1 / (K - 1) and fixes with probability
rho = 1 / (1 + sum_{l=1}^{m-1} prod_{k=1}^{l} exp(-alpha (f_tau(k) - f_sigma(k)))),
where with k mutants f_tau(k) = ((k-1) M[tau,tau] + (m-k) M[tau,sigma]) / (m-1) and
f_sigma(k) = (k M[sigma,tau] + (m-k-1) M[sigma,sigma]) / (m-1) (rho = 1/m when the
two are equal for every k: neutral drift). The stationary distribution of that Markov
chain is each strategy's mass; the ranking orders it. Parameters: ``alpha`` (ranking
intensity) and ``population_size`` m. Here the payoffs are first divided by the
matrix's range (max - min), so one alpha means the same selection intensity in pool
units and in task scores (the paper applies alpha to raw payoffs and sweeps it); the
default alpha = 10 per range and m = 50 (the paper's examples use m = 50).

Replicator dynamics (Taylor and Jonker 1978): dx_i/dt = x_i ((M x)_i - x'Mx) on the
simplex. Rest points: for every support S, the solution of (M x)_i = v for i in S,
sum x = 1, x_S > 0 (a singular system is reported as degenerate, a continuum of rest
points). Stability: the eigenvalues of the Jacobian restricted to the simplex's
tangent space (x_i summing to 0): all real parts below 0, asymptotically stable;
one above 0, unstable; else the linearisation does not decide.

Uncertainty. Simulations are resampled with replacement, every cell of a simulation
together (the cells share the run seed: common random numbers); per resample the
matrix is recomputed and so are the ranking and the rest points. Reported: the share
of resamples in which each strategy has the largest alpha-rank mass, and the share in
which a rest point on the same support exists and is stable. These are stated as
bootstrap shares (how stable the answer is to which simulations were run), not as
coverage-checked intervals; with one simulation per cell there is nothing to resample
and no share is given.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from .ratings import (
    RatingError,
    cells_by_simulation,
    no_population,
    one_model_conditions,
    ratings_result,
)

#: Defaults of :func:`alpha_rank` (module docstring).
ALPHA, POPULATION_SIZE = 10.0, 50
#: Bootstrap resamples of simulations (module docstring).
N_BOOT = 500

__all__ = ["ALPHA", "N_BOOT", "POPULATION_SIZE", "PopulationGame", "alpha_rank", "fixation_probability",
           "population_game_frames", "population_game_result", "population_games", "rest_points"]


def fixation_probability(m: np.ndarray, resident: int, mutant: int, *, alpha: float, population_size: int) -> float:
    """rho: the chance one ``mutant`` fixes in a population of ``resident`` (module
    docstring; ``m`` already scaled). Computed in logs (a large alpha overflows the product)."""
    pop = population_size
    k = np.arange(1, pop)
    f_mut = ((k - 1) * m[mutant, mutant] + (pop - k) * m[mutant, resident]) / (pop - 1)
    f_res = (k * m[resident, mutant] + (pop - k - 1) * m[resident, resident]) / (pop - 1)
    d = f_mut - f_res
    if np.allclose(d, 0.0, atol=1e-12):
        return 1.0 / pop
    logs = np.r_[0.0, np.cumsum(-alpha * d)]
    top = logs.max()
    return float(np.exp(-(top + np.log(np.exp(logs - top).sum()))))


def alpha_rank(payoff: np.ndarray, *, alpha: float = ALPHA, population_size: int = POPULATION_SIZE) -> np.ndarray:
    """The single-population alpha-rank masses of the strategies of ``payoff``
    (``K x K``, row player's payoff; module docstring: the model, the range scaling).

    Returns:
        An array of ``K`` masses summing to 1.

    Raises:
        RatingError: a matrix that is not square, has fewer than 2 strategies or a
            non-finite entry; alpha < 0 or a population below 2.
    """
    p = np.asarray(payoff, float)
    if p.ndim != 2 or p.shape[0] != p.shape[1] or p.shape[0] < 2:
        raise RatingError(f"alpha-rank needs a square matrix of at least 2 strategies, got shape {p.shape}")
    if not np.isfinite(p).all():
        i, j = np.argwhere(~np.isfinite(p))[0]
        raise RatingError(f"alpha-rank: payoff[{i}, {j}] is {p[i, j]}")
    if alpha < 0 or population_size < 2:
        raise RatingError(f"alpha-rank needs alpha >= 0 and a population of at least 2, got {alpha}, {population_size}")
    span = float(p.max() - p.min())
    m = p / span if span > 0 else p
    n = p.shape[0]
    eta = 1.0 / (n - 1)
    c = np.zeros((n, n))
    for s, t in itertools.permutations(range(n), 2):
        c[s, t] = eta * fixation_probability(m, s, t, alpha=alpha, population_size=population_size)
    c[np.diag_indices(n)] = 1.0 - c.sum(axis=1)
    # pi C = pi, sum pi = 1: least squares on the stacked system (exact when the chain is irreducible)
    a = np.vstack([c.T - np.eye(n), np.ones(n)])
    pi, *_ = np.linalg.lstsq(a, np.r_[np.zeros(n), 1.0], rcond=None)
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def _jacobian(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    f = p @ x
    avg = x @ f
    return np.diag(f - avg) + x[:, None] * (p - (p.T @ x)[None, :] - f[None, :])


def rest_points(payoff: np.ndarray, *, tol: float = 1e-9) -> list[dict]:
    """Every rest point of the replicator dynamics of ``payoff`` (``K x K``) with its
    stability (module docstring).

    Returns:
        One dict per rest point: ``support`` (tuple of strategy indices), ``x`` (array
        of K shares), ``stability`` (``"stable"``, ``"unstable"``, ``"undecided"``
        (a zero real part) or ``"degenerate"`` (a continuum of rest points on that
        support; ``x`` is one of them)), ``max_real`` (the largest real part of the
        tangent-space eigenvalues, payoff units per unit time).
    """
    from scipy.linalg import null_space

    p = np.asarray(payoff, float)
    n = p.shape[0]
    scale = max(float(np.abs(p).max()), 1.0)
    basis = null_space(np.ones((1, n)))
    out = []
    for size in range(1, n + 1):
        for sup in itertools.combinations(range(n), size):
            s = list(sup)
            a = np.zeros((size + 1, size + 1))
            a[:size, :size] = p[np.ix_(s, s)]
            a[:size, size] = -1.0
            a[size, :size] = 1.0
            rhs = np.r_[np.zeros(size), 1.0]
            sol, _, rank, _ = np.linalg.lstsq(a, rhs, rcond=None)
            if np.abs(a @ sol - rhs).max() > tol * scale:
                continue
            x = np.zeros(n)
            x[s] = sol[:size]
            if (x[s] <= tol).any():
                continue
            if rank < size + 1:
                out.append({"support": sup, "x": x, "stability": "degenerate", "max_real": float("nan")})
                continue
            eig = np.linalg.eigvals(basis.T @ _jacobian(p, x) @ basis)
            top = float(eig.real.max())
            kind = "stable" if top < -tol * scale else "unstable" if top > tol * scale else "undecided"
            out.append({"support": sup, "x": x, "stability": kind, "max_real": top})
    return out


@dataclass(frozen=True)
class PopulationGame:
    """One condition's population game: ``key`` (the condition), ``models`` (K names),
    ``payoff`` (``K x K`` means over simulations), ``per_simulation`` (``S x K x K``),
    ``simulations`` (S labels), the alpha-rank masses and rest points, and the
    bootstrap shares (None with one simulation)."""

    key: dict
    models: list[str]
    payoff: np.ndarray
    per_simulation: np.ndarray
    simulations: list
    mass: np.ndarray
    points: list[dict]
    top_share: np.ndarray | None
    point_shares: list[tuple[float, float]] | None


def _games_matrices(runs: pl.DataFrame, by: Sequence[str]):
    cells = cells_by_simulation(runs, by=by)
    groups = cells.group_by(list(by), maintain_order=True) if by else [((), cells)]
    for key, g in groups:
        cond = dict(zip(by, key, strict=True))
        models = sorted(set(g["focal_model"]) | set(g["background_model"]))
        sims = sorted(set(g["simulation"]))
        where = f" ({', '.join(f'{k}={v}' for k, v in cond.items())})" if cond else ""
        if len(models) < 2:
            raise RatingError(f"the grid{where} holds one model ({models[0]}): a population game needs two")
        got = {(r["focal_model"], r["background_model"]): r["s"] for r in
               g.group_by("focal_model", "background_model").agg(pl.col("simulation").sort().alias("s"))
               .iter_rows(named=True)}
        for f, b in itertools.product(models, models):
            if (f, b) not in got:
                raise RatingError(f"cell focal {f} over background {b}{where} has no run: the population game needs "
                                  f"every cell of the {len(models)} x {len(models)} grid")
            if list(got[(f, b)]) != sims:
                raise RatingError(f"cell focal {f} over background {b}{where} has simulations {list(got[(f, b)])}, "
                                  f"the grid {sims}: resampling simulations needs every cell at every simulation")
        idx = {m: k for k, m in enumerate(models)}
        sidx = {s: k for k, s in enumerate(sims)}
        per = np.zeros((len(sims), len(models), len(models)))
        for r in g.iter_rows(named=True):
            per[sidx[r["simulation"]], idx[r["focal_model"]], idx[r["background_model"]]] = r["focal_payoff"]
        yield cond, models, sims, per


def population_games(runs: pl.DataFrame, *, by: Sequence[str] = ("condition",), alpha: float = ALPHA,
                     population_size: int = POPULATION_SIZE, n_boot: int = N_BOOT, seed: int = 0) -> list[PopulationGame]:
    """The population game of each condition of ``runs`` (focal runs with a
    ``simulation`` column): alpha-rank masses, replicator rest points and the bootstrap
    shares over resampled simulations (module docstring).

    Raises:
        RatingError: as :func:`scarce_lab.analysis.ratings.cells_by_simulation`; a cell
            of the grid without runs, or whose simulations differ from the others' (named);
            ``n_boot`` below 1; as :func:`alpha_rank` (alpha, population size).
    """
    if n_boot < 1:
        raise RatingError(f"n_boot must be at least 1, got {n_boot}")
    out = []
    for cond, models, sims, per in _games_matrices(runs, by):
        mean = per.mean(axis=0)
        mass = alpha_rank(mean, alpha=alpha, population_size=population_size)
        points = rest_points(mean)
        top = shares = None
        if len(sims) > 1:
            rng = np.random.default_rng(seed)
            top = np.zeros(len(models))
            hits = np.zeros((len(points), 2))
            for _ in range(n_boot):
                m_b = per[rng.integers(0, len(sims), len(sims))].mean(axis=0)
                mass_b = alpha_rank(m_b, alpha=alpha, population_size=population_size)
                best = np.flatnonzero(np.isclose(mass_b, mass_b.max(), rtol=1e-9, atol=1e-12))
                top[best] += 1.0 / len(best)
                found = {q["support"]: q["stability"] for q in rest_points(m_b)}
                for k, q in enumerate(points):
                    hits[k] += (q["support"] in found, found.get(q["support"]) == "stable")
            top /= n_boot
            shares = [(float(h[0] / n_boot), float(h[1] / n_boot)) for h in hits]
        out.append(PopulationGame(cond, models, mean, per, sims, mass, points, top, shares))
    return out


def _support_text(models: list[str], x: np.ndarray) -> str:
    from .crossplay import _short

    return " + ".join(f"{x[k]:.2f} {_short(models[k])}" for k in np.flatnonzero(x > 0))


def population_game_frames(games: list[PopulationGame], by: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The alpha-rank frame (``*by, model, mass, rank, top_share, simulations``) and the
    rest-point frame (``*by, rest_point, stability, max_real, exists_share, stable_share,
    simulations``) of :func:`population_games`; shares are null with one simulation."""
    ranks, points = [], []
    for g in games:
        order = np.argsort(-g.mass, kind="stable")
        for rank, k in enumerate(order, start=1):
            ranks.append({**g.key, "model": g.models[k], "mass": float(g.mass[k]), "rank": rank,
                          "top_share": None if g.top_share is None else float(g.top_share[k]),
                          "simulations": len(g.simulations)})
        for q, sh in zip(g.points, g.point_shares or [(None, None)] * len(g.points), strict=True):
            points.append({**g.key, "rest_point": _support_text(g.models, q["x"]), "stability": q["stability"],
                           "max_real": q["max_real"], "exists_share": sh[0], "stable_share": sh[1],
                           "simulations": len(g.simulations)})
    keys = {c: pl.String for c in by}
    rank_schema = {**keys, "model": pl.String, "mass": pl.Float64, "rank": pl.Int64, "top_share": pl.Float64,
                   "simulations": pl.Int64}
    point_schema = {**keys, "rest_point": pl.String, "stability": pl.String, "max_real": pl.Float64,
                    "exists_share": pl.Float64, "stable_share": pl.Float64, "simulations": pl.Int64}
    return pl.DataFrame(ranks, schema=rank_schema), pl.DataFrame(points, schema=point_schema)


def population_game_result(runs: pl.DataFrame, *, by: Sequence[str] = ("condition",), payoff: str,
                           name: str = "crossplay_population_game", alpha: float = ALPHA,
                           population_size: int = POPULATION_SIZE, n_boot: int = N_BOOT, seed: int = 0,
                           convention: dict | None = None):
    """:func:`population_games` as a :class:`~scarce_lab.analysis.findings.Finding`: the
    alpha-rank frame (saved as ``name``), the rest points (saved as ``<name>_rest_points``),
    both shown as tables, a chart of the alpha-rank masses and a reading."""
    from .crossplay import _short
    from .figures import markdown_table
    from .findings import Finding

    runs, lone = one_model_conditions(cells_by_simulation(runs, by=by), by)
    conv = {"game": "focal payoff matrix as a symmetric population game (row: focal model, column: background)",
            "alpha_rank": f"single population, alpha={alpha:g} per payoff range, m={population_size} "
                          "(Omidshafiei et al. 2019)",
            "rest_points": "replicator dynamics; stability from tangent-space Jacobian eigenvalues",
            "uncertainty": f"shares over {n_boot} bootstrap resamples of simulations (not coverage-checked intervals)",
            "payoff": payoff, **(convention or {})}
    if runs.is_empty():
        return no_population(name, lone, conv, stale=(f"{name}_rest_points",))
    games = population_games(runs, by=by, alpha=alpha, population_size=population_size, n_boot=n_boot, seed=seed)
    ranks, points = population_game_frames(games, by)

    def share(v: float | None) -> str:
        return "-" if v is None else f"{v:.0%}"

    shown_r = pl.DataFrame([{**{c: r[c] for c in by}, "model": _short(r["model"]), "alpha-rank mass": f"{r['mass']:.3f}",
                             "rank": r["rank"], "tops in resamples": share(r["top_share"])}
                            for r in ranks.iter_rows(named=True)])
    shown_p = pl.DataFrame([{**{c: r[c] for c in by}, "rest point (shares)": r["rest_point"],
                             "stability": r["stability"], "largest eigenvalue (real part)": f"{r['max_real']:.3g}",
                             "exists in resamples": share(r["exists_share"]),
                             "stable in resamples": share(r["stable_share"])} for r in points.iter_rows(named=True)])
    text = markdown_table(shown_r) + "\n\n" + markdown_table(shown_p) if ranks.height else None
    parts = []
    for g in games:
        where = ", ".join(str(v) for v in g.key.values()) or "all runs"
        top = int(np.argmax(g.mass))
        stable = [_support_text(g.models, q["x"]) for q in g.points if q["stability"] == "stable"]
        boot = ("one simulation: nothing to resample" if g.top_share is None
                else f"it tops {g.top_share[top]:.0%} of resamples")
        parts.append(f"{where}: alpha-rank puts {g.mass[top]:.2f} of its mass on {_short(g.models[top])} ({boot}); "
                     f"stable rest points: {'; '.join(stable) or 'none'}")
    reading = ("The focal payoff matrix as a population game: alpha-rank's stationary mass (single population, "
               f"alpha {alpha:g} per payoff range, population {population_size}) and the replicator dynamics' stable "
               "rest points. " + ". ".join(parts) + ". The shares are bootstrap shares over simulations: how much the "
               "answer depends on which simulations were run, not intervals with a checked coverage."
               + (f" Left out (one model, nothing to compare): {'; '.join(lone)}." if lone else ""))
    return Finding(name, frame=ranks, text=text, reading=reading, chart=_mass_chart(ranks, by),
                   extra={f"{name}_rest_points": points}, convention=conv)


def _mass_chart(ranks: pl.DataFrame, by: Sequence[str]):
    import altair as alt

    from .crossplay import _short
    from .figures import NoFigure, caption, titled

    if ranks.is_empty():
        return NoFigure("population game: no condition")
    df = ranks.with_columns(pl.col("model").map_elements(_short, return_dtype=pl.String).alias("member"))
    shares = df["top_share"].null_count() < df.height
    what = {"mass": "alpha-rank mass", "top_share": "share of resamples it tops"}
    long = df.unpivot(index=[*by, "member", "model"], on=["mass", "top_share"] if shares else ["mass"],
                      variable_name="quantity", value_name="value").with_columns(
        pl.col("quantity").replace_strict(what, return_dtype=pl.String))
    tips = ["model", "quantity", alt.Tooltip("value:Q", format=".3f")]
    chart = alt.Chart(long.to_pandas()).mark_bar().encode(
        x=alt.X("value:Q", title="alpha-rank stationary mass; share of bootstrap resamples", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("member:N", title="model"), color=alt.Color("quantity:N", title=None), yOffset="quantity:N",
        tooltip=tips).properties(width=360, height=max(90, (32 if shares else 22) * df["member"].n_unique()))
    if by and df[by[0]].n_unique() > 1:
        chart = chart.facet(row=alt.Row(f"{by[0]}:N", title=by[0]))
    return titled(chart, "The population game: alpha-rank mass", caption(
        "single-population alpha-rank of the focal payoff matrix", f"simulations per cell {int(df['simulations'].min())}",
        "share: bootstrap resamples of simulations in which the model has the largest mass (none with one simulation)"))


#: The two readings of a cross-play grid :func:`crossplay_ranking` gives.
RANKING_METHODS = ("bradley-terry", "population-game")


def crossplay_ranking(runs: pl.DataFrame, *, method: str, by: Sequence[str], payoff: str, name: str,
                      convention: dict | None = None, **game: float | int | None):
    """Who ranks highest in a cross-play grid, read one of two ways (the environments'
    ``crossplay_ratings``): ``method="bradley-terry"``,
    :func:`~scarce_lab.analysis.ratings.ratings_result` (ratings with intervals, finding ``<name>_ratings``); ``method="population-game"``,
    :func:`population_game_result` (alpha-rank and
    replicator rest points with bootstrap shares, finding ``<name>_population_game``),
    whose settings ``alpha``, ``population_size``, ``n_boot``, ``seed`` are ``game``
    (``None``: its defaults).

    Raises:
        ValueError: an unknown ``method`` (the methods are named), or a population-game
            setting given with ``bradley-terry`` (it would be ignored).
    """
    given = {k: v for k, v in game.items() if v is not None}
    if method == "bradley-terry":
        if given:
            raise ValueError(f"method='bradley-terry' takes no {', '.join(sorted(given))} (settings of "
                             "method='population-game')")
        return ratings_result(runs, by=by, payoff=payoff, name=f"{name}_ratings", convention=convention)
    if method == "population-game":
        used = {"alpha": ALPHA, "population_size": POPULATION_SIZE, "n_boot": N_BOOT, "seed": 0} | given
        found = population_game_result(runs, by=by, payoff=payoff, name=f"{name}_population_game",
                                       convention=convention, **used)
        conv = found.convention if isinstance(found.convention, dict) else {}
        return found.with_(convention=conv | {"parameters": {**conv.get("parameters", {}), **used}})
    raise ValueError(f"method {method!r}: one of {', '.join(RANKING_METHODS)}")
