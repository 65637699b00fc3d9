"""``sl.effects(forks)``: the paired effect of each intervention against the ``none`` forks.

Pairs: a fork with an intervention and the ``none`` fork of the same parent, step and
seed (:class:`~scarce_lab.forks.ForkSpec`): both share the parent's prefix and, from the
step on, the same seed stream, so their difference is the intervention's effect on that
continuation. A fork without its ``none`` partner is left out (and counted).

Metrics: the environment's headline metrics, by the names of its ``study_metrics``
adapter (:class:`scarce_lab.registry.EnvironmentSpec`), computed per fork run.

Estimate and interval: forks of one parent are not independent of each other (they
share its prefix), so the unit is the parent: each parent's mean paired difference over
its seeds. ``effect`` is the **median** over parents of those differences, with a
distribution-free 95% interval for the median from order statistics (the sign test's,
:func:`scarce_lab.analysis.stats.median_ci`): it holds for any distribution of parent
differences, bell-shaped, skewed, heavy-tailed, or with most parents unchanged (a mass
at zero: the common shape of forks, where the Student-t interval of the mean covered
only 0.82-0.92 at 5-30 parents). ``mean_effect`` is the mean over parents, printed
without an interval (no interval of a mean holds for such shapes at these counts).
It says how the effect varies over parents like these, at this step (parents with the
same number of seeds); the seeds only sharpen each parent's difference. Printed from
:data:`MIN_PARENTS` parents on (6: with 5, even the widest interval, the smallest to the
largest difference, covers the median with probability 1 - 2/32 = 0.94); coverage by
simulation over five families at 5-50 parents: ``benchmarks/bench_coverage.py``, "fork
effects". Below it, no interval, and ``why`` says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.stats import min_median_ci_n
from . import ForkError

__all__ = ["MIN_PARENTS", "effects", "effects_chart", "paired_effects", "parent_differences"]

#: Fewest parents an interval is printed from (:func:`~scarce_lab.analysis.stats.min_median_ci_n` at 95%).
MIN_PARENTS = min_median_ci_n(0.95)
#: What every effect table is computed under (saved beside it).
CONVENTION = {"pairs": "a fork and the none fork of the same parent, step and seed",
              "unit": "parent (each parent's mean paired difference over its seeds)",
              "groups": "environment x intervention x step x metric, never pooled",
              "estimate": "effect: the median over parents; mean_effect: the mean over parents (no interval)",
              "intervals": f"distribution-free 95% interval for the median over parents (order statistics, sign test), "
                           f"from {MIN_PARENTS} parents (bench_coverage 'fork effects')"}
_COLUMNS = {"environment": pl.String, "intervention": pl.String, "at": pl.Int64, "metric": pl.String,
            "effect": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "mean_effect": pl.Float64,
            "n_parents": pl.Int64,
            "n_pairs": pl.Int64, "unpaired": pl.Int64, "why": pl.String}


def _fork_runs(forks: Any) -> list[Path]:
    from ..data.loaders import find_run_dirs

    paths = [forks] if isinstance(forks, str | Path) else list(forks)
    return [d for p in paths for d in find_run_dirs(Path(p))]


def _run_metrics(run_dir: Path, spec: Any) -> dict[str, float]:
    """The environment's metrics of one run (its ``study_metrics`` estimates)."""
    from ..data.loaders import load_dataset

    rows = spec.study_metrics(load_dataset(run_dir, cache=False))
    return {r["metric"]: r["estimate"] for r in rows.iter_rows(named=True) if r["estimate"] is not None}


def parent_differences(values: list[dict[str, Any]]) -> pl.DataFrame:
    """Each parent's mean paired difference, from one row per fork: ``environment, parent,
    at, seed, intervention, metrics`` (``metrics``: name -> value; ``intervention`` the
    label, ``"none"`` for the baseline). Columns: ``environment, intervention, at, metric,
    parent, difference`` (mean over the parent's seeds of fork minus its ``none`` fork of
    the same seed), ``n_seeds, unpaired`` (forks of that intervention and step without a
    ``none`` partner)."""
    base = {(v["environment"], v["parent"], v["at"], v["seed"]): v["metrics"] for v in values
            if v["intervention"] == "none"}
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for v in values:
        if v["intervention"] != "none":
            groups.setdefault((v["environment"], v["intervention"], v["at"]), []).append(v)
    rows = []
    for (env, label, at), forks in sorted(groups.items()):
        paired = [v for v in forks if (env, v["parent"], at, v["seed"]) in base]
        for metric in sorted({k for v in paired for k in v["metrics"]}):
            by_parent: dict[str, list[float]] = {}
            for v in paired:
                mine, theirs = v["metrics"].get(metric), base[(env, v["parent"], at, v["seed"])].get(metric)
                if mine is not None and theirs is not None:
                    by_parent.setdefault(v["parent"], []).append(mine - theirs)
            rows += [{"environment": env, "intervention": label, "at": at, "metric": metric, "parent": parent,
                      "difference": sum(d) / len(d), "n_seeds": len(d), "unpaired": len(forks) - len(paired)}
                     for parent, d in by_parent.items()]
    return pl.DataFrame(rows, schema={"environment": pl.String, "intervention": pl.String, "at": pl.Int64,
                                      "metric": pl.String, "parent": pl.String, "difference": pl.Float64,
                                      "n_seeds": pl.Int64, "unpaired": pl.Int64})


