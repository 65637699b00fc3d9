"""SovSim tidy table: one row per agent-round (:data:`AGENT_ROUND_SCHEMA`), from our run
directories (:func:`from_dataset`) or any published layout (:data:`LAYOUT_FILES`, read
by :mod:`.published`; :func:`load_agent_rounds` detects the layout below a path).

Columns (pool units unless stated): ``source`` (layout), ``run_id`` (one per
simulation), ``model``, ``condition``, ``base_condition``, ``settings`` (see
:mod:`scarce_lab.data.tables`: the power condition cpr/bcpr/kcpr/kcpr_m, or GovSim's
environment name, as ``base_condition``; ``condition`` adds the settings that vary
among the loaded runs, e.g. ``kcpr,rounds=2``), ``simulation``, ``round`` (1-based),
``agent``, ``agent_index``, ``role``, ``is_leader``, ``n_agents``, ``pool_before`` (true
pool at the start of the round), ``announced_pool`` (kcpr_m), ``pool_seen`` (the pool as
presented to the agent: the announcement for kcpr_m subordinates), ``remainder_seen``
(leader rows: pool minus the subordinates' extractions, floored at 0),
``extraction``, ``payoff`` (points; GovSim: tons harvested), ``remaining`` (pool after
all extractions), ``collapsed`` (the round ended in collapse), ``reasoning``,
``valid`` / ``fallback_used`` (model answer validity, null where unknown).
"""

from __future__ import annotations

import warnings
from fnmatch import fnmatch
from functools import cached_property
from pathlib import Path

import polars as pl

from ...data.tables import label_conditions, settings_json
from .agent_rounds import AGENT_ROUND_SCHEMA, SORT_KEYS, SOVSIM_ROLES, agent_round_frame, in_order
from .published import ForcedDataWarning

_SUB_ROLE = {c: r[0] for c, r in SOVSIM_ROLES.items()}
_LEADER_ROLE = {c: r[1] for c, r in SOVSIM_ROLES.items()}


def _model_label(models: dict[str, str]) -> str:
    distinct = sorted(set(models.values()))
    return distinct[0] if len(distinct) == 1 else "+".join(distinct)


def from_dataset(ds) -> pl.DataFrame:
    """Agent-round table from our run directories (a :class:`~scarce_lab.data.loaders.Dataset`).

    One row per agent and settled round: the ``round`` events (exploded by agent)
    joined with each agent's ``extraction`` event (reasoning, validity, pool seen).
    Runs of other environments are ignored.
    """
    settings: dict[tuple, str] = {}  # few distinct settings among many runs: each written once

    def canonical(cs: dict) -> str | None:
        if not cs:
            return None
        try:
            key = tuple((k, type(v), v) for k, v in cs.items())  # 1, 1.0 and True hash alike
            return settings[key] if key in settings else settings.setdefault(key, settings_json(cs))
        except TypeError:  # an unhashable value (a list)
            return settings_json(cs)

    meta = [
        {
            "run_id": m.run_id,
            "model": _model_label(m.models),
            "condition": m.condition,
            "base_condition": m.condition_settings.get("condition", m.condition),
            "settings": canonical(m.condition_settings),
            "simulation": m.config.get("simulation"),
            "leader": m.notes.get("leader"),
            "roles": [{"agent": a, "role": r} for a, r in (m.notes.get("roles") or {}).items()],
        }
        for m in ds.manifests
        if m.environment == "sovsim"
    ]
    if not meta:
        return agent_round_frame([])
    runs = pl.DataFrame(meta, schema={
        "run_id": pl.String, "model": pl.String, "condition": pl.String, "base_condition": pl.String,
        "settings": pl.String, "simulation": pl.Int64, "leader": pl.String,
        "roles": pl.List(pl.Struct({"agent": pl.String, "role": pl.String})),
    })
    roles = runs.select("run_id", "roles").explode("roles").unnest("roles").drop_nulls("agent")
    rounds = (
        ds.payloads("round", "sovsim").collect()
        .select("run_id", "round", "agents", "pool_before", "announced_pool", "extractions", "payoffs",
                "remainder_seen", "remaining", "collapsed")
        .with_columns(agent_index=pl.int_ranges(pl.col("agents").list.len()), n_agents=pl.col("agents").list.len())
        .explode("agents", "extractions", "payoffs", "agent_index")
        .rename({"agents": "agent", "extractions": "extraction", "payoffs": "payoff"})
    )
    decisions = (
        ds.payloads("extraction", "sovsim").collect()
        .select("run_id", "round", "agent", "pool_seen", "reasoning", "valid", "fallback_used")
    )
    df = (
        rounds.join(runs.drop("roles"), on="run_id", how="inner")
        .join(roles, on=["run_id", "agent"], how="left")
        .join(decisions, on=["run_id", "round", "agent"], how="left")
        .with_columns(
            source=pl.lit("scarce_lab"),
            # the leader is the last agent of its round (events docstring): with a newcomer the
            # leader's seat can change hands, so it is read per round, not from the manifest
            is_leader=(pl.col("agent_index") == pl.col("n_agents") - 1) & pl.col("leader").is_not_null(),
            pool_seen=pl.coalesce("pool_seen", "pool_before"),
        )
        .with_columns(role=pl.when(pl.col("is_leader"))
                      .then(pl.col("base_condition").replace_strict(_LEADER_ROLE, default=pl.col("role")))
                      .otherwise(pl.col("base_condition").replace_strict(_SUB_ROLE, default=pl.col("role"))))
        .with_columns(remainder_seen=pl.when(pl.col("is_leader")).then(pl.col("remainder_seen")))
    )
    return df.select([pl.col(k).cast(t) for k, t in AGENT_ROUND_SCHEMA.items()]).sort(*SORT_KEYS)


