"""The one-sentence readings of the Economy of Minds findings (``sl.economy``),
computed from their frames: deterministic, conditions in ablation order and named by
:func:`~.metrics.short_names` (only the settings that tell them apart)."""

from __future__ import annotations

import polars as pl

from .metrics import _full_economy, _order, short_names


def _num(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def ablation_sentence(table: pl.DataFrame) -> str:
    """The full economy's solve rate early, late and in evaluation against each ablation's
    evaluation rate, with the number of seeds (computed from ``ablation_table``)."""
    rows = {r["condition"]: r for r in table.iter_rows(named=True)}
    key = _full_economy(list(rows))
    if key is None:
        return "No full-economy runs (condition `none`) in this dataset."
    full, names = rows[key], short_names(list(rows))
    others = [f"{_num(rows[c]['eval'])} with {names[c]}" for c in sorted(rows, key=_order) if c != key]
    return (f"The full economy solves {_num(full['first_fifth'])} of episodes in the first fifth of training, "
            f"{_num(full['last_fifth'])} in the last fifth and {_num(full['eval'])} in frozen evaluation"
            + (f"; in evaluation: {', '.join(others)}" if others else "")
            + f" ({_seeds_note(table)}).")


def _seeds_note(table: pl.DataFrame) -> str:
    """How many seeds each condition has and where the table has intervals: a 95%
    interval over seeds needs two seeds; with one there is none, and the note says why
    rather than point to intervals the table does not have."""
    ns = sorted(set(table["n_runs"].to_list()))
    n = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}-{ns[-1]}"
    if ns[-1] < 2:
        return (f"{n} seed per condition: no interval, since a 95% interval over seeds, the independent "
                "unit, needs at least two")
    if ns[0] < 2:
        return (f"{n} seeds per condition; 95% intervals in the table where a condition has two or more seeds, "
                "none from one seed")
    return f"{n} seeds per condition; 95% intervals in the table"


def learning_sentence(curve: pl.DataFrame) -> str:
    """Each condition's mean solve rate in its first and last window (computed)."""
    if curve.height == 0:
        return "No training episodes."
    parts = []
    for c, name in short_names(curve["condition"].to_list()).items():
        g = curve.filter(pl.col("condition") == c).sort("window_start")
        parts.append(f"{name} {g['solve_rate'][0]:.2f} -> {g['solve_rate'][-1]:.2f}")
    return "Mean solve rate, first window -> last window: " + "; ".join(parts) + "."


def population_sentence(dyn: pl.DataFrame) -> str:
    """Living agents and wealth Gini at the end of training per condition (computed)."""
    if dyn.height == 0:
        return "No population snapshots."
    parts = []
    for c, name in short_names(dyn["condition"].to_list()).items():
        g = dyn.filter(pl.col("condition") == c).sort("round")
        gini_last = g["gini"].drop_nulls()
        gtxt = f", wealth Gini {gini_last[-1]:.2f}" if gini_last.len() else ", no wealth left to compare"
        parts.append(f"{name}: {g['size'][-1]:.0f} agents{gtxt}")
    return "At the end of training (mean over seeds): " + "; ".join(parts) + "."


def bid_sentence(conv: pl.DataFrame) -> str:
    """The full economy's mean absolute gap between the bid paid and the value realised
    per win in its first and last window (computed from :func:`.metrics.bid_convergence`)."""
    key = _full_economy(conv["condition"].unique().to_list()) if conv.height else None
    if key is None:
        return "No full-economy runs (condition `none`) with a winning agent in training in this dataset."
    c = conv.filter(pl.col("condition") == key).sort("window_start").rows(named=True)

    def gap(r: dict) -> str:
        ci = "" if r["gap_lo"] is None or r["gap_hi"] is None else f" [{r['gap_lo']:.1f}, {r['gap_hi']:.1f}]"
        return f"{r['gap']:.1f}{ci}"

    one = max(r["n_runs"] for r in (c[0], c[-1])) < 2
    return (f"In the full economy the mean absolute gap between the bid paid and the value realised per win goes "
            f"from {gap(c[0])} to {gap(c[-1])} credits between the first and the last window (the chart's "
            f"lines; " + ("one seed: no interval, a t-interval over seeds needs two" if one
                          else "95% t-intervals over seeds in brackets") + ").")


def dynamics_sentence(table: pl.DataFrame) -> str:
    """The full economy (base condition ``none``) of each economy of :func:`.compare.dynamics_table`
    at the end of training: living agents, wealth Gini and frozen-evaluation solve rate
    (means over runs). Each is named by its economy, and by its task and condition
    (:func:`~.metrics.short_names`) where the economy alone names several."""
    full = table.filter(pl.col("base_condition") == "none")
    if full.is_empty():
        return "No full-economy runs (condition `none`) in this dataset."
    names = short_names(full["condition"].to_list())
    tasks = full["task"].n_unique() > 1
    several = full["economy"].n_unique() < full.height
    parts = []
    for r in full.iter_rows(named=True):
        where = [r["task"]] * tasks + [names[r["condition"]]] * several
        name = r["economy"] + (f" ({', '.join(where)})" if where else "")
        parts.append(f"{name}: {_num(r['final_size'], 1)} agents, wealth Gini {_num(r['final_gini'])}, "
                     f"solve rate in frozen evaluation {_num(r['eval_solve'])}")
    return "The full economy at the end of training (mean over runs): " + "; ".join(parts) + "."


def tenure_sentence(table: pl.DataFrame) -> str:
    """Per condition of :func:`.tenure.tenure_table`: the newcomer's mean wealth and wins per
    episode after the join against the incumbents', and the share of runs in which the
    newcomer survived training."""
    if table.is_empty():
        return "No run with a newcomer."
    names, parts = short_names(table["condition"].to_list()), []
    for (_, cond), g in table.group_by(["task", "condition"], maintain_order=True):
        t = {r["tenure"]: r for r in g.iter_rows(named=True)}
        new, old = t.get("newcomer", {}), t.get("incumbent", {})
        parts.append(f"{names[cond]}: wealth {_num(new.get('wealth'), 0)} against {_num(old.get('wealth'), 0)} credits, "
                     f"wins per episode {_num(new.get('wins'))} against {_num(old.get('wins'))}, newcomer "
                     f"survived in {_num(new.get('survival'))} of runs")
    return "After the join, newcomer against incumbents (mean over runs): " + "; ".join(parts) + "."
