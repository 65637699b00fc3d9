"""The one decision type every agent returns (SovSim, SCARCE, Economy of Minds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..llm.human import HUMAN_OUTCOMES

V = TypeVar("V")


@dataclass
class Decided(Generic[V]):
    """A decision plus its provenance.

    Attributes:
        value: the decision applied (after repair or clamping, or the documented
            fallback when ``fallback_used``).
        reasoning: the reasoning the agent stated with it (empty for most scripted
            policies).
        calls: the LLMCallRecord objects of the decision (empty for scripted policies).
        valid: a model answer (first or repaired) validated; true for scripted policies.
        repaired: the first answer was invalid and the repair answer validated.
        fallback_used: the documented fallback applied (not the agent's choice).
        violation: text describing bad model output that was repaired or replaced.
        outcome: the last model call's outcome (``ok``, ``invalid``, ``refusal``...);
            ``None`` for scripted policies.
        prompt: the rendered chat messages shown to the model (``None`` for scripted).
        latency_s: measured seconds of the decision's model calls (wall clock); for a
            person (outcome ``human``/``human_timeout``) the seconds from the first
            prompt to the accepted answer, recorded in the decision's event.
        intended: ground truth for the tactic judges: the taxonomy categories a scripted
            policy means by this text (ids of ``judge/taxonomies/scarce.yaml``); recorded
            as a researcher-only event, never shown to an agent. Empty for models (their
            tactics are what the judges label) and for texts that mean none.
    """

    value: V
    reasoning: str = ""
    calls: list[Any] = field(default_factory=list)
    valid: bool = True
    repaired: bool = False
    fallback_used: bool = False
    violation: str | None = None
    outcome: str | None = None
    prompt: list[dict[str, Any]] | None = None
    latency_s: float = 0.0
    intended: tuple[str, ...] = ()

    @classmethod
    def from_outcome(cls, out: Any, value: Any, reasoning: str = "", **extra: Any) -> Decided[Any]:
        """The decision ``value`` with every provenance field of the model's outcome
        ``out`` (a :class:`~scarce_lab.llm.model.DecisionOutcome`: validity, repair,
        fallback, violation, outcome, calls and a person's latency): the one place an
        outcome becomes a :class:`Decided`, so no path drops a field. ``extra``: the
        other attributes (``prompt``, ``intended``)."""
        return cls(value=value, reasoning=reasoning, valid=out.valid, repaired=out.repaired,
                   fallback_used=out.fallback_used, violation=out.violation, outcome=out.outcome,
                   calls=list(out.calls), latency_s=getattr(out, "latency_s", None) or 0.0, **extra)

    def decision_fields(self) -> dict[str, Any]:
        """The fields every decision payload records
        (:class:`scarce_lab.data.events.DecisionFields`); ``latency_s`` only for a
        person's decision (a model's latency is in its call records)."""
        out = {
            "valid": self.valid,
            "repaired": self.repaired,
            "fallback_used": self.fallback_used,
            "violation": self.violation,
            "outcome": self.outcome,
            "call_ids": [c.call_id for c in self.calls],
        }
        if self.outcome in HUMAN_OUTCOMES:
            if not self.latency_s > 0:  # a person's answer takes time: 0 is a latency some path dropped
                raise ValueError(f"a person's decision (outcome {self.outcome!r}) without its latency "
                                 f"(latency_s={self.latency_s!r}): build it with Decided.from_outcome")
            out["latency_s"] = round(float(self.latency_s), 3)
        return out
