"""Never pool different conditions: the check every SovSim table runs before grouping.

A condition is every setting that defines it (docs/design.md). In the per-simulation frame
of :func:`~.metrics.simulation_metrics` a run's condition is :data:`IDENTITY`:
``base_condition`` (cpr / bcpr / kcpr / kcpr_m, or GovSim's environment name) plus
``settings`` (canonical JSON of every condition-defining setting; null for layouts that
carry none, such as SovSim's released ``rationales.json``) and ``source`` (the layout:
runs of two layouts are never the same condition, since one may carry settings the
other lacks). The readable ``condition`` label adds the settings that vary among the
loaded runs, so grouping by ``(model, condition)`` never mixes runs of different settings.

Cross-model results pool *models*: settings that belong to the model
(:func:`is_model_setting`: ``llm.*``, e.g. a reasoning model run without a temperature)
may differ between the models of one cross-model group; every other setting must agree
(:func:`cross_model_groups`). A refusal (:class:`PoolingError`) names the settings and
their values; with ``force=True`` a loud
:class:`~.conventions.SovSimDataWarning` instead, and the pooled groups are labelled
``<base> [pooled: <settings>]``.
"""

from __future__ import annotations

import json
import warnings
from typing import Literal

import polars as pl

from scarce_lab.analysis.pooling import PoolingError, differing_settings
from scarce_lab.data.tables import label_conditions, settings_json

from .conventions import SovSimDataWarning

Grouping = Literal["condition", "base_condition"]

#: Identity of a run's condition: these columns together define it.
IDENTITY = ("base_condition", "settings", "source")


def _refuse(msg: str, hint: str, force: bool) -> None:
    """Raise :class:`PoolingError` (``msg`` and ``hint``), or with ``force`` warn loudly."""
    if not force:
        raise PoolingError(msg + hint)
    warnings.warn(SovSimDataWarning(f"FORCED: {msg}"), stacklevel=3)


def _describe(diff: dict[str, list]) -> str:
    return "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in diff.items())


def pool_groups(
    per_sim: pl.DataFrame, by: Grouping = "condition", *, keys: tuple[str, ...] = ("model",), force: bool = False,
    what: str = "table",
) -> pl.DataFrame:
    """``per_sim`` relabelled so that grouping by ``(*keys, "condition")`` is safe.

    Every group of ``(*keys, by)`` must hold runs of one condition identity
    (:data:`IDENTITY`). Groups that do keep their label (``by="base_condition"`` sets
    ``condition`` to the base condition when every group is pure); impure groups raise,
    or with ``force`` get ``condition = "<label> [pooled: <settings>]"``, ``settings``
    set to null and ``source`` to the joined layouts.

    Raises:
        PoolingError: a group mixes settings and ``force`` is false.
        ValueError: unknown ``by`` or a missing column.
    """
    if by not in ("condition", "base_condition"):
        raise ValueError(f"by must be 'condition' or 'base_condition', got {by!r}")
    d = per_sim
    for col in ("settings", "source", "base_condition"):
        if col not in d.columns:
            d = d.with_columns(pl.lit(None, dtype=pl.String).alias(col))
    d = d.with_columns(base_condition=pl.coalesce("base_condition", "condition"))
    group = [*keys, by]
    ident = d.group_by(group).agg(
        pl.struct(*IDENTITY).unique().alias("_ids"), pl.col("run_id").n_unique().alias("_runs")
    )
    impure = ident.filter(pl.col("_ids").list.len() > 1)
    if by == "base_condition":
        d = d.with_columns(condition=pl.col("base_condition"))
    if impure.height == 0:
        return d
    lines, labels = [], []
    for row in impure.iter_rows(named=True):
        ids = row["_ids"]
        diff = differing_settings([i["settings"] for i in ids], [i["source"] for i in ids])
        where = ", ".join(f"{k}={row[k]}" for k in group)
        lines.append(f"{where} ({row['_runs']} runs): {_describe(diff)}")
        labels.append({**{k: row[k] for k in group},
                       "_label": f"{row[by]} [pooled: {', '.join(diff)}]",
                       "_source": "+".join(sorted({str(i['source']) for i in ids}))})
    _refuse(f"the {what} would pool runs whose settings differ:\n  - " + "\n  - ".join(lines),
            "\n(group by the full condition, load them separately, or pass force=True / --force)", force)
    lab = pl.DataFrame(labels, schema={**{k: d.schema[k] for k in group}, "_label": pl.String, "_source": pl.String})
    d = d.join(lab, on=group, how="left", nulls_equal=True)
    pooled = pl.col("_label").is_not_null()
    return d.with_columns(
        condition=pl.when(pooled).then(pl.col("_label")).otherwise(pl.col("condition")),
        settings=pl.when(pooled).then(None).otherwise(pl.col("settings")),
        source=pl.when(pooled).then(pl.col("_source")).otherwise(pl.col("source")),
    ).drop("_label", "_source")


