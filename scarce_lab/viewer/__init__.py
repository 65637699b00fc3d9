"""Run viewer: one run as a self-contained HTML timeline (no network, no JavaScript).

``view(run)`` in a notebook shows the timeline inline; ``view(run).save("run.html")`` or
``scarce-lab view RUN --html run.html`` writes a static page. What it shows:

- SCARCE: per subrun, in time order, each worker's task, budget and deadline; each
  contention as one collapsible block (``<details>``) with its four phases as tables
  (declarations, public reasoning, private messages and silences, ballots), each row
  badged with who could see it ("public", "private, visible to w0, w1", "seen by the
  scheduler only"), bid revisions and refused actions, then the schedule and the
  payments; between contentions the slots with their commands, tool errors, memory
  saves, submissions (score, tests passed, deadline) and the subrun's balances.
- SovSim: the pool per round (a small inline SVG line with the collapse threshold) and,
  per round, each agent's extraction and reasoning, the leader marked.
- Every decision of a model (SovSim extraction, SCARCE declaration, reasoning, message,
  ballot) has a "model calls" row (``<details class="sl-calls">``): for each call behind
  it (the event's ``call_ids``) its id (``data-call-id``, the ``call_id`` of
  ``llm_calls`` and of :func:`scarce_lab.data.tables.calls.decision_calls`), outcome,
  the prompt it was shown and the raw answer.
- A fork beside its parent (``view(fork, beside="parent")``, :mod:`.beside`): two
  timelines aligned by step from the fork step on, the steps that differ marked.
- Economy of Minds: per episode the winning bids (auction events, when recorded) or the
  winners and what they paid, and the agents' wealth after each population snapshot.

Events are read through :func:`_events` only (typed, :mod:`scarce_lab.data.events`).
Everything is escaped; long texts are cut at ``max_chars`` with the number of
characters left out.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from .render import render_run


def _events(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The manifest (dict) and the typed events (as dicts with ``seq, round, phase,
    agent, kind, visibility, visible_to, t, payload``, ordered by ``seq``) of one run
    directory; older trajectory formats are migrated on read.

    Raises:
        FileNotFoundError: ``run_dir`` holds no manifest (:func:`_run_dir` found the one run).
    """
    from ..data.recorder import read_events, read_manifest

    m = read_manifest(run_dir)
    events = [e.model_dump(mode="json") for e in read_events(run_dir, m)]
    calls = _calls_by_id(run_dir, m.run_id)
    for e in events:  # a decision's model calls (schema 4: payload call_ids) travel with it
        ids = (e.get("payload") or {}).get("call_ids") or []
        if ids:
            e["calls"] = [calls.get(c, {"call_id": c, "outcome": "(no record of this call)"}) for c in ids]
    return m.model_dump(mode="json"), sorted(events, key=lambda e: e["seq"])


