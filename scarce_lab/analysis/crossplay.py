"""Cross-play analysis: focal payoffs, the invader's advantage, and choices against
uniform (any environment; the environment packages build the inputs).

Melting Pot's focal/background protocol (Leibo et al. 2021): in each run the *focal*
seats play one model (or policy) and the *background* seats another; a run whose
focal seats, or whose background seats, play more than one model is not such a
composition and is refused (named), never assigned to a cell.

Size: the three cross-play statistics share their inputs, refusals and readings here
(each environment's cross-play module only builds the frames).

Inputs are tidy frames:

- ``per_agent``: one row per (run, agent): ``run_id``, ``agent``, ``model`` (the
  agent's model as its run's manifest records it), ``payoff`` (the environment's
  per-agent payoff of the whole run), optional ``role`` and ``aliases`` (a list of
  other names of the seat, e.g. ``leader``), optional ``seat_settings``
  (the seat's other condition settings as text: a model that plays with two settings
  is refused, never pooled in one cell), and the condition columns
  named by ``by`` (every condition-defining setting except the composition: the
  composition is the cell).
- ``choices`` (:func:`choice_vs_uniform`): one row per choice (a ballot's first
  place, a message's recipient): the chooser's model, the chosen agent's model and
  the chance that a uniform choice among the same options picks that model.

Statistics. Runs are the unit: each run gives one focal payoff, one resident payoff
and their paired difference. Means get a Student-t interval over runs
(:func:`scarce_lab.analysis.stats.mean_ci`; :data:`CI_METHOD`), printed from
:data:`MIN_RUNS_INTERVAL` runs with spread: the coverage benchmark
(``benchmarks/bench_coverage.py``, rows "t over runs") measured 0.93-0.95 at 3-30
runs for per-run means and 0.92-0.93 at 3-10 runs for a mean with a mass at a bound;
below 2 runs, or when every run gave the same value, a cell has no interval and says
why (``ci_note``). A payoff with known bounds (a SCARCE task score in 0..1) passes
``bounds``: its cells then get :func:`scarce_lab.analysis.stats.bounded_mean_ci`
(:data:`BOUNDED_CI_METHOD`: the t/score hull clipped to the bounds, so an interval never
claims a score below 0 or above 1; the benchmark's rows "bounded": at least 98.7% at
2-30 runs), and a paired difference of such payoffs the bounds ``(low - high, high - low)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from ..undefined import reason_of
from .stats import bounded_mean_ci, mean_ci

#: How every interval of this module is computed (stated in each table's ``ci`` column).
CI_METHOD = "95% Student-t interval over runs (stats.mean_ci); the run is the unit"
#: The method of a payoff with known bounds (``bounds=``): the interval stays inside them.
BOUNDED_CI_METHOD = ("95% bounded interval over runs (stats.bounded_mean_ci: t/score hull clipped to "
                     "the bounds); the run is the unit")
#: Runs from which a cell prints an interval (with fewer: none, and ``ci_note`` says why).
MIN_RUNS_INTERVAL = 2

__all__ = [
    "BOUNDED_CI_METHOD", "CI_METHOD", "COMPOSITION_KEYS", "MIN_RUNS_INTERVAL", "CompositionError", "complete_runs",
    "condition_without_composition", "advantage_result", "choice_vs_uniform", "choices_result",
    "focal_payoff_matrix", "focal_runs", "invader_advantage", "matrix_result", "payoff_matrix_chart",
]


#: Condition settings that are the composition (the cell), not the condition.
COMPOSITION_KEYS = ("composition", "seats")


def condition_without_composition(settings: dict[str, Any]) -> dict[str, Any]:
    """A run's condition settings minus the composition keys (any environment)."""
    return {k: v for k, v in settings.items() if k.split(".", 1)[0] not in COMPOSITION_KEYS}