def is_model_setting(key: str) -> bool:
    """Whether a condition setting belongs to the model (``llm.*``: temperature, token
    limit, reasoning effort): such settings may differ between the models of a
    cross-model result."""
    return key.startswith("llm.")


def _core(s: str | None, leave_out: tuple[str, ...] = ()) -> str | None:
    """Settings ``s`` without model settings (and ``leave_out``)."""
    if s is None:
        return None
    return settings_json({k: v for k, v in json.loads(s).items() if not is_model_setting(k) and k not in leave_out})


def cross_model_groups(d: pl.DataFrame, by: Grouping = "condition", *, force: bool = False,
                       what: str = "cross-model result") -> pl.DataFrame:
    """``d`` (already passed through :func:`pool_groups` per model) with a
    ``cross_condition`` column: the base condition plus the settings, other than model
    settings, that vary among the runs. Runs of one ``cross_condition`` agree on every
    setting except model settings; each model appears in it with one full condition.

    Raises:
        PoolingError: a model appears with several full conditions in one cross-model
            group (e.g. two temperatures), or the group mixes layouts; unless ``force``
            (then a warning, and every (model, condition) is a unit of the mean).
    """
    d = d.with_columns(_core=pl.col("settings").map_elements(_core, return_dtype=pl.String))
    if by == "base_condition":
        d = d.with_columns(cross_condition=pl.col("condition"))
    else:
        core = d.with_row_index("_i").with_columns(settings=pl.col("_core"))
        core = label_conditions(core, skip=("condition", "seats")).sort("_i")
        pooled = pl.col("condition").str.contains(" [pooled", literal=True)  # forced per model: keep its label
        d = d.with_columns(cross_condition=pl.when(pooled).then(pl.col("condition")).otherwise(core["condition"]))
    lines = []
    multi = d.group_by("cross_condition", "model").agg(
        pl.col("condition").unique().sort(), pl.col("settings").unique()).filter(pl.col("condition").list.len() > 1)
    for r in multi.iter_rows(named=True):
        lines.append(f"model {r['model']} appears in {r['cross_condition']} as {', '.join(r['condition'])} "
                     f"({_describe(differing_settings(r['settings']))})")
    mixed = d.group_by("cross_condition").agg(pl.struct("_core", "source").unique().alias("ids")).filter(
        pl.col("ids").list.len() > 1)
    for r in mixed.iter_rows(named=True):
        diff = differing_settings([i["_core"] for i in r["ids"]], [i["source"] for i in r["ids"]])
        lines.append(f"{r['cross_condition']} across models: {_describe(diff)}")
    d = d.drop("_core")
    if lines:
        _refuse(f"the {what} would pool runs whose settings differ:\n  - " + "\n  - ".join(lines),
                "\n(load them separately or pass force=True / --force)", force)
    return d


def check_same_settings(d: pl.DataFrame, *, force: bool = False, what: str = "correlation") -> None:
    """Every run of ``d`` has the same settings apart from the power condition and model
    settings (for results that pool conditions and models, such as a correlation over
    model x condition cells).

    Raises:
        PoolingError: they differ (names the settings), unless ``force`` (then a warning).
    """
    core = d.select(pl.col("settings").map_elements(lambda s: _core(s, ("condition",)), return_dtype=pl.String)
                    .alias("core"), "source").unique()
    if core.height <= 1:
        return
    diff = differing_settings(core["core"].to_list(), core["source"].to_list())
    if not diff:
        return
    _refuse(f"the {what} would pool runs whose settings differ: {_describe(diff)}",
            " (load them separately or pass force=True / --force)", force)
