"""Judging one unit: the prompt, the call, and the judgement with its outcome.

:func:`judge_unit` asks one judge about one unit through
:meth:`~scarce_lab.llm.LLMClient.adecide` (schema :func:`~.answer.answer_schema`, one
repair attempt by the client) and returns a :class:`Judgement`.

Outcomes (``Judgement.status``). Only ``ok`` and ``repaired``
are ratings; every other status is a **missing rating** and never votes:

- ``ok``: the first answer validated; ``repaired``: the answer after the client's
  repair (or retry) attempt validated. Unknown labels in such an answer are listed in
  ``invalid_labels`` while its valid labels count.
- ``invalid_label``: the answer validated but every label it gave is unknown (no valid
  label is left to count, and "no category" is not what the judge said).
- ``unsupported_evidence``: every valid label cites evidence that is absent from the
  utterance (from each of the unit's own texts, its public reasoning and each private
  message, never the rendered prompt nor across two texts; a judge once
  quoted the prompt's placeholder). A label whose cited evidence is absent is rejected
  (listed in ``rejected_labels``) also when others stand; a label that cites nothing
  is kept (``evidence_found`` is false for it).
- ``invalid`` (not the schema: no ``labels``, ``{}``, bad JSON), ``ambiguous``
  (several different valid answers in the text and none final, e.g. a quoted verdict
  before the real one), ``truncated`` (cut off at ``max_tokens``), ``refusal``,
  ``empty``, ``tool_call`` (an unusable tool call instead of text), and the
  *no-answer* statuses (:data:`NO_ANSWER_STATUSES`: ``transport_error``,
  ``context_overflow`` (the prompt does not fit the model's context; found by the
  client before sending), ``request_refused``, ``cost_cap``, ``model_mismatch``), which a panel retries
  when it resumes. Any other outcome the client reports is kept as reported
  (and does not vote).

A judgement's status, when no answer validated, is the outcome of the first call that
got an answer (the model's answer to the question, not to the repair prompt), or the
last call's no-answer outcome when none did. ``call_outcomes`` lists every call's outcome. Call
outcomes come from the client's record (``LLMCallRecord.outcome``) where it has one,
else they are derived from the record (no response and an exception's error text,
``"<ExceptionClass>: ..."``: ``transport_error``;
``finish_reason == "length"``: ``truncated``; no text: ``empty`` or ``tool_call``; a
parse error starting with "ambiguous": ``ambiguous``; otherwise ``invalid``).
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..llm.quoting import template_env
from .answer import answer_schema
from .judges import JudgeSpec
from .taxonomy import Taxonomy
from .units import Unit

PROMPT_DIR = Path(__file__).parent / "prompts"

#: Statuses that are ratings (they vote in arbitration).
RATING_STATUSES = frozenset({"ok", "repaired"})
#: Every status this module gives (see the module docstring).
JUDGE_STATUSES = (
    "ok",
    "repaired",
    "invalid_label",
    "invalid",
    "ambiguous",
    "truncated",
    "refusal",
    "empty",
    "tool_call",
    "unsupported_evidence",
    "text_for_tool",
    "transport_error",
    "context_overflow",
    "request_refused",
    "cost_cap",
    "model_mismatch",
)
#: Statuses with no answer from the model at all (retried when a panel resumes).
NO_ANSWER_STATUSES = frozenset({"transport_error", "context_overflow", "request_refused", "cost_cap",
                                "model_mismatch"})
#: Status names of judgements stored before the outcome split.
LEGACY_STATUSES = {"unparseable": "invalid", "error": "transport_error"}
#: Invalid labels are kept up to this many characters each (the raw answer is in the
#: call records).
MAX_INVALID_LABEL_CHARS = 100

_env = template_env(PROMPT_DIR, keep_trailing_newline=False, autoescape=False)


# -- prompts -----------------------------------------------------------------------------
def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def render_messages(
    taxonomy: Taxonomy, unit: Unit, judge: JudgeSpec, *, max_chars: int = 1200
) -> list[dict[str, str]]:
    """Chat messages for one judge and one unit (templates ``prompts/system.j2`` and
    ``prompts/unit.j2``). Long texts are clipped to ``max_chars`` characters each, then
    shown through :mod:`scarce_lab.llm.quoting`: reasoning and messages quoted, ids as
    names, the context as a block quote (a units file may hold any text)."""
    cats = list(taxonomy.categories)
    if judge.variant:
        random.Random(f"variant:{judge.variant}").shuffle(cats)
    system = _env.get_template("system.j2").render(
        taxonomy=taxonomy,
        categories=cats,
        detail=judge.detail,
        max_labels=judge.max_labels,
        max_evidence=judge.max_evidence,
    )
    user = _env.get_template("unit.j2").render(
        unit=unit,
        context=_clip(unit.context, max_chars),
        reasoning=_clip(unit.public_reasoning, max_chars),
        messages=[{"to": m.to, "text": _clip(m.text, max_chars)} for m in unit.private_messages],
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def unit_seed(judge: JudgeSpec, unit_id: str) -> int:
    """Deterministic per-(judge, unit) seed in [0, 2**31)."""
    digest = hashlib.sha256(f"{judge.seed}:{unit_id}".encode()).hexdigest()
    return int(digest[:8], 16) % 2**31


_WORD = re.compile(r"[a-z0-9]+")


def evidence_found(evidence: str, unit: Unit, *, context: bool = True) -> bool:
    """True when the quote's words appear, in order, inside ONE of the unit's own texts
    (case and punctuation ignored): its public reasoning, one of its private messages
    and, with ``context``, the context around it. The texts are the unit's fields, never
    the rendered prompt, so a quote that spans two texts or takes the prompt's own words
    (``Speaker``, ``to w2``, the question) is not found. An empty quote is never found."""
    quote = " ".join(_WORD.findall(evidence.lower()))
    if not quote:
        return False
    texts = [unit.public_reasoning, *(m.text for m in unit.private_messages), *([unit.context] if context else [])]
    return any(quote in " ".join(_WORD.findall(t.lower())) for t in texts)


# -- judgements --------------------------------------------------------------------------
class Judgement(BaseModel):
    """One judge's answer to one unit (one line of ``judgements.jsonl``).

    ``status``: see the module docstring (only ``ok``/``repaired`` vote); older files'
    ``unparseable`` reads as ``invalid`` and ``error`` as ``transport_error``.
    ``labels``: the valid labels (taxonomy ids); ``invalid_labels``: labels given that
    are not ids (each cut to :data:`MAX_INVALID_LABEL_CHARS`); ``call_outcomes``: the
    outcome of each model call. Units: ``latency_s`` seconds, ``cost_usd`` US dollars,
    tokens for the token counts.
    """

    model_config = ConfigDict(extra="forbid")

    unit_id: str
    run_id: str
    round: int
    agent: str
    judge: str
    judge_key: str
    model: str
    status: str = Field(pattern=r"^[a-z][a-z_]*$")
    labels: list[str] = Field(default_factory=list)
    invalid_labels: list[str] = Field(default_factory=list)
    rejected_labels: list[str] = Field(default_factory=list)
    evidence: dict[str, str] = Field(default_factory=dict)
    evidence_found: dict[str, bool] = Field(default_factory=dict)
    violation: str | None = None
    call_outcomes: list[str] = Field(default_factory=list)
    n_calls: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    cost_usd: float | None = None
    cache_hit: bool = False

    @field_validator("status", mode="before")
    @classmethod
    def _legacy(cls, value: Any) -> Any:
        return LEGACY_STATUSES.get(value, value) if isinstance(value, str) else value

    @property
    def votes(self) -> bool:
        """True when this judgement is a rating (counts in arbitration)."""
        return self.status in RATING_STATUSES


_AMBIGUOUS = re.compile(r"\s*ambiguous\b", re.IGNORECASE)
# The client records a transport failure as "<ExceptionClass>: message".
_TRANSPORT = re.compile(r"[\w.]*(?:Error|Exception|Timeout): ")


def call_outcome(record: Any) -> str:
    """The outcome of one model call (rules: module docstring)."""
    outcome = getattr(record, "outcome", None)
    error = getattr(record, "error", None) or ""
    if not outcome:
        text = record.raw_response
        if text is None and not record.tool_calls and _TRANSPORT.match(error):
            outcome = "transport_error"
        elif getattr(record, "finish_reason", None) == "length":
            outcome = "truncated"
        elif record.parsed is not None:
            outcome = "ok"
        elif text is None or not text.strip():
            outcome = "tool_call" if record.tool_calls else "empty"
        else:
            outcome = "invalid"
    if outcome == "invalid" and _AMBIGUOUS.match(error):
        outcome = "ambiguous"
    return str(outcome)


def _sum(values):
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def _status(out: Any, outcomes: list[str], valid: bool, n_valid_labels: int, n_invalid: int) -> str:
    if valid:
        if n_invalid and not n_valid_labels:
            return "invalid_label"
        return "repaired" if out.repaired else "ok"
    answered = [o for o in outcomes if o not in NO_ANSWER_STATUSES]
    if not answered:
        return outcomes[-1] if outcomes else "transport_error"
    first = answered[0]
    # A call that parsed but did not end in a decision (e.g. a client rule) is no rating.
    return "invalid" if first in RATING_STATUSES else first


async def judge_unit(
    client,
    taxonomy: Taxonomy,
    unit: Unit,
    judge: JudgeSpec,
    *,
    max_chars: int = 1200,
    **call_kwargs: Any,
) -> tuple[Judgement, list]:
    """Ask one judge about one unit; returns the judgement and the LLM call records.

    When no answer validates, the judgement has no labels and a missing-rating status
    (module docstring); the client's fallback value is never used as a rating.
    ``call_kwargs`` go to :meth:`LLMClient.adecide` (e.g. ``mock_response`` in tests).
    """
    from ..llm import CallContext

    schema = answer_schema(taxonomy, max_labels=judge.max_labels, max_evidence=judge.max_evidence)
    out = await client.adecide(
        model=judge.model,
        messages=render_messages(taxonomy, unit, judge, max_chars=max_chars),
        schema=schema,
        fallback=schema(labels=[]),
        seed=unit_seed(judge, unit.unit_id),
        context=CallContext(
            agent=unit.agent, round=unit.round, run_id=unit.run_id, purpose=f"judge:{judge.name}"
        ),
        max_tokens=judge.answer_tokens,
        temperature=judge.temperature,
        **call_kwargs,
    )
    calls = list(out.calls)
    outcomes = [call_outcome(c) for c in calls]
    valid = bool(out.valid) and not out.fallback_used and out.decision is not None
    items = out.decision.valid_items() if valid else []
    invalid = out.decision.invalid_labels() if valid else []
    evidence = {it.label: it.evidence for it in items}
    rejected = [lab for lab, q in evidence.items() if _WORD.search(q or "") and not evidence_found(q, unit, context=False)]
    evidence = {lab: q for lab, q in evidence.items() if lab not in rejected}
    j = Judgement(
        unit_id=unit.unit_id,
        run_id=unit.run_id,
        round=unit.round,
        agent=unit.agent,
        judge=judge.name,
        judge_key=judge.key,
        model=judge.model,
        status=("unsupported_evidence" if valid and items and len(rejected) == len(items)
                else _status(out, outcomes, valid, len(items), len(invalid))),
        labels=list(evidence),
        invalid_labels=[lab[:MAX_INVALID_LABEL_CHARS] for lab in invalid],
        rejected_labels=rejected,
        evidence=evidence,
        evidence_found={lab: evidence_found(q, unit) for lab, q in evidence.items()},
        violation=out.violation,
        call_outcomes=outcomes,
        n_calls=len(calls),
        prompt_tokens=_sum(c.prompt_tokens for c in calls),
        completion_tokens=_sum(c.completion_tokens for c in calls),
        latency_s=sum(c.latency_s for c in calls),
        cost_usd=_sum(c.cost_usd for c in calls),
        cache_hit=bool(calls) and all(c.cache_hit for c in calls),
    )
    return j, calls