def complete_runs(ds: Any, environment: str) -> list[Any]:
    """The manifests of ``ds``'s complete runs of ``environment``; the others (running,
    failed, interrupted: a payoff over part of a run is not the run's) are left out
    with a warning that counts them."""
    import warnings

    runs = [m for m in ds.manifests if m.environment == environment]
    done = [m for m in runs if m.status == "complete"]
    if len(done) < len(runs):
        left = sorted(m.run_id for m in runs if m.status != "complete")
        warnings.warn(f"cross-play: {len(left)} of {len(runs)} {environment} runs are not complete and are left "
                      f"out (e.g. {left[0]})", UserWarning, stacklevel=3)
    return done


class CompositionError(ValueError):
    """A run that is not a focal/background composition, or a focal seat it lacks
    (the run and the models are named)."""


def _ci_row(values: list[float], bounds: tuple[float, float] | None = None) -> dict:
    """``mean, ci_low, ci_high, n_runs, ci_note`` of per-run ``values``; with ``bounds``
    the interval is :func:`~scarce_lab.analysis.stats.bounded_mean_ci`'s (a value outside
    the bounds raises ``ValueError`` naming it)."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(vals)
    if n == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n_runs": 0, "ci_note": "no runs"}
    m, lo, hi = mean_ci(vals) if bounds is None else bounded_mean_ci(vals, *bounds)
    if n < MIN_RUNS_INTERVAL or math.isnan(lo):
        why = reason_of(lo) or "no interval"
        note = f"{n} run: no interval (an interval needs {MIN_RUNS_INTERVAL} runs)" if n < MIN_RUNS_INTERVAL \
            else f"{n} runs: no interval ({why})"
        return {"mean": m, "ci_low": None, "ci_high": None, "n_runs": n, "ci_note": note}
    return {"mean": m, "ci_low": lo, "ci_high": hi, "n_runs": n, "ci_note": ""}


def dataset(data: Any) -> Any:
    """``data`` as a Dataset: a path is loaded (:func:`scarce_lab.data.loaders.load_dataset`)."""
    from pathlib import Path

    if isinstance(data, str | Path):
        from ..data.loaders import load_dataset

        return load_dataset(data)
    return data


def one_run_payoffs(per_agent: pl.DataFrame, run_dir: Any, game: str) -> dict[str, float]:
    """``{agent: payoff}`` of the one complete run whose per-agent rows (columns
    ``run_id``, ``agent``, ``payoff``) are ``per_agent``: an environment's
    ``seat_payoffs`` (:attr:`scarce_lab.registry.EnvironmentSpec.seat_payoffs`).

    Raises:
        ValueError: ``run_dir`` holds no complete ``game`` or more than one.
    """
    runs = per_agent["run_id"].unique().to_list()
    if len(runs) != 1:
        raise ValueError(f"{run_dir}: expected one complete {game}, found {len(runs)}")
    return {r["agent"]: float(r["payoff"]) for r in per_agent.iter_rows(named=True)}


def focal_runs(per_agent: pl.DataFrame, focal: Sequence[str] | str, *, by: Sequence[str] = ()) -> pl.DataFrame:
    """One row per run: the focal and background models, the focal payoff (mean over
    the focal agents), the residents' payoff (mean over the background agents) and
    ``advantage`` = focal - resident (the run's paired difference).

    Args:
        per_agent: see the module docstring.
        focal: the focal seats: agent ids (``a3``, ``w0``), roles (``king``) or
            aliases (``leader``), or ``"a0,a1"``; an agent is focal when its id, role
            or an alias is listed.
        by: condition columns kept (constant within a run).

    Returns:
        Columns ``run_id, *by, focal_model, background_model, focal_agents,
        focal_payoff, resident_payoff, advantage``, sorted by run id.

    Raises:
        CompositionError: a run without a focal agent or without a background agent,
            or whose focal (or background) agents play several models (named).
        ValueError: a missing column (named).
    """
    keys = [k.strip() for k in (focal.split(",") if isinstance(focal, str) else focal) if k.strip()]
    if not keys:
        raise ValueError(f"focal: name at least one seat (agent id or role), got {focal!r}")
    need = {"run_id", "agent", "model", "payoff", *by}
    if missing := sorted(need - set(per_agent.columns)):
        raise ValueError(f"focal_runs: per-agent frame lacks column(s) {missing} (has {per_agent.columns})")
    if "seat_settings" in per_agent.columns:
        _one_setting_per_model(per_agent)
    is_focal = pl.col("agent").is_in(keys)
    if "role" in per_agent.columns:
        is_focal = is_focal | pl.col("role").is_in(keys)
    if "aliases" in per_agent.columns:
        is_focal = is_focal | pl.col("aliases").list.eval(pl.element().is_in(keys)).list.any()
    df = per_agent.with_columns(is_focal.alias("_focal"))
    rows = []
    for (run_id,), g in df.group_by(["run_id"], maintain_order=True):
        f, b = g.filter(pl.col("_focal")), g.filter(~pl.col("_focal"))
        if f.is_empty():
            raise CompositionError(f"run {run_id}: no agent is focal seat {keys} (agents {sorted(g['agent'])})")
        if b.is_empty():
            raise CompositionError(f"run {run_id}: every agent is a focal seat {keys}: no background")
        fm, bm = sorted(set(f["model"])), sorted(set(b["model"]))
        if len(fm) != 1 or len(bm) != 1:
            raise CompositionError(f"run {run_id}: not a focal/background composition (focal seats {sorted(f['agent'])} "
                                   f"play {fm}, the others {bm}); choose the focal seats the grid used")
        row = {"run_id": run_id, **{c: g[c][0] for c in by}, "focal_model": fm[0], "background_model": bm[0],
               "focal_agents": "+".join(sorted(f["agent"])),
               "focal_payoff": float(f["payoff"].mean()), "resident_payoff": float(b["payoff"].mean())}
        row["advantage"] = row["focal_payoff"] - row["resident_payoff"]
        rows.append(row)
    return pl.DataFrame(rows).sort("run_id")


def _one_setting_per_model(per_agent: pl.DataFrame) -> None:
    """Refuse a model that plays with two different seat settings in the data (its
    cells would pool them: a cell is named by the model)."""
    from .pooling import PoolingError

    seen = per_agent.group_by("model").agg(pl.col("seat_settings").unique().sort(), pl.col("run_id").first())
    for r in seen.iter_rows(named=True):
        if len(r["seat_settings"]) > 1:
            raise PoolingError(f"model {r['model']!r} plays with different seat settings in these runs "
                               f"({r['seat_settings'][:2]}): load the runs of each setting separately; "
                               "a cross-play cell never pools settings")


def focal_payoff_matrix(runs: pl.DataFrame, *, by: Sequence[str] = (),
                        bounds: tuple[float, float] | None = None) -> pl.DataFrame:
    """The focal payoff matrix: per condition (``by``), focal model x background
    model: the mean focal payoff over runs with its interval (:data:`CI_METHOD`, or
    :data:`BOUNDED_CI_METHOD` when the payoff has ``bounds``).

    Args:
        runs: :func:`focal_runs`' frame.
        bounds: ``(low, high)`` of the payoff when it has known bounds (e.g. a score in 0..1).

    Returns:
        Columns ``*by, focal_model, background_model, n_runs, mean, ci_low, ci_high,
        ci, ci_note`` (``ci_low``/``ci_high`` null with ``ci_note`` saying why).
    """
    return _cells(runs, "focal_payoff", by, bounds)


def invader_advantage(runs: pl.DataFrame, *, by: Sequence[str] = (), include_self_play: bool = False,
                      bounds: tuple[float, float] | None = None) -> pl.DataFrame:
    """One invader among residents: per condition, focal model x background model,
    the mean over runs of (focal payoff - the residents' payoff in the same run), with
    its interval (:data:`CI_METHOD`, on the paired per-run differences). Self-play
    cells (focal model = background model) are left out unless
    ``include_self_play`` (there the difference is a seat effect, not an invasion).
    ``bounds``: the payoff's ``(low, high)``; the difference then lies in
    ``(low - high, high - low)`` and gets :data:`BOUNDED_CI_METHOD`.

    Returns:
        Columns ``*by, focal_model, background_model, n_runs, mean, ci_low, ci_high,
        ci, ci_note`` (``mean``: the advantage, payoff units).
    """
    if not include_self_play:
        runs = runs.filter(pl.col("focal_model") != pl.col("background_model"))
    diff = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
    return _cells(runs, "advantage", by, diff)


def _cells(runs: pl.DataFrame, value: str, by: Sequence[str],
           bounds: tuple[float, float] | None = None) -> pl.DataFrame:
    keys = [*by, "focal_model", "background_model"]
    schema = {**{c: runs.schema[c] for c in by if c in runs.columns}, "focal_model": pl.String,
              "background_model": pl.String, "n_runs": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "ci": pl.String, "ci_note": pl.String}
    if runs.is_empty():
        return pl.DataFrame(schema=schema)
    rows = [{**dict(zip(keys, key, strict=True)), **_ci_row(g[value].to_list(), bounds),
             "ci": CI_METHOD if bounds is None else BOUNDED_CI_METHOD}
            for key, g in runs.group_by(keys, maintain_order=True)]
    return pl.DataFrame(rows, schema=schema).sort(keys)


def choice_vs_uniform(choices: pl.DataFrame) -> pl.DataFrame:
    """Who picks whom, by model, against a uniform choice among the same options.

    Args:
        choices: one row per choice: ``run_id``, ``chooser_model``, ``chosen_model``
            (the model of the option that was picked, per option model) and
            ``expected`` (the chance a uniform pick among that choice's options gives
            an option of ``chosen_model``) and ``picked`` (1 when the choice went to
            ``chosen_model``, else 0): one row per (choice, option model).

    Returns:
        Per ``chooser_model, chosen_model``: ``choices`` (the chooser's choices that
        had an option of that model), ``observed`` (how many went to it), ``expected``
        (the uniform count), ``excess_share`` = (observed - expected) / choices, and
        its interval over runs (per-run excess shares, :data:`CI_METHOD`); ``runs``.
        Positive: the chooser's model picks that model more than chance.
    """
    need = {"run_id", "chooser_model", "chosen_model", "expected", "picked"}
    if missing := sorted(need - set(choices.columns)):
        raise ValueError(f"choice_vs_uniform: choices frame lacks column(s) {missing}")
    schema = {"chooser_model": pl.String, "chosen_model": pl.String, "choices": pl.Int64, "observed": pl.Int64,
              "expected": pl.Float64, "excess_share": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "runs": pl.Int64, "ci": pl.String, "ci_note": pl.String}
    if choices.is_empty():
        return pl.DataFrame(schema=schema)
    per_run = (choices.group_by(["chooser_model", "chosen_model", "run_id"])
               .agg(pl.len().alias("n"), pl.col("picked").sum().alias("obs"), pl.col("expected").sum().alias("exp"))
               .with_columns(((pl.col("obs") - pl.col("exp")) / pl.col("n")).alias("excess"))
               .sort("chooser_model", "chosen_model", "run_id"))  # one order of the runs: the same sums every call
    rows = []
    for (cm, om), g in per_run.group_by(["chooser_model", "chosen_model"], maintain_order=True):
        n, obs, exp = int(g["n"].sum()), int(g["obs"].sum()), float(g["exp"].sum())
        c = _ci_row(g["excess"].to_list())
        rows.append({"chooser_model": cm, "chosen_model": om, "choices": n, "observed": obs, "expected": exp,
                     "excess_share": (obs - exp) / n, "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                     "runs": c["n_runs"], "ci": CI_METHOD + " of per-run excess shares", "ci_note": c["ci_note"]})
    return pl.DataFrame(rows, schema=schema).sort(["chooser_model", "chosen_model"])


#: Height of one (focal model, background model) line of a cross-play chart (px), and
#: the least height of a panel (so its y title, "focal model", fits beside one line).
ROW_PX, MIN_PANEL_PX = 16, 90


def _panel_height(df: pl.DataFrame, y: str, offset: str, facet: str | None) -> int:
    """Pixels of one panel: a line per (y, offset) pair of the fullest panel, at least
    :data:`MIN_PANEL_PX` (alt.Step with yOffset gave a 28 px panel for one focal model,
    whose y title then ran over the chart title)."""
    groups = [facet] if facet else []
    per = df.group_by(groups).agg(pl.col(y).n_unique().alias("y"), pl.col(offset).n_unique().alias("o")) \
        if groups else pl.DataFrame({"y": [df[y].n_unique()], "o": [df[offset].n_unique()]})
    lines = int((per["y"] * per["o"]).max() or 1)
    return max(MIN_PANEL_PX, ROW_PX * lines)


def _method(frame: pl.DataFrame) -> str:
    """The interval method the frame's ``ci`` column states (one), or :data:`CI_METHOD`."""
    methods = sorted(set(frame["ci"].drop_nulls())) if "ci" in frame.columns else []
    if len(methods) > 1:
        raise ValueError(f"cross-play frame mixes interval methods {methods}")
    return methods[0] if methods else CI_METHOD


def payoff_matrix_chart(matrix: pl.DataFrame, *, title: str, value_label: str, facet: str | None = None):
    """Points with interval bars: the mean per focal model (y), coloured by the
    background model, faceted by ``facet`` when given; a cell without an interval is
    drawn as a point only (its ``ci_note`` is in the tooltip). The caption states the
    interval method of the frame's ``ci`` column.

    Returns:
        A titled altair chart, or a :class:`~scarce_lab.analysis.figures.NoFigure`.
    """
    import altair as alt

    from .figures import caption, titled

    df = matrix.filter(pl.col("mean").is_not_null())
    if df.is_empty():
        from .figures import NoFigure

        return NoFigure(f"{title}: no cell has a mean")
    df = df.with_columns(pl.col("focal_model").map_elements(_short, return_dtype=pl.String).alias("focal"),
                         pl.col("background_model").map_elements(_short, return_dtype=pl.String).alias("background"))
    base = alt.Chart(df.to_pandas())
    y = alt.Y("focal:N", title="focal model")
    colour = alt.Color("background:N", title="background model")
    tips = ["focal_model", "background_model", "n_runs", alt.Tooltip("mean:Q", format=".2f"),
            alt.Tooltip("ci_low:Q", format=".2f"), alt.Tooltip("ci_high:Q", format=".2f"), "ci_note"]
    x = alt.X("mean:Q", title=value_label, scale=alt.Scale(padding=8))  # a point at a bound is drawn whole
    points = base.mark_point(filled=True, size=60).encode(x=x, y=y, color=colour, yOffset="background:N",
                                                          tooltip=tips)
    bars = base.mark_rule().encode(x="ci_low:Q", x2="ci_high:Q", y=y, color=colour, yOffset="background:N")
    chart = (bars + points).properties(width=360, height=_panel_height(df, "focal", "background", facet))
    if facet:
        chart = chart.facet(row=alt.Row(f"{facet}:N", title=facet,
                                        header=alt.Header(labelFontSize=12, titleFontSize=11)))
    n = int(df["n_runs"].min()), int(df["n_runs"].max())
    return titled(chart, title, caption(f"runs per cell {n[0]}-{n[1]}", "bars: " + _method(df),
                                        "no bar: fewer than 2 runs or no spread"))


def _short(model: str) -> str:
    return str(model).rsplit("/", 1)[-1]


def _cell_text(r: dict, digits: int = 2) -> str:
    """``mean [low, high] (n=k)``; without an interval it says why (one run, or runs that agree)."""
    if r["mean"] is None:
        return "-"
    if r["ci_low"] is None:
        why = "no interval" if r["n_runs"] < MIN_RUNS_INTERVAL else "all runs agree: no interval"
        return f"{r['mean']:.{digits}f} (n={r['n_runs']}, {why})"
    return f"{r['mean']:.{digits}f} [{r['ci_low']:.{digits}f}, {r['ci_high']:.{digits}f}] (n={r['n_runs']})"


def _wide(cells: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Focal model (rows) x background model (columns), each cell ``mean [low, high] (n)``."""
    rows = [{**{c: r[c] for c in by}, "focal": _short(r["focal_model"]), "background": _short(r["background_model"]),
             "cell": _cell_text(r)} for r in cells.iter_rows(named=True)]
    if not rows:
        return pl.DataFrame()
    df = pl.DataFrame(rows)
    wide = df.pivot(on="background", index=[*by, "focal"], values="cell", aggregate_function="first").fill_null("-")
    cols = sorted(c for c in wide.columns if c not in (*by, "focal"))  # the same column order in every table
    return wide.select(*by, "focal", *cols).rename({c: f"background {c}" for c in cols})


def _matrix_finding(name: str, cells: pl.DataFrame, by: Sequence[str], conv: dict, reading: str, title: str,
                    value_label: str):
    """A cross-play cell frame as a Finding: the long frame (saved), a wide table (shown:
    focal rows x background columns) and the chart (faceted by ``by[0]`` when it varies)."""
    from .figures import markdown_table
    from .findings import Finding

    wide = _wide(cells, by)
    return Finding(name, frame=cells, text=markdown_table(wide) if wide.height else None, reading=reading,
                   chart=payoff_matrix_chart(cells, title=title, value_label=value_label,
                                             facet=by[0] if by and cells[by[0]].n_unique() > 1 else None),
                   convention=conv)


def matrix_result(runs: pl.DataFrame, *, by: Sequence[str] = (), payoff: str, name: str = "crossplay_focal_payoff",
                  convention: dict | None = None, bounds: tuple[float, float] | None = None):
    """The focal payoff matrix as a :class:`~scarce_lab.analysis.findings.Finding`: the
    long frame (saved), a wide table (shown: focal rows x background columns), a
    chart and a reading that states the interval method. ``payoff`` names the payoff
    and its unit (e.g. ``"total gain (pool units)"``); ``bounds``: its known ``(low, high)``
    (the interval is then :data:`BOUNDED_CI_METHOD`)."""
    cells = focal_payoff_matrix(runs, by=by, bounds=bounds)
    method = CI_METHOD if bounds is None else BOUNDED_CI_METHOD
    conv = {"unit": "run; compositions never pooled", "intervals": method,
            "interval_from": f"{MIN_RUNS_INTERVAL} runs with spread", "payoff": payoff, **(convention or {})}
    best = cells.filter(pl.col("mean").is_not_null()).sort("mean", descending=True)
    reading = (f"Mean focal payoff ({payoff}) per focal x background composition over "
               f"{runs.height} runs; {method}, printed from {MIN_RUNS_INTERVAL} runs"
               + (" with spread (the coverage benchmark measured 0.93-0.95 for per-run means at 3-30 runs)."
                  if bounds is None else f" (bounds {bounds[0]:g}..{bounds[1]:g}; the coverage benchmark measured "
                  "at least 98.7% at 2-30 runs)."))
    if best.height:
        b = best.row(0, named=True)
        reading += (f" Highest: focal {_short(b['focal_model'])} over background {_short(b['background_model'])}, "
                    f"{_cell_text(b)}.")
    return _matrix_finding(name, cells, by, conv, reading, "Focal payoff by focal and background model",
                           f"focal payoff: {payoff}")


def advantage_result(runs: pl.DataFrame, *, by: Sequence[str] = (), payoff: str,
                     name: str = "crossplay_invader_advantage", convention: dict | None = None,
                     bounds: tuple[float, float] | None = None):
    """The invader's advantage (:func:`invader_advantage`) as a Finding: focal payoff
    minus the residents' in the same run, paired per run, mean and interval per
    composition (self-play left out); ``bounds``: the payoff's known ``(low, high)``."""
    cells = invader_advantage(runs, by=by, bounds=bounds)
    method = CI_METHOD if bounds is None else BOUNDED_CI_METHOD
    conv = {"unit": "run; compositions never pooled", "intervals": method + " of paired per-run differences",
            "interval_from": f"{MIN_RUNS_INTERVAL} runs with spread", "payoff": payoff, **(convention or {})}
    sig = cells.filter(pl.col("ci_low").is_not_null() & ((pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)))
    reading = (f"Invader advantage: the focal seat's payoff minus the residents' mean payoff in the same run "
               f"({payoff}), averaged over runs; {method} on the paired differences. "
               f"{cells.filter(pl.col('ci_low').is_not_null()).height} of {cells.height} compositions have an "
               f"interval (the others: one run, or no spread between runs); {sig.height} exclude 0.")
    return _matrix_finding(name, cells, by, conv, reading, "Invader advantage: focal minus residents, paired per run",
                           _difference_label(payoff, bounds))


def _difference_label(payoff: str, bounds: tuple[float, float] | None) -> str:
    """The advantage axis: a difference of ``payoff``; a bounded payoff's range ``(0..1)``
    becomes the difference's ``(-1..1)`` (a score axis saying 0..1 under negative values misleads)."""
    if bounds is None:
        return f"advantage: {payoff}"
    name = payoff.split(" (")[0]
    return f"advantage: focal minus residents, {name} ({bounds[0] - bounds[1]:g}..{bounds[1] - bounds[0]:g})"


def choices_result(choices: pl.DataFrame, *, what: str, name: str, convention: dict | None = None):
    """:func:`choice_vs_uniform` as a Finding: per chooser model and chosen model, the
    observed and uniform-expected counts and the excess share with its interval over
    runs; ``what`` names the choice (e.g. ``"first place on ballots, among the others"``)."""
    from .findings import Finding

    table = choice_vs_uniform(choices)
    conv = {"unit": "run (per-run excess shares); choices inside a run are not independent",
            "intervals": CI_METHOD + " of per-run excess shares", "baseline": "uniform choice among the rivals",
            "choice": what, **(convention or {})}
    if table.is_empty():
        reading = f"No {what} with a choice (at least two rivals) in these runs."
        return Finding(name, frame=table, reading=reading, convention=conv)
    top = table.sort("excess_share", descending=True).row(0, named=True)
    shown = pl.DataFrame([{"chooser's model": _short(r["chooser_model"]), "chosen worker's model": _short(r["chosen_model"]),
                           "choices": r["choices"], "observed": r["observed"], "expected (uniform)": f"{r['expected']:.1f}",
                           "excess share [95% CI] (runs)": _cell_text({"mean": r["excess_share"], "ci_low": r["ci_low"],
                                                                       "ci_high": r["ci_high"], "n_runs": r["runs"]})}
                          for r in table.iter_rows(named=True)])
    reading = (f"{what[0].upper() + what[1:]}, by the chooser's and the chosen worker's model, against uniform choice "
               f"among the rivals: {_choices_sentence(table, top)} A positive excess toward one's own model with a "
               "negative one toward another is the pattern of an exclusive alliance. Intervals: "
               f"{CI_METHOD}, of per-run excess shares; each is 95% on its own (the {table.height} pairs are not "
               "adjusted together).")
    from .figures import markdown_table

    return Finding(name, frame=table, text=markdown_table(shown), reading=reading, chart=_choices_chart(table, what),
                  convention=conv)


def _choices_sentence(table: pl.DataFrame, top: dict) -> str:
    """What the intervals of :func:`choice_vs_uniform`'s table support, first: the pairs
    whose interval excludes 0 (largest excess first), then the largest excess, saying
    whether its interval spans 0 (an extreme is no finding when it does)."""
    def pair(r: dict) -> str:
        return f"{_short(r['chooser_model'])} -> {_short(r['chosen_model'])}"

    def ci(r: dict) -> str:
        return f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"

    has = table.filter(pl.col("ci_low").is_not_null() & pl.col("ci_high").is_not_null())
    sig = has.filter((pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)).sort("excess_share", descending=True)
    top_text = (f"{top['excess_share']:+.2f} ({pair(top)}: {top['observed']} of {top['choices']} vs "
                f"{top['expected']:.1f} expected)")
    if has.is_empty():
        return (f"no pair has an interval (one run, or no spread between runs), so no excess can be told from "
                f"uniform choice; the largest is {top_text}.")
    if sig.is_empty():
        spans = f", interval {ci(top)} spans 0" if top["ci_low"] is not None and top["ci_high"] is not None else \
            ", no interval"
        return (f"no pair's interval excludes 0 ({has.height} of {table.height} pairs have one), so the data show "
                f"no departure from uniform choice; the largest excess is {top_text}{spans}.")
    shown = "; ".join(f"{pair(r)} {r['excess_share']:+.2f} {ci(r)}" for r in sig.iter_rows(named=True))
    out = f"{sig.height} of {table.height} pairs have an interval that excludes 0: {shown}."
    if not sig.filter((pl.col("chooser_model") == top["chooser_model"])
                      & (pl.col("chosen_model") == top["chosen_model"])).height:
        where = (f"its interval {ci(top)} spans 0" if top["ci_low"] is not None and top["ci_high"] is not None
                 else "it has no interval")
        out += f" The largest excess, {top_text}, is no finding: {where}."
    return out


def _choices_chart(table: pl.DataFrame, what: str):
    import altair as alt

    from .figures import REFERENCE, caption, titled

    df = table.with_columns(pl.col("chooser_model").map_elements(_short, return_dtype=pl.String).alias("chooser"),
                            pl.col("chosen_model").map_elements(_short, return_dtype=pl.String).alias("chosen"))
    base = alt.Chart(df.to_pandas())
    y = alt.Y("chooser:N", title="chooser's model")
    colour = alt.Color("chosen:N", title="chosen worker's model")
    pts = base.mark_point(filled=True, size=60).encode(
        x=alt.X("excess_share:Q", title="excess share over uniform choice (share of choices)",
                scale=alt.Scale(padding=8)), y=y, color=colour, yOffset="chosen:N",
        tooltip=["chooser_model", "chosen_model", "choices", "observed", alt.Tooltip("expected:Q", format=".1f"),
                 "ci_note"])
    bars = base.mark_rule().encode(x="ci_low:Q", x2="ci_high:Q", y=y, color=colour, yOffset="chosen:N")
    zero = alt.Chart(pl.DataFrame({"x": [0.0]}).to_pandas()).mark_rule(color=REFERENCE, strokeDash=[4, 3]).encode(x="x:Q")
    chart = (zero + bars + pts).properties(width=360, height=_panel_height(df, "chooser", "chosen", None))
    n = int(df["runs"].min()), int(df["runs"].max())
    return titled(chart, f"Who chooses whom: {what}", caption(
        "0: uniform choice among the rivals", f"runs per cell {n[0]}-{n[1]}",
        "bars: " + CI_METHOD + " of per-run excess shares", "no bar: fewer than 2 runs or no spread"))
