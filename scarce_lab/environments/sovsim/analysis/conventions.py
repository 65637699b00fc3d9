"""SovSim metric conventions (presets) and the check that data fit them.

A :class:`Convention` holds two kinds of fields:

- the *game* the metrics assume (``n_agents``, ``rounds``, ``initial_pool``,
  ``collapse_threshold``, ``regeneration_factor``) and the quantities derived from it
  (``efficiency_benchmark`` = T x P0 / g, ``overuse_divisor`` = g x n, ``max_total_payoff``
  = T x P0), and
- the *metric conventions* where published implementations differ (lenient or strict
  survival, equality over payoff or harvest, which pool the defection threshold uses,
  whether defection onset exists without a leader).

Presets: ``sovsim`` (the SovSim paper, "Bosses, Kings, and the Commons", and its
authors' ``simulation/metrics.py``) and ``govsim`` (GovSim fishing: 5 fishers, pool 100,
efficiency benchmark 600, over-usage above pool/2/5, equality over harvest).

:func:`resolve_convention`, which every table goes through, fits a preset to the runs'
own game (:data:`SETTINGS_GAME_KEYS`) or refuses (:class:`PresetMismatchError`).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, fields, replace
from typing import Literal

import polars as pl

from ..published import ForcedDataWarning


class PresetMismatchError(ValueError):
    """The data do not fit the requested preset (the message names the runs, the
    setting, the preset's value and the data's value)."""


class SovSimDataWarning(ForcedDataWarning):
    """A check was overridden with ``force=True``: the numbers may mix things that the
    table would otherwise keep apart. Printed to stderr by the CLI."""


@dataclass(frozen=True)
class Convention:
    """Metric conventions (units: pool units, rounds, points).

    Use :func:`convention` for a preset with overrides, or :func:`resolve_convention`
    to fit a preset to a dataset.

    Attributes:
        defection_pool: the pool whose per-capita sustainable share ``P / (g n)`` a
            subordinate must exceed to defect: ``"true"`` (the true pool, as the SovSim
            authors' ``subordinate_defection_onset`` does, also in KCPR-M) or ``"seen"``
            (the pool as presented to the subordinate: the king's announcement in KCPR-M).
        defection_in_cpr: count defection onset in CPR too (any citizen). The SovSim
            authors' code returns no onset for CPR ("only meaningful for asymmetric
            conditions"): the metric is then *not applicable* there.
        scenario: the GovSim scenario the rules below come from (``experiment.scenario``
            of the runs: ``fishing``, ``sheep``, ``pollution``, ``fishing_japanese``,
            ``trash``; :data:`~scarce_lab.environments.sovsim.published.govsim_log.SCENARIOS`),
            None for SovSim games.
        collapse_above: the run ends when *more* than ``collapse_threshold`` remains
            (the trash scenario's house overflowing) instead of fewer.
        unsustainable_below: an agent-round is over-usage (the unsustainable side) when
            its extraction is *below* this fixed amount (trash: taking out less than
            50 / n a month lets the house fill), instead of above ``P / (g n)``.
        total_payoff_per: ``"simulation"`` (sum over agents, SovSim) or ``"agent"``
            (mean per agent of its total, GovSim's ``plots.get_payoffs``). Table 1's
            column says which.
        equality_when_no_harvest: equality of a run in which nobody harvested (Gini
            0/0): SovSim's ``payoff_equality`` returns 0.0; GovSim's ``plots.gini``
            divides by the zero sum (NaN): None, the cell is undefined.
    """

    name: str = "sovsim"
    n_agents: int = 4
    rounds: int = 12
    initial_pool: float = 120.0
    regeneration_factor: float = 2.0
    efficiency_benchmark: float | None = 720.0
    collapse_threshold: float = 12.0
    overuse_divisor: float = 8.0
    equality_over: Literal["payoff", "extraction"] = "payoff"
    strict_survival: bool = False
    max_total_payoff: float | None = 1440.0
    defection_pool: Literal["true", "seen"] = "true"
    defection_in_cpr: bool = False
    scenario: str | None = None
    collapse_above: bool = False
    unsustainable_below: float | None = None
    total_payoff_per: Literal["simulation", "agent"] = "simulation"
    equality_when_no_harvest: float | None = 0.0

    def __post_init__(self) -> None:
        """Refuse a setting of the wrong kind: a string ``'false'`` is true in Python, so
        ``strict_survival='false'`` would silently give the strict table.

        Raises:
            TypeError: a boolean field that is not a bool, or a number field that is not
                a number (the message names the field and the value).
            ValueError: ``equality_over`` or ``defection_pool`` outside its choices.
        """
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("bool", bool) and type(v) is not bool:
                raise TypeError(f"Convention.{f.name} must be True or False, got {v!r} ({type(v).__name__})")
            if f.type in ("int", "float", "float | None") and v is not None and (
                    isinstance(v, bool) or not isinstance(v, int | float)):
                raise TypeError(f"Convention.{f.name} must be a number, got {v!r} ({type(v).__name__})")
        for name, choices in (("equality_over", ("payoff", "extraction")), ("defection_pool", ("true", "seen"))):
            if getattr(self, name) not in choices:
                raise ValueError(f"Convention.{name} must be one of {list(choices)}, got {getattr(self, name)!r}")


PRESETS: dict[str, Convention] = {
    "sovsim": Convention(),
    "govsim": Convention(
        name="govsim",
        n_agents=5,
        rounds=12,
        initial_pool=100.0,
        efficiency_benchmark=600.0,
        collapse_threshold=5.0,
        overuse_divisor=10.0,
        equality_over="extraction",
        max_total_payoff=None,
        scenario="fishing",
        total_payoff_per="agent",
        equality_when_no_harvest=None,
    ),
}

#: Fields of :class:`Convention` that describe the game (checked against the data).
GAME_FIELDS = ("n_agents", "rounds", "initial_pool", "collapse_threshold", "regeneration_factor")

#: Settings keys (canonical JSON in the ``settings`` column) that carry the game, per
#: layout (``source`` column). Layouts absent here carry no game settings.
SETTINGS_GAME_KEYS: dict[str, dict[str, str]] = {
    "scarce_lab": {
        "game.n_agents": "n_agents",
        "game.rounds": "rounds",
        "game.initial_pool": "initial_pool",
        "game.collapse_threshold": "collapse_threshold",
        "game.regeneration_factor": "regeneration_factor",
    },
    "govsim_log": {
        "experiment.env.num_agents": "n_agents",
        "experiment.env.max_num_rounds": "rounds",
        "experiment.env.initial_resource_in_pool": "initial_pool",
    },
    "sovsim_run": {
        "max_rounds": "rounds",
        "initial_pool": "initial_pool",
        "collapse_threshold": "collapse_threshold",
        "regen_multiplier": "regeneration_factor",
    },
}

#: Settings key of a GovSim run's scenario (its rules: ``govsim_log.SCENARIOS``).
SCENARIO_KEY = "experiment.scenario"

#: The paper family (preset name) of each layout.
LAYOUT_FAMILY = {"scarce_lab": "sovsim", "sovsim_json": "sovsim", "sovsim_run": "sovsim", "govsim_log": "govsim"}


def convention(preset: str = "sovsim", **overrides) -> Convention:
    """The named preset with ``overrides`` applied (e.g. ``strict_survival=True``).

    Raises:
        ValueError: unknown preset or unknown field.
        TypeError: a value of the wrong kind (e.g. ``strict_survival='false'``).
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    unknown = sorted(set(overrides) - {f.name for f in fields(Convention)})
    if unknown:
        raise ValueError(f"unknown Convention field(s) {unknown}")
    return replace(PRESETS[preset], **overrides)


def game_parameters(df: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per run (``run_id``) with its game as its settings state it and as the
    data show it (a lazy agent-round table is aggregated lazily, then collected).

    Columns: ``run_id, source, family`` and, per field of :data:`GAME_FIELDS`, ``<field>``
    (from the run's settings; null where the layout carries none), ``scenario`` (GovSim
    runs: ``experiment.scenario``), plus
    ``observed_n_agents`` (agents per round), ``observed_initial_pool`` (pool at the
    start of round 1; null when round 1 is missing) and ``observed_last_round``.
    """
    need = {"run_id", "source", "round", "agent", "pool_before"}
    columns = df.collect_schema().names() if isinstance(df, pl.LazyFrame) else df.columns
    missing = need - set(columns)
    if missing:
        raise ValueError(f"agent-round table lacks column(s) {sorted(missing)}")
    settings = pl.col("settings") if "settings" in columns else pl.lit(None, dtype=pl.String)
    runs = (  # lazy also for a frame: the eager group-by holds every group's row indices (~150 MB at 1M rows)
        df.lazy().with_columns(_settings=settings)
        .group_by("run_id")
        .agg(
            pl.col("source").first(),
            pl.col("_settings").first(),
            pl.col("agent").n_unique().alias("observed_n_agents"),
            pl.col("pool_before").filter(pl.col("round") == 1).first().alias("observed_initial_pool"),
            pl.col("round").max().alias("observed_last_round"),
        )
        .sort("run_id")
    )
    runs = runs.collect()
    schema = {"run_id": pl.String, "source": pl.String, "family": pl.String, **dict.fromkeys(GAME_FIELDS, pl.Float64),
              "scenario": pl.String, "observed_n_agents": pl.Int64, "observed_initial_pool": pl.Float64,
              "observed_last_round": pl.Int64}
    stated = []  # the settings are parsed once per distinct (settings, layout), not once per run
    for text, source in runs.select("_settings", "source").unique(maintain_order=True).iter_rows():
        parsed = json.loads(text) if text else {}
        row = {"_settings": text, "source": source, "family": LAYOUT_FAMILY.get(source)}
        row |= dict.fromkeys(GAME_FIELDS) | _stated_game(parsed, source)
        row["scenario"] = parsed.get(SCENARIO_KEY) if source == "govsim_log" else None
        stated.append(row)
    if not stated:
        return pl.DataFrame(schema=schema)
    stated_schema = {"_settings": pl.String, "source": pl.String, "family": pl.String,
                     **dict.fromkeys(GAME_FIELDS, pl.Float64), "scenario": pl.String}
    return runs.join(pl.DataFrame(stated, schema=stated_schema, orient="row"), on=["_settings", "source"], how="left",
                     nulls_equal=True, maintain_order="left").select(pl.col(k).cast(t) for k, t in schema.items())


def _stated_game(settings: dict, source: str | None) -> dict[str, float]:
    """The game fields that parsed ``settings`` of layout ``source`` state (:data:`SETTINGS_GAME_KEYS`)."""
    return {f: float(settings[k]) for k, f in SETTINGS_GAME_KEYS.get(source or "", {}).items()
            if settings.get(k) is not None}


def differing_games(frame: pl.DataFrame) -> pl.DataFrame:
    """The game settings that tell the rows of ``frame`` apart: one String column per
    field of :data:`GAME_FIELDS` (``rounds``, ``n_agents``, ...) whose value, as each
    row's ``settings`` state it (read by its layout, ``source``:
    :data:`SETTINGS_GAME_KEYS`), differs between the rows; a row that states none (a
    pooled group, a layout without settings) shows ``-``. No column when every row
    plays one game.

    Rows of different games sit side by side in a table of groups (a survival time of 2
    rounds beside one of 12): these columns say which game each row is, in the order of
    :data:`GAME_FIELDS`, one row per row of ``frame``.

    Raises:
        ValueError: ``frame`` lacks ``settings``.
    """
    if "settings" not in frame.columns:
        raise ValueError(f"differing_games: the frame has no 'settings' column (columns: {frame.columns})")
    sources = frame["source"].to_list() if "source" in frame.columns else [None] * frame.height
    stated = [{f: _num(v) for f, v in _stated_game(json.loads(s) if s else {}, src or "scarce_lab").items()}
              for s, src in zip(frame["settings"].to_list(), sources, strict=True)]
    cols = [f for f in GAME_FIELDS if len({row.get(f) for row in stated}) > 1]
    return pl.DataFrame({f: [row.get(f, "-") for row in stated] for f in cols},
                        schema={f: pl.String for f in cols}, height=frame.height) if cols else pl.DataFrame(
        height=frame.height)


def examples(runs: list[str], k: int = 3) -> str:
    """The first ``k`` of ``runs``, then how many more (``a, b, c and 4 more``)."""
    shown = ", ".join(runs[:k])
    return shown + (f" and {len(runs) - k} more" if len(runs) > k else "")


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def resolve_convention(
    df: pl.DataFrame | pl.LazyFrame, preset: str = "sovsim", *, force: bool = False, **overrides
) -> Convention:
    """The preset fitted to the runs in ``df`` (the agent-round table, eager or lazy).

    1. Family: every run's layout must belong to the preset's paper (GovSim logs ->
       ``govsim``; our runs and SovSim files -> ``sovsim``); rows of an unknown
       ``source`` are not checked.
    2. Game from settings: when every run states the same value of a game field, that
       value replaces the preset's (and ``efficiency_benchmark``, ``overuse_divisor``
       and ``max_total_payoff`` are derived again from T, P0, g and n); runs stating
       different values play different games and are refused (load them separately).
    3. Game from the data: agents per round, pool at the start of round 1 and the last
       round must agree with the (adopted) game.
    4. GovSim scenario: every run must play the same ``experiment.scenario``; its rules
       (collapse direction and threshold, the unsustainable side, whether efficiency
       has a benchmark) come from ``govsim_log.scenario_convention``.

    ``overrides`` are applied to the preset first and are never replaced by the data.

    Raises:
        PresetMismatchError: a check failed (unless ``force``: then a
            :class:`SovSimDataWarning` names every problem and the preset is kept).
        ValueError: unknown preset or override field.
    """
    base = convention(preset, **overrides)
    games = game_parameters(df)
    if games.height == 0:
        return base
    problems: list[str] = []
    fam = games.filter(pl.col("family").is_not_null() & (pl.col("family") != base.name))
    for (source, family), g in fam.group_by("source", "family", maintain_order=True):
        problems.append(
            f"{g.height} run(s) of layout {source!r} are {family} data, not {base.name} data "
            f"(e.g. {examples(g['run_id'].to_list())}): use --preset {family}"
        )
    adopted: dict[str, float] = {}
    for fld in GAME_FIELDS:
        stated = games.filter(pl.col(fld).is_not_null())
        values = sorted(set(stated[fld].to_list()))
        if len(values) > 1:
            ex = "; ".join(
                f"{_num(v)} in {examples(stated.filter(pl.col(fld) == v)['run_id'].to_list(), 2)}" for v in values
            )
            problems.append(f"runs state different games: {fld} = {ex}; load them separately")
        elif values and fld not in overrides and values[0] != getattr(base, fld):
            if stated.height < games.height:
                silent = games.filter(pl.col(fld).is_null())["run_id"].to_list()
                problems.append(
                    f"{stated.height} run(s) state {fld} = {_num(values[0])} but {len(silent)} run(s) state none "
                    f"(e.g. {examples(silent)}) and the preset assumes {_num(getattr(base, fld))}"
                )
            else:
                adopted[fld] = values[0]
    game = replace(base, **{k: (int(v) if k in ("n_agents", "rounds") else v) for k, v in adopted.items()})
    observed = (
        ("n_agents", "observed_n_agents", "agents per round"),
        ("initial_pool", "observed_initial_pool", "pool at the start of round 1"),
    )
    for fld, col, what in observed:
        bad = games.filter(pl.col(col).is_not_null() & (pl.col(col).cast(pl.Float64) != float(getattr(game, fld))))
        for v, g in bad.group_by(col, maintain_order=True):
            problems.append(
                f"{g.height} run(s) have {what} = {_num(v[0])} but the convention assumes {fld} = "
                f"{_num(getattr(game, fld))} (e.g. {examples(g['run_id'].to_list())})"
            )
    late = games.filter(pl.col("observed_last_round") > game.rounds)
    if late.height:
        problems.append(
            f"{late.height} run(s) play past round {game.rounds} (up to round {late['observed_last_round'].max()}; "
            f"e.g. {examples(late['run_id'].to_list())})"
        )
    scenarios = sorted({v for v in games["scenario"].to_list() if v is not None})
    if len(scenarios) > 1:
        ex = "; ".join(f"{v} in {examples(games.filter(pl.col('scenario') == v)['run_id'].to_list(), 2)}"
                       for v in scenarios)
        problems.append(f"runs play different GovSim scenarios (different rules): {ex}; load them separately")
    if problems:
        msg = f"the data do not fit preset {base.name!r}:\n  - " + "\n  - ".join(problems)
        if not force:
            raise PresetMismatchError(msg + "\n(pass force=True / --force to compute anyway)")
        warnings.warn(SovSimDataWarning(f"FORCED: {msg}\nthe preset's conventions are used unchanged"), stacklevel=2)
        return base
    if adopted:
        derived = {
            "efficiency_benchmark": game.rounds * game.initial_pool / game.regeneration_factor,
            "overuse_divisor": game.regeneration_factor * game.n_agents,
            "max_total_payoff": None if base.max_total_payoff is None else game.rounds * game.initial_pool,
        }
        game = replace(game, **{k: v for k, v in derived.items() if k not in overrides})
    if scenarios:
        # each GovSim scenario by its own rules (the adapter refused any it does not know)
        from ..published.govsim_log import scenario_convention

        rules = scenario_convention(scenarios[0], game.n_agents)
        game = replace(game, **{k: v for k, v in rules.items() if k not in overrides})
    return game