#: Layouts :func:`load_agent_rounds` reads, by the file that marks them.
LAYOUT_FILES = {
    "runs": "manifest.json",
    "sovsim_json": "rationales.json",
    "sovsim_run": "sim_*.json",
    "govsim_log": "log_env.json",
}


class MixedLayoutsError(ValueError):
    """A folder holds several trajectory layouts (the message names them and a file of
    each); load them separately, or pass ``force=True``."""


def detect_layout(path: Path, layout: str) -> list[Path]:
    """Files of ``layout`` (a :data:`LAYOUT_FILES` key) at or below ``path``, sorted: run
    folders for ``runs`` (:func:`~scarce_lab.data.loaders.scan_folder`), the marking
    files for the others (one :func:`~scarce_lab.data.loaders.walk_tree` walk, shared
    by every layout inside :func:`~scarce_lab.data.loaders.one_walk`). ``sim_XX.json`` files below
    a folder count only when their parent folder is named after a SovSim condition (the
    authors' ``<model>/<condition>/`` layout).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        KeyError: an unknown layout.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset path does not exist: {path}")
    from ...data.loaders import scan_folder, walk_tree

    pattern = LAYOUT_FILES[layout]
    if path.is_file():
        found = [path] if fnmatch(path.name, pattern) else []
        return [p.parent for p in found] if layout == "runs" else found
    if layout == "runs":
        return scan_folder(path)[0]
    return [p for p in walk_tree(path).matching(pattern) if layout != "sovsim_run" or p.parent.name in SOVSIM_ROLES]


def detect_layouts(path: Path) -> dict[str, list[Path]]:
    """Files of each supported layout at or below ``path`` (:func:`detect_layout` of
    every :data:`LAYOUT_FILES` key; lists may be empty).

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    from ...data.loaders import one_walk

    with one_walk():
        return {layout: detect_layout(path, layout) for layout in LAYOUT_FILES}


class SovSimTables:
    """The SovSim view of a dataset (``ds.sovsim``, :class:`~scarce_lab.data.loaders.Dataset`):
    its tidy tables, each computed when first read.

    Attributes:
        agent_rounds: one row per agent and round (:data:`AGENT_ROUND_SCHEMA`),
            conditions labelled by the settings that vary among the runs: our runs'
            table (:func:`from_dataset`), or a published layout's as its reader gave it
            (:func:`load_agent_rounds`).
    """

    def __init__(self, ds) -> None:
        self.dataset = ds

    @cached_property
    def agent_rounds(self) -> pl.DataFrame:
        if "agent_rounds" in self.dataset.published_tables:
            return self.dataset.published_tables["agent_rounds"]
        return label_conditions(from_dataset(self.dataset), skip=("condition", "seats"))


def _rel(p: Path, root: Path) -> str:
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.as_posix()


#: Version of the readers' output: part of the cache fingerprint, so a table cached by
#: an older reader (other run ids or condition settings) is rebuilt.
READER_VERSION = 2


def load_agent_rounds(
    path: Path | str, *, include_incomplete: bool = True, force: bool = False, cache: bool | None = None,
    lazy: bool = False,
) -> pl.DataFrame | pl.LazyFrame:
    """The agent-round table for every supported file at or below ``path``.

    Layouts are detected from file names (:data:`LAYOUT_FILES`). A folder that mixes
    layouts is refused: their runs carry different amounts of configuration, and the
    same model and condition names in two layouts are not the same condition. With
    ``force`` they are concatenated after a :class:`ForcedDataWarning`; the rows keep
    their ``source``, and the tables never pool two sources.

    ``cache``: keep the table as Parquet and read it from there while no source file
    changed (:mod:`scarce_lab.data.parquet`; ``None``: ``SCARCE_LAB_CACHE``); a forced load
    is never cached (its warnings must be seen every time). ``lazy``: return a LazyFrame
    (with the cache, a scan of its Parquet files, so a table that needs a few columns
    reads only those).

    Raises:
        FileNotFoundError: ``path`` does not exist or holds no supported file.
        MixedLayoutsError: several layouts below ``path`` and not ``force``.
        GovSimConfigError: a GovSim run without its configuration (unless ``force``).
        TrajectoryFileError / ValueError: a file is corrupt (message names the file).
    """
    from ...data.loaders import one_walk

    if include_incomplete and not force and Path(path).is_dir():
        sealed = _sealed(Path(path))
        if sealed is not None:
            scan, identity = sealed
            if not lazy:
                return scan.collect()
            from ...data.parquet import cache_dir, cache_enabled
            from .simcache import remember

            return remember(scan, cache_dir("sovsim_sims", path), identity) if cache_enabled(cache) else scan
    with one_walk():  # layouts, the cache's file list and the run folders: one walk of the tree
        return _load_agent_rounds(path, include_incomplete=include_incomplete, force=force, cache=cache, lazy=lazy)


