"""The gate every fork passes at its step: the replayed prefix is the parent's.

A fork replays its parent's prefix (model calls answered from the records, scripted
agents by determinism, environments' own I/O re-executed); anything that no longer
follows the parent (a changed package, a non-deterministic command, a scripted policy
that draws differently) would make the continuation a fork of some other run. So, when
the runner reaches the fork step and before it intervenes, :func:`check_prefix`
compares the fork's events so far with the parent's first as many, field by field,
leaving out only the run id, the call ids derived from it (:data:`RUN_IDS`) and the
fields the environment names as measurements (wall seconds), and raises
:class:`~scarce_lab.forks.ForkDivergedError` naming the first event that differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import ForkDivergedError

#: Payload fields that name records by the run id (a decision's ``call_ids``): a fork's
#: differ from its parent's by construction, so they are never compared.
RUN_IDS: tuple[str, ...] = ("call_ids",)


def check_prefix(recorder: Any, replay: Any, at: int, *, measured: Mapping[str, tuple[str, ...]] | None = None,
                 next_kind: str | None = None) -> int:
    """Check the fork's prefix against its parent's; returns the prefix's event count.

    Args:
        recorder: the fork's :class:`~scarce_lab.data.recorder.RunRecorder` (its events
            on disk and those not yet committed).
        replay: the parent's :class:`~scarce_lab.forks.replay.Replay` (``run_dir`` set);
            the parent's events are read through the read gate
            (:func:`scarce_lab.data.recorder.read_events`).
        at: the fork step.
        measured: ``event kind -> payload fields`` that are measurements, not play
            (SCARCE: an ``execution``'s ``duration_s``), left out of the comparison.
        next_kind: the kind the parent's next event must have (SCARCE:
            ``contention_start``); ``None``: any event of step ``at`` or later.

    Raises:
        ForkDivergedError: an event differs (its seq, kind, agent, step and the differing
            fields named), or the parent's next event is not the fork step's.
    """
    from ..data.recorder import read_events

    mine = read_events(recorder.run_dir) + recorder.pending()
    theirs = read_events(replay.run_dir)
    measured = measured or {}
    for a, b in zip(mine, theirs, strict=False):
        da, db = _play(a, measured), _play(b, measured)
        if da != db:
            diff = sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))
            raise ForkDivergedError(
                f"fork of {replay.run_id} at step {at}: the replayed prefix differs from the parent at event seq "
                f"{b.seq} ({b.kind}, agent {b.agent}, step {b.round}) in {diff}: the replay does not reproduce it")
    nxt = theirs[len(mine)] if len(mine) < len(theirs) else None
    ok = nxt is not None and (nxt.round is None or nxt.round >= at) and (next_kind is None or nxt.kind == next_kind)
    if not ok:
        what = "no event" if nxt is None else f"{nxt.kind} of step {nxt.round}"
        raise ForkDivergedError(f"fork of {replay.run_id} at step {at}: after the replayed prefix ({len(mine)} events) "
                                f"the parent's next event is {what}, not step {at}'s " + (next_kind or "first event"))
    return len(mine)


def _play(e: Any, measured: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """An event as the play made it (flat): without the run id and the measured fields."""
    out = e.model_dump(mode="json", exclude={"run_id"})
    skip = (*RUN_IDS, *measured.get(e.kind, ()))
    payload = {k: v for k, v in (out.pop("payload", None) or {}).items() if k not in skip}
    return out | {f"payload.{k}": v for k, v in payload.items()}
