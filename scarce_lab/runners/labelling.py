"""Labelling units with a judge panel into a folder (what ``scarce-lab judge label``
writes, and a study's ``OUT/labels/``): the judgements (resumable: a unit and judge
pair already in the folder is not sent again), then the arbitrated labels, votes,
agreement, institutions and drift tables.

Files written to ``out``: ``judgements.jsonl`` and ``llm_calls.jsonl`` (the store),
``panel.json``, ``units.parquet``, ``labels.parquet`` (one row per unit),
``votes.parquet``, ``agreement.csv``, ``institutions.parquet`` and ``drift.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Labelled:
    """What :func:`label_to` made: the panel's result (``res``: judgements, labels,
    votes), the agreement table and the institutions table."""

    res: Any
    agreement: Any
    institutions: Any


def client_settings(*, concurrency: int = 4, cache_dir: Path | None = None, api_base: str | None = None,
                    temperature: float = 0.0, timeout_s: float = 600.0) -> dict:
    """The judges' client settings (:func:`scarce_lab.llm.make_client`'s arguments; a
    Ray task builds its own client from them)."""
    return {"max_concurrency": concurrency, "cache_dir": cache_dir, "api_base": api_base,
            "temperature": temperature, "timeout_s": timeout_s}


def label_to(units: list[Any], taxonomy: Any, judges: list[Any], out: Path, *, settings: dict,
             client: Any = None, min_votes: int | None = None, concurrency: int = 4, n_boot: int = 1000, seed: int = 0,
             executor: str = "local", address: str | None = None, progress: bool = True) -> Labelled:
    """Label ``units`` (:class:`scarce_lab.judge.units.Unit`) with ``judges``
    (:class:`scarce_lab.judge.judges.JudgeSpec`) under ``taxonomy`` into ``out`` (the
    module docstring's files). With ``executor="ray"`` the units of each run not yet
    judged go out as one Ray task each; the arbitration and the tables are made here.
    ``client``: the model client of the local judging (default: one built from
    ``settings``, :func:`client_settings`).

    Raises:
        ExecutorError: Ray missing or unreachable.
        ValueError: ``out`` holds judgements of another taxonomy or panel.
    """
    from ..data.csvsafe import frame_to_csv
    from ..judge.agreement import label_agreement
    from ..judge.drift import drift_table, units_text_frame
    from ..judge.institutions import institutions
    from ..judge.panel import label_units
    from ..judge.units import units_to_frame
    from ..llm import make_client

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if executor == "ray":
        from .executors import judge_on_ray

        judge_on_ray(units, taxonomy, judges, out, client_settings=settings, address=address, progress=progress,
                     panel_kwargs={"min_votes": min_votes, "concurrency": concurrency})
    res = label_units(units, taxonomy, judges, client=client if client is not None else make_client(**settings), out_dir=out, min_votes=min_votes,
                      concurrency=concurrency, progress=progress)
    unit_frame = units_to_frame(units)
    unit_frame.write_parquet(out / "units.parquet")
    res.labels.write_parquet(out / "labels.parquet")
    res.votes.write_parquet(out / "votes.parquet")
    answers = {j.name: res.answers(j.name) for j in judges}
    agree = label_agreement(answers, taxonomy.ids, [u.unit_id for u in units], n_boot=n_boot, seed=seed)
    frame_to_csv(agree, out / "agreement.csv")
    inst = institutions(res.labels, taxonomy, recipients=unit_frame)
    inst.write_parquet(out / "institutions.parquet")
    frame_to_csv(drift_table(units_text_frame(units)), out / "drift.csv")
    return Labelled(res, agree, inst)