def _calls_by_id(run_dir: Path, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's model-call records (``llm_calls.jsonl``) by ``call_id``, each checked
    against :class:`~scarce_lab.data.schema.LLMCallRecord` and against the run's id
    (a torn last line is skipped, as by the loaders).

    Raises:
        TrajectoryFileError / pydantic.ValidationError: a line that is not a call record,
            or a record of another run (:func:`~scarce_lab.data.schema.check_run_id`).
    """
    from ..data.jsonl import iter_json_objects
    from ..data.recorder import LLM_CALLS
    from ..data.schema import LLMCallRecord, check_run_id

    path = Path(run_dir) / LLM_CALLS
    if not path.exists():
        return {}
    records = {}
    for lineno, obj in iter_json_objects(path):
        check_run_id(obj.get("run_id"), run_id, path, lineno)
        rec = LLMCallRecord.model_validate(obj).model_dump(mode="json")
        records[rec["call_id"]] = rec
    return records


def _run_dir(run: str | Path | Any, run_id: str | None) -> Path:
    """The run directory that ``run`` (a run folder, a dataset folder plus ``run_id``, or
    a loaders ``Dataset`` plus ``run_id``) names."""
    import polars as pl

    from ..data.loaders import find_run_dirs

    if hasattr(run, "runs") and hasattr(run, "events"):  # a loaders.Dataset
        if run_id is None:
            raise ValueError("view(dataset): pass run_id= (a dataset holds several runs)")
        dirs = run.runs.filter(pl.col("run_id") == run_id).select("run_dir").collect()
        if dirs.height == 0:
            raise ValueError(f"run_id {run_id!r} is not in this dataset")
        return Path(dirs["run_dir"][0])
    path = Path(run)
    if not path.exists():
        raise FileNotFoundError(f"run path {path} does not exist")
    if (path / "manifest.json").exists():
        return path
    dirs = find_run_dirs(path)
    if run_id is not None:
        hits = [d for d in dirs if d.name == run_id or _manifest_id(d) == run_id]
        if not hits:
            raise ValueError(f"run_id {run_id!r} not found under {path}")
        return hits[0]
    if len(dirs) == 1:
        return dirs[0]
    if not dirs:
        raise FileNotFoundError(f"no run (manifest.json) under {path}")
    names = ", ".join(sorted(d.name for d in dirs)[:10])
    raise ValueError(f"{path} holds {len(dirs)} runs; pass run_id= (e.g. {names})")


def _manifest_id(d: Path) -> str | None:
    try:
        return json.loads((d / "manifest.json").read_text(encoding="utf-8-sig")).get("run_id")
    except (OSError, ValueError):
        return None


class RunView:
    """One run rendered as HTML: displays inline in Jupyter (``_repr_html_``);
    :meth:`save` writes a self-contained page."""

    def __init__(self, run_dir: Path, body: str, title: str):
        self.run_dir = run_dir
        self.body = body
        self.title = title

    def _repr_html_(self) -> str:
        return self.body

    def page(self) -> str:
        """The full self-contained HTML page (no external resource)."""
        return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title></head><body>{self.body}</body></html>\n")

    def save(self, path: str | Path) -> Path:
        """Write :meth:`page` to ``path`` (folders created); returns the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.page(), encoding="utf-8")
        return p


def view(run: str | Path | Any, run_id: str | None = None, *, max_chars: int = 1500,
         beside: str | Path | None = None) -> RunView:
    """A :class:`RunView` of one run: ``run`` is a run directory, a dataset folder (with
    ``run_id`` when it holds several runs) or a ``scarce_lab.data.loaders.Dataset`` with
    ``run_id``. ``max_chars``: longest text shown in full (reasoning, stdout).

    ``beside``: for a fork (:mod:`scarce_lab.forks`), show it beside its parent from the
    fork step on (:mod:`.beside`): ``"parent"`` finds the parent among the fork's
    siblings; a path is the parent's run folder or a folder holding it.

    Raises:
        FileNotFoundError: the path does not exist or holds no run; ``beside``: no parent there.
        ValueError: several runs and no (or an unknown) ``run_id``; an environment the
            viewer does not know; ``beside`` for a run that is no fork, or a parent whose
            files changed since the fork.
    """
    run_dir = _run_dir(run, run_id)
    manifest, events = _events(run_dir)
    if beside is not None:
        from .beside import find_parent, render_beside

        fork = (manifest.get("config") or {}).get("fork")
        if not fork:
            raise ValueError(f"view(beside=...): run {manifest.get('run_id')} ({run_dir}) is no fork "
                             f"(its manifest's config has no fork)")
        parent_dir = find_parent(run_dir, fork, None if beside == "parent" else beside)
        body = render_beside(_events(parent_dir), (manifest, events), max_chars=min(max_chars, 300))
        return RunView(run_dir, body, f"{manifest.get('run_id')} beside its parent · scarce_lab run viewer")
    body = render_run(manifest, events, max_chars=max_chars)
    return RunView(run_dir, body, f"{manifest.get('run_id')} · scarce_lab run viewer")


__all__ = ["RunView", "view"]
