"""Commons talk as judge units (SovSim ``talk`` events).

A unit is one agent's messages in one round's discussion (``run_id, round, agent``):
``private_messages`` holds each message it posted (``to`` = the recipients' ids joined
by ``", "`` for a private message, ``None`` for a public one); ``context`` the round's
pool as the agent saw it and the messages it had seen before speaking (public ones
and private ones it sent or received: only what the agent could see, by the events'
``visible_to``). Silences are no unit. The same panel, arbitration, agreement
statistics and storage as SCARCE's label them (:func:`scarce_lab.judge.panel.run_panel`),
with the taxonomy ``commons``: the SovSim spec names :func:`commons_units` as its
``judge_units`` and ``commons`` as its taxonomy, so
:func:`scarce_lab.judge.units.units_from_path` and ``scarce-lab judge label`` /
``judge validate`` build these units from a folder of SovSim runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from ...judge.units import PrivateMessage, Unit, make_unit_id
from ...llm.quoting import quote

#: What the scripted talkers' messages are written to express, by the tag they carry
#: (:mod:`.agents.scripted`: ``promise_defector`` promises, ``quota_keeper`` proposes a
#: quota, each appealing to the pool's survival): the ground truth of ``gold="intended"``.
INTENDED: dict[str, tuple[str, ...]] = {
    r"\[promise extraction=\d+\]": ("promise", "sustainability_appeal"),
    r"\[quota per_agent=\d+\]": ("quota_proposal", "sustainability_appeal"),
}


def _intended(texts: list[str], unit_id: str) -> list[str]:
    import re

    out: list[str] = []
    for text in texts:
        hits = [cats for pat, cats in INTENDED.items() if re.search(pat, text)]
        if not hits:
            raise ValueError(f"unit {unit_id}: message {text[:60]!r} carries no scripted tag, so it has no "
                             "intended categories (gold='intended' is for scripted talkers only)")
        for cats in hits:
            out.extend(c for c in cats if c not in out)
    return out


def commons_units(data: Any, *, keep_empty: bool = False, gold: str | None = None) -> list[Unit]:
    """Units from the ``talk`` events of SovSim runs (see the module docstring).

    Args:
        data: a dataset folder (read with :func:`scarce_lab.data.loaders.load_dataset`)
            or a loaded :class:`~scarce_lab.data.loaders.Dataset`.
        keep_empty: keep agent-rounds whose every turn was a silence (no text).
        gold: ``"intended"`` sets each unit's ``gold`` to what the scripted talkers'
            texts are written to express (:data:`INTENDED`), so
            :func:`scarce_lab.judge.validation.validate_panel` scores a panel on them.

    Raises:
        ValueError: the data hold no SovSim talk events (a run with ``talk=none``);
            ``gold`` not ``None``/``"intended"``; with ``gold="intended"``, a message
            without a scripted tag (a model's: its categories are unknown).
    """
    if gold not in (None, "intended"):
        raise ValueError(f"gold must be None or 'intended', got {gold!r}")
    if isinstance(data, str | Path):
        from ...data.loaders import load_dataset

        data = load_dataset(Path(data))
    try:
        talk = data.payloads("talk", "sovsim").collect()
    except KeyError:
        talk = pl.DataFrame()
    if talk.is_empty():
        raise ValueError("no SovSim talk events in the data (runs with talk=none have none)")
    rounds = data.payloads("round", "sovsim").collect().select("run_id", "round", "pool_before", "announced_pool")
    talk = talk.sort("run_id", "seq")
    units: list[Unit] = []
    for (run_id, rnd, agent), g in talk.group_by("run_id", "round", "agent", maintain_order=True):
        said = [r for r in g.iter_rows(named=True) if r["text"]]
        if not said and not keep_empty:
            continue
        first_seq = g["seq"].min()
        seen = talk.filter((pl.col("run_id") == run_id) & (pl.col("round") == rnd) & (pl.col("seq") < first_seq)
                           & (pl.col("text") != ""))
        lines = []
        for r in seen.iter_rows(named=True):
            if not r["recipients"]:
                lines.append(f"{r['agent']} (to everyone): {quote(r['text'])}")
            elif agent == r["agent"] or agent in r["recipients"]:  # the event's visible_to
                lines.append(f"{r['agent']} (privately to {', '.join(r['recipients'])}): {quote(r['text'])}")
        pool = rounds.filter((pl.col("run_id") == run_id) & (pl.col("round") == rnd))
        head = f"Round {rnd}."
        if pool.height:
            p = pool.row(0, named=True)
            head += f" Pool at the start: {p['pool_before']} units" + (
                f" (announced: {p['announced_pool']})." if p["announced_pool"] is not None else ".")
        context = "\n".join([head, *(["Messages seen before speaking:", *lines] if lines else [])])
        units.append(Unit(
            unit_id=make_unit_id(run_id, rnd, agent), run_id=run_id, round=rnd, agent=agent, context=context,
            private_messages=[PrivateMessage(to=", ".join(r["recipients"]) or None, text=r["text"]) for r in said],
            gold=_intended([r["text"] for r in said], make_unit_id(run_id, rnd, agent)) if gold else None,
        ))
    return units