def sealed_agent_rounds(ds) -> pl.DataFrame:
    """The table :func:`load_agent_rounds` returns for a folder of our runs, from its
    dataset ``ds``: what a sweep's seal holds (registry ``sealed_tables``)."""
    return in_order(label_conditions(from_dataset(ds), skip=("condition", "seats")))


def _sealed(path: Path) -> tuple[pl.LazyFrame, str] | None:
    """The table of the sweep folder ``path`` from its seal (:mod:`scarce_lab.data.sweep_seal`,
    :func:`sealed_agent_rounds` when the sweep ended, served only while every run folder
    is as sealed) as a lazy scan, with the seal's digest; ``None`` when there is no seal
    or it does not hold (then a ``SealIgnoredWarning`` says why)."""
    from ...data.sweep_seal import SealIgnoredWarning, read_sealed

    got = read_sealed(path, "sovsim/agent_rounds", AGENT_ROUND_SCHEMA)
    if got is None:
        return None
    scan, others, identity = got
    marked = [n for n in others for layout, pat in LAYOUT_FILES.items() if layout != "runs" and fnmatch(n, pat)]
    if marked:  # the folder's own read refuses (or forces) the mix: it decides
        warnings.warn(SealIgnoredWarning(f"{path}: its seal is not used: the folder also holds {marked[:3]} "
                                         "(another layout)"), stacklevel=3)
        return None
    return scan, identity


def _load_agent_rounds(path: Path | str, *, include_incomplete: bool, force: bool, cache: bool | None, lazy: bool
                       ) -> pl.DataFrame | pl.LazyFrame:
    from ...data.loaders import load_dataset, walk_tree
    from ...data.parquet import cache_enabled, cached_frame, layout_files
    from .published.govsim_log import read_govsim_logs
    from .published.sovsim_json import read_rationales_many, scan_rationales_many
    from .published.sovsim_runs import read_sim_file

    found = detect_layouts(Path(path))
    present = {k: v for k, v in found.items() if v}
    if len(present) > 1:
        msg = f"{path} mixes trajectory layouts: " + "; ".join(
            f"{k} ({len(v)} files, e.g. {v[0]})" for k, v in present.items())
        if not force:
            raise MixedLayoutsError(msg + "; load them separately (or pass force=True / --force)")
        warnings.warn(ForcedDataWarning(f"FORCED: {msg}; concatenated, each row keeps its source"), stacklevel=2)
    if cache_enabled(cache) and not force:
        scan = cached_frame(
            "sovsim_agent_rounds", path, [*layout_files(found, walk_tree(path) if Path(path).is_dir() else None),
                                          *found["sovsim_run"]],
            lambda: load_agent_rounds(path, include_incomplete=include_incomplete, cache=False),
            partition_by=("source", "model"),
            options={"include_incomplete": include_incomplete, "reader": READER_VERSION},
        )
        if not lazy:
            return scan.collect()
        from ...data.parquet import cache_dir
        from .simcache import cache_identity, remember

        folder = cache_dir("sovsim_agent_rounds", path)
        identity = cache_identity(folder)
        return scan if identity is None else remember(scan, folder, identity)
    base = Path(path) if Path(path).is_dir() else Path(path).parent.parent.parent
    if lazy and set(present) == {"sovsim_json"}:
        # read when collected, only the columns the query uses; its rows come in the table's
        # order and carry no settings, so in_order and label_conditions leave them as they are
        return scan_rationales_many(found["sovsim_json"], root=base)
    if lazy:
        return load_agent_rounds(path, include_incomplete=include_incomplete, force=force, cache=False).lazy()
    frames: list[pl.DataFrame] = []
    if found["runs"]:
        root = Path(path) if Path(path).is_dir() else Path(path).parent
        ds = load_dataset(root, include_incomplete=include_incomplete)
        if "sovsim" in ds.environments:
            frames.append(from_dataset(ds))
    if found["sovsim_json"]:
        frames.append(read_rationales_many(found["sovsim_json"], root=base))
    if found["sovsim_run"]:
        frames.append(pl.concat([read_sim_file(p, run_id="sovsim_run:" + _rel(p.with_suffix(""), base))
                                 for p in found["sovsim_run"]]))
    if found["govsim_log"]:
        frames.append(read_govsim_logs(found["govsim_log"], force=force))
    if not frames:
        raise FileNotFoundError(
            f"no SovSim data below {path}: expected run directories (manifest.json), "
            "rationales.json, <condition>/sim_XX.json or log_env.json files"
        )
    return in_order(label_conditions(pl.concat(frames) if len(frames) > 1 else frames[0], skip=("condition", "seats")))