def paired_effects(values: list[dict[str, Any]]) -> pl.DataFrame:
    """The effect table from one row per fork (as :func:`parent_differences` takes).
    Columns: ``environment, intervention, at, metric, effect`` (median over parents of
    each parent's mean paired difference), ``ci_low, ci_high`` (the median's interval,
    module docstring; null below :data:`MIN_PARENTS` parents), ``mean_effect`` (mean over
    parents, no interval), ``n_parents, n_pairs, unpaired`` (forks without a ``none``
    partner), ``why``."""
    return _aggregate(parent_differences(values))


def _aggregate(diffs: pl.DataFrame) -> pl.DataFrame:
    from ..analysis.stats import median_ci

    rows = []
    for (env, label, at, metric), g in diffs.group_by(["environment", "intervention", "at", "metric"],
                                                     maintain_order=True):
        means = g["difference"].to_list()
        effect, lo, hi = median_ci(means)
        why = None
        if lo != lo:
            why = (f"no 95% interval from {len(means)} parent{'s' if len(means) != 1 else ''}: forks of one "
                   f"parent are not independent, so the interval is over parents; {getattr(lo, 'reason', '')}")
        rows.append({"environment": env, "intervention": label, "at": at, "metric": metric, "effect": effect,
                     "ci_low": None if lo != lo else lo, "ci_high": None if hi != hi else hi,
                     "mean_effect": sum(means) / len(means),
                     "n_parents": len(means), "n_pairs": int(g["n_seeds"].sum()),
                     "unpaired": int(g["unpaired"][0]), "why": why})
    return pl.DataFrame(rows, schema=_COLUMNS)


def effects_chart(diffs: pl.DataFrame) -> Any:
    """One strip per metric (its own x scale): a point per parent at its mean paired
    difference (fork minus the ``none`` fork of the same seed), one row per intervention
    and step; 0 is no effect. Returns the titled chart (:func:`~scarce_lab.analysis.figures.titled`),
    or a ``NoFigure`` saying why there is none (no pair, or every difference zero)."""
    import altair as alt

    from ..analysis.figures import NoFigure, caption, chart_data, titled

    if diffs.height == 0:
        return NoFigure("no intervention fork has a none fork of the same parent, step and seed")
    d = diffs.with_columns(fork=pl.format("{} @ step {}", "intervention", "at"))
    n_forks = d["fork"].n_unique()
    chart = alt.Chart(chart_data(d)).mark_point(filled=True, size=50, opacity=0.7).encode(
        x=alt.X("difference:Q", title="paired difference (fork - none)"),
        y=alt.Y("fork:N", title=None, axis=alt.Axis(labelLimit=320)),
        tooltip=["intervention", "at", "metric", "parent", alt.Tooltip("difference:Q", format=".3g"), "n_seeds"],
    ).properties(width=250, height=22 * n_forks).facet(
        facet=alt.Facet("metric:N", title=None), columns=2).resolve_scale(x="independent")
    return titled(chart, "Effect of each intervention, per parent", [
        caption("One point per parent: its mean over seeds of the fork's metric minus its none fork's (same parent, "
                "step and seed); 0 = no effect; each metric on its own scale"),
        caption(f"{d['parent'].n_unique()} parents, {n_forks} intervention(s) and step(s)")])


def effects(forks: Path | str | Iterable[Path | str]) -> Any:
    """Per intervention, step and metric, the paired effect against the ``none`` forks
    (module docstring) of the forks found at or below ``forks`` (folders or run folders;
    runs that are no forks, e.g. the parents, are left out).

    Returns:
        A :class:`~scarce_lab.analysis.findings.Finding` named ``fork_effects`` whose
        frame is :func:`paired_effects`'s table.

    Raises:
        ForkError: no fork found, or forks of several environments.
    """
    from ..analysis.findings import Finding
    from ..data.recorder import read_manifest
    from ..data.tables import fork_label
    from ..registry import get

    values = []
    for run_dir in _fork_runs(forks):
        m = read_manifest(run_dir)
        fork = (m.config or {}).get("fork")
        if not fork or m.status.value != "complete":
            continue
        spec = get(m.environment)
        if spec.study_metrics is None:
            raise ForkError(f"{spec.title} names no headline metrics (study_metrics): no effects to measure")
        label = (fork_label(m.condition_settings) or "").partition(":")[2]  # "none", "rule:misreport=false"...
        values.append({"environment": m.environment, "parent": fork["parent"], "at": fork["at"],
                       "seed": fork["seed"], "intervention": label, "metrics": _run_metrics(run_dir, spec)})
    if not values:
        raise ForkError(f"no complete fork under {forks}: make forks with sl.fork / scarce-lab fork")
    if len({v["environment"] for v in values}) > 1:
        raise ForkError(f"forks of several environments under {forks}: measure one at a time")
    diffs = parent_differences(values)
    frame = _aggregate(diffs)
    shown = frame.filter(pl.col("ci_low").is_not_null()).height
    reading = (f"{frame['intervention'].n_unique()} intervention(s) against the none forks of the same parent, step "
               f"and seed, {frame.height} metric rows; effect: the median over parents, {shown} with a 95% interval "
               f"(from {MIN_PARENTS} parents)") if frame.height else \
        "no intervention has a none fork of the same parent, step and seed to pair with"
    return Finding("fork_effects", frame=frame, chart=effects_chart(diffs), reading=reading, method=__doc__ or "",
                   extra={"fork_effects_per_parent": diffs}, convention=CONVENTION)
