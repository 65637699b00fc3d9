"""CaSiNo loader: expert-labelled negotiation utterances as judge units.

Layout (the CaSiNo corpus, Chawla et al. 2021; any split such as
``casino_valid.json``): a JSON list of dialogues, each with ``dialogue_id``,
``chat_logs`` (``[{text, task_data, id}]``; deal actions ``Submit-Deal``,
``Accept-Deal``, ``Reject-Deal``, ``Walk-Away`` carry ``task_data``) and, for the
expert-labelled subset, ``annotations`` (``[[utterance_text, "label1,label2"], ...]``,
in utterance order, deal actions excluded; a few utterances may be left unannotated).

Each annotated utterance becomes a :class:`~scarce_lab.judge.units.Unit`:
``run_id`` = dialogue id, ``round`` = turn index in ``chat_logs``, ``agent`` = the
speaker (``mturk_agent_1``/``mturk_agent_2``), one message to the partner, the
``context_turns`` previous utterances as context, and the expert labels as ``gold``
(empty items, e.g. from a doubled comma, are dropped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..data.jsonl import read_json
from ..llm.quoting import quote
from .units import PrivateMessage, Unit

DEAL_ACTIONS = frozenset({"Submit-Deal", "Accept-Deal", "Reject-Deal", "Walk-Away"})
CASINO_FILE_ENV = "SCARCE_LAB_CASINO"


def default_casino_path() -> Path:
    """Where the CaSiNo validation split is looked for: ``$SCARCE_LAB_CASINO``, else
    ``<repo>/../shared/data/casino/casino_valid.json`` (the project's shared data).

    Raises:
        FileNotFoundError: neither exists (the message says to pass ``--data``).
    """
    import os

    repo = Path(__file__).resolve().parents[2]
    candidates = [*([Path(os.environ[CASINO_FILE_ENV])] if os.environ.get(CASINO_FILE_ENV) else []),
                  repo.parent / "shared" / "data" / "casino" / "casino_valid.json"]
    if found := next((c for c in candidates if c.exists()), None):
        return found
    raise FileNotFoundError(
        f"no CaSiNo file found (looked at {[str(c) for c in candidates]}); pass --data PATH "
        f"or set ${CASINO_FILE_ENV}"
    )


class Turn(BaseModel):
    """One entry of ``chat_logs``: an utterance or a deal action (its ``text``)."""

    model_config = ConfigDict(extra="ignore")

    text: str
    id: str = "?"
    task_data: dict[str, Any] | None = None


class Dialogue(BaseModel):
    """One CaSiNo dialogue (only the fields the loader reads; others are ignored).

    ``dialogue_id`` is kept as text (an integer id as its digits); ``annotations`` are
    ``[utterance_text, "label1,label2"]`` pairs.
    """

    model_config = ConfigDict(extra="ignore")

    dialogue_id: int | str | None = None
    chat_logs: list[Turn] = Field(default_factory=list)
    annotations: list[tuple[str, str]] | None = None


def _dialogue(raw: Any, index: int, path: Path) -> Dialogue:
    try:
        return Dialogue.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise ValueError(
            f"{path}: dialogue {index}: field {loc!r}: {err['msg']} (got {err.get('input')!r})"
        ) from exc


def load_casino(path: Path, *, context_turns: int = 2, limit: int | None = None) -> list[Unit]:
    """Annotated CaSiNo utterances as units with ``gold`` labels (file order).

    Each dialogue is read with an explicit schema (:class:`Dialogue`); a UTF-8 BOM is
    accepted.

    Args:
        path: a JSON file in the CaSiNo layout.
        context_turns: previous utterances shown as context (0 for none).
        limit: keep only the first ``limit`` units.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the file is not JSON or not a list of dialogues, a dialogue does
            not match :class:`Dialogue` (the message names dialogue, field and value), or
            a dialogue's annotations do not line up with its utterances (the message
            names the dialogue and turn).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"CaSiNo file does not exist: {path}")
    data = read_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of dialogues, got {type(data).__name__}")
    units: list[Unit] = []
    for d_i, raw in enumerate(data):
        dlg = _dialogue(raw, d_i, path)
        ann = dlg.annotations or []
        if not ann:
            continue
        did = str(d_i if dlg.dialogue_id is None else dlg.dialogue_id)
        turns = [(i, t) for i, t in enumerate(dlg.chat_logs) if t.text not in DEAL_ACTIONS]
        if len(ann) > len(turns):
            raise ValueError(
                f"{path}: dialogue {did}: {len(ann)} annotations but {len(turns)} utterances"
            )
        speakers = sorted({t.id for _, t in turns})
        pos = 0
        for k, (text, labels) in enumerate(ann):
            # Annotations follow the utterances in order but may skip some.
            while pos < len(turns) and turns[pos][1].text.strip() != text.strip():
                pos += 1
            if pos == len(turns):
                raise ValueError(
                    f"{path}: dialogue {did}, annotation {k}: text {text[:40]!r} matches no "
                    "later utterance of the dialogue"
                )
            turn_i, turn = turns[pos]
            speaker = turn.id
            partner = next((s for s in speakers if s != speaker), None)
            prev = turns[max(0, pos - context_turns) : pos] if context_turns else []
            pos += 1
            context = "\n".join(f"{t.id}: {quote(t.text)}" for _, t in prev)  # one line a turn
            units.append(
                Unit(
                    unit_id=f"{did}:{turn_i}:{speaker}",
                    run_id=did,
                    round=turn_i,
                    agent=speaker,
                    private_messages=[PrivateMessage(to=partner, text=text)],
                    context=context,
                    gold=[s.strip() for s in labels.split(",") if s.strip()],
                )
            )
            if limit is not None and len(units) >= limit:
                return units
    return units
