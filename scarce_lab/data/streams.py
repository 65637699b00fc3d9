"""Whether a run's event stream is whole: the rules a loader checks on every run.

- ``seq`` counts 0, 1, 2... in file order (a repeated, reordered or removed line is
  an error, never a round counted twice);
- a run whose manifest says ``complete`` holds every event the recorder wrote
  (:func:`check_complete_run`).

:func:`scarce_lab.data.loaders.read_run_events` applies them line by line (with
``path:line`` errors); :func:`incomplete_streams` applies them to a whole
environment's fast-read frame at once and names the runs to re-read line by line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from .events import final_counts
from .jsonl import TrajectoryFileError
from .schema import RunManifest, RunStatus


def check_complete_run(path: Path, manifest: RunManifest, n_events: int, last_kind: str | None,
                       kind_counts: Mapping[str, int]) -> None:
    """A run whose manifest says ``complete`` must hold its whole event stream: the
    number of events the recorder wrote (``manifest.n_events``) and a last event that
    commits a round (``round_committed``). A run recorded before manifests counted
    their events must hold the events that end its game as many times as its config
    says (:func:`scarce_lab.data.events.final_counts`: one SovSim ``game_end``, a
    SCARCE ``subrun_end`` per subrun, an Economy ``episode_end`` per episode). A complete
    run with no events is refused too, even when its manifest says ``n_events`` 0: every
    config plays at least one round, so it is a run whose events were lost.

    Raises:
        TrajectoryFileError: naming ``path``, what the manifest says and what the file
            holds (a cut copy, a disk full while syncing, a hand edit).
    """
    if manifest.status != RunStatus.complete:
        return
    if manifest.n_events is not None and n_events != manifest.n_events:
        raise TrajectoryFileError(path, None, f"the run is complete with {manifest.n_events} events per its "
                                  f"manifest, but the file holds {n_events}")
    if last_kind != "round_committed":
        raise TrajectoryFileError(path, None, "the run is complete per its manifest, but its events "
                                  + (f"end with a {last_kind!r} event, not a committed round (the file was cut?)"
                                     if last_kind else "file is empty: every config plays at least one round, "
                                     "so a complete run without events is refused, as a cut one is"))
    if manifest.n_events is not None:
        return
    for kind, n in final_counts(manifest.environment, manifest.config).items():
        if kind_counts.get(kind, 0) != n:
            raise TrajectoryFileError(path, None, f"the run is complete per its manifest, whose config means "
                                      f"{n} {kind!r} event(s), but the file holds {kind_counts.get(kind, 0)} "
                                      "(the file was cut?)")


def incomplete_streams(events: pl.DataFrame, runs: list[tuple[int, Path, str]], manifests: list[RunManifest]
                        ) -> set[int]:
    """Positions of the fast-read runs whose stream breaks a rule of :func:`scarce_lab.data.loaders.read_run_events`
    (``seq`` not 0, 1, 2...; a complete run cut short, see :func:`check_complete_run`;
    no event at all): the per-line path re-reads them and raises the ``path:line``
    error."""
    order = pl.col("__pos")
    stats = events.group_by("__run").agg(n=pl.len(), seq_ok=(pl.col("seq").sort_by(order) == pl.int_range(pl.len())).all(),
                                         last=pl.col("kind").sort_by(order).last())
    want = pl.DataFrame({"__run": [pos for pos, _, _ in runs], "n_events": [manifests[pos].n_events for pos, _, _ in runs]},
                        schema={"__run": pl.Int64, "n_events": pl.Int64})
    n, expected = pl.col("n"), pl.col("n_events")
    checked = want.join(stats.with_columns(pl.col("__run").cast(pl.Int64)), on="__run", how="left").with_columns(
        bad=pl.when(n.is_null()).then(pl.lit(True))  # no event at all: refused, n_events 0 or not
        .otherwise(~pl.col("seq_ok") | (pl.col("last") != "round_committed") | (expected.is_not_null() & (n != expected))))
    bad = set(checked.filter(pl.col("bad"))["__run"].to_list())
    # runs recorded before n_events: their counts by kind against what their config means
    older = checked.filter(~pl.col("bad") & n.is_not_null() & expected.is_null())["__run"].to_list()
    if older:
        counts: dict[int, dict[str, int]] = {}
        for pos, kind, k in events.filter(pl.col("__run").is_in(older)).group_by("__run", "kind").len().iter_rows():
            counts.setdefault(pos, {})[kind] = k
        for pos in older:
            m = manifests[pos]
            if any(counts.get(pos, {}).get(k, 0) != v for k, v in final_counts(m.environment, m.config).items()):
                bad.add(pos)
    return bad
