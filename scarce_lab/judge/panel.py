"""The LLM-judge panel: K judges label units with a taxonomy; majority arbitration.

Running (:func:`run_panel`): concurrent (asyncio, bounded by ``concurrency``), cached
(the :class:`~scarce_lab.llm.LLMClient` caches every response), resumable (each
finished judgement is appended durably to ``judgements.jsonl`` in ``out_dir``; a rerun
skips the (unit, judge) pairs already there, except those without an answer, which are
retried: :meth:`~scarce_lab.judge.store.JudgementStore.done`, the rule Ray labelling
follows too), with a progress bar. An answer that gives no rating (invalid, ambiguous,
truncated, refusal...: :mod:`scarce_lab.judge.judging`) is kept as a judgement with
that status and does not vote (:mod:`scarce_lab.judge.arbitration`).

Output (:class:`PanelResult`): polars tables (:mod:`scarce_lab.judge.tables`). The
judges are :mod:`.judges`; a judge's answer :mod:`.answer`; one judgement
:mod:`.judging`; the panel's folder :mod:`.store`.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from .arbitration import default_min_votes
from .judges import JudgeSpec, panel_note
from .judging import Judgement, judge_unit
from .store import JudgementStore
from .tables import arbitrate_judgements, judgements_frame
from .taxonomy import Taxonomy
from .units import Unit


@dataclass
class PanelResult:
    """Everything a panel run produced (frames keyed by ``unit_id`` and
    ``(run_id, round, agent)``)."""

    taxonomy: Taxonomy
    judges: list[JudgeSpec]
    min_votes: int
    units: list[Unit]
    judgements: pl.DataFrame
    labels: pl.DataFrame
    votes: pl.DataFrame
    note: str
    raw: list[Judgement]

    def answers(self, judge: str) -> dict[str, list[str] | None]:
        """unit_id -> one judge's labels (``None`` for a missing rating or no judgement)."""
        none: dict[str, list[str] | None] = {u.unit_id: None for u in self.units}
        return none | {j.unit_id: j.labels for j in self.raw if j.judge == judge and j.votes}


# -- running -----------------------------------------------------------------------------
async def run_panel(
    units: Sequence[Unit],
    taxonomy: Taxonomy,
    judges: Sequence[JudgeSpec],
    *,
    client=None,
    out_dir: Path | None = None,
    min_votes: int | None = None,
    concurrency: int = 4,
    max_chars: int = 1200,
    progress: bool = True,
    call_kwargs: dict[str, dict[str, Any]] | None = None,
) -> PanelResult:
    """Label ``units`` with every judge, then arbitrate.

    Args:
        units: what to label (unit ids must be unique).
        taxonomy: the label set.
        judges: the panel (names must be unique); see :func:`make_judges`.
        client: an :class:`~scarce_lab.llm.LLMClient` (default: a new cached client).
        out_dir: folder for ``judgements.jsonl``, ``llm_calls.jsonl`` and ``panel.json``;
            when given, finished pairs found there are skipped (resume). ``None`` keeps
            everything in memory.
        min_votes: votes a label needs (default: majority of the panel).
        concurrency: (unit, judge) pairs in flight at once (embedded judges: one at a
            time, since the offline model serves one call per process).
        max_chars: clip each text in the prompt to this many characters.
        progress: show a tqdm progress bar.
        call_kwargs: judge name -> extra keyword arguments for the client call
            (``mock_response`` in tests, ``api_base`` for a local server).

    Raises:
        ValueError: duplicate unit ids or judge names, ``concurrency`` < 1, or an
            ``out_dir`` started with another taxonomy.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    names = [j.name for j in judges]
    if not judges or len(set(names)) != len(names):
        raise ValueError(f"judges: need at least one judge and unique names, got {names}")
    ids = [u.unit_id for u in units]
    if len(set(ids)) != len(ids):
        dup = sorted(i for i, n in Counter(ids).items() if n > 1)[:5]
        raise ValueError(f"units: duplicate unit ids {dup}")
    if client is None:
        from ..llm import make_client

        client = make_client(max_concurrency=concurrency)
    need = default_min_votes(len(judges)) if min_votes is None else min_votes
    note = panel_note(judges)
    store = JudgementStore(out_dir) if out_dir is not None else None
    done: dict[tuple[str, str], Judgement] = {}
    if store is not None:
        store.check_meta(
            {
                "taxonomy": taxonomy.id,
                "taxonomy_version": taxonomy.version,
                "judges": [j.model_dump() for j in judges],
                "min_votes": need,
                "note": note,
            }
        )
        done = store.done(set(ids), {j.key for j in judges})
    pending = [(u, j) for u in units for j in judges if (u.unit_id, j.key) not in done]
    from ..llm.models import is_embedded

    sem = asyncio.Semaphore(concurrency)
    # The embedded model runs one call at a time per process (behind a lock): queueing
    # more calls would only make them wait inside the client and hit its timeout.
    embedded_sem = asyncio.Semaphore(1)
    extra = call_kwargs or {}

    async def one(unit: Unit, judge: JudgeSpec):
        async with embedded_sem if is_embedded(judge.model) else sem:
            return await judge_unit(
                client, taxonomy, unit, judge, max_chars=max_chars, **extra.get(judge.name, {})
            )

    results: list[Judgement] = list(done.values())
    if pending:
        from tqdm.auto import tqdm

        with tqdm(total=len(pending), desc=f"judging ({len(judges)} judges)", disable=not progress) as bar:
            for fut in asyncio.as_completed([one(u, j) for u, j in pending]):
                judgement, calls = await fut
                if store is not None:
                    store.append(judgement, calls)
                results.append(judgement)
                bar.update(1)
    labels, votes = arbitrate_judgements(units, results, judges, taxonomy, min_votes=need)
    return PanelResult(
        taxonomy=taxonomy,
        judges=list(judges),
        min_votes=need,
        units=list(units),
        judgements=judgements_frame(results),
        labels=labels,
        votes=votes,
        note=note,
        raw=results,
    )


def label_units(
    units: Sequence[Unit], taxonomy: Taxonomy, judges: Sequence[JudgeSpec], **kwargs
) -> PanelResult:
    """Synchronous :func:`run_panel` (also inside Jupyter's running event loop)."""
    from ..llm.client import run_sync

    return run_sync(run_panel(units, taxonomy, judges, **kwargs))
