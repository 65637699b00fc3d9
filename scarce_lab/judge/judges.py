"""The judges of a panel: one spec per judge, built from a list of model strings.

Each judge is a model (any litellm model string, or the offline ``embedded/smollm2``)
with a seed and a prompt variant. When the same model appears more than once in a
panel, its copies differ by seed and by prompt variant (the categories are listed in a
different, seeded order), and :func:`panel_note` says so: such a panel measures one
model's stability, not agreement between models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class JudgeSpec(BaseModel):
    """One judge of the panel.

    ``variant`` 0 lists the categories in file order; other variants list them in a
    seeded shuffled order. ``detail``: ``"full"`` shows definitions, inclusion and
    exclusion notes and examples; ``"brief"`` only definitions (shorter prompts for
    small context windows). ``max_labels`` bounds the answer list; ``max_evidence``
    bounds each quote (characters); ``max_tokens`` bounds the answer (tokens).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    model: str = Field(min_length=1)
    seed: int = 0
    variant: int = Field(0, ge=0)
    detail: Literal["full", "brief"] = "full"
    max_labels: int = Field(6, ge=1)
    max_evidence: int = Field(100, ge=10)
    max_tokens: int | None = None
    temperature: float | None = None

    @property
    def key(self) -> str:
        """Identity of the judge for resuming: name, model, seed, variant, detail."""
        return f"{self.name}|{self.model}|{self.seed}|{self.variant}|{self.detail}"

    @property
    def answer_tokens(self) -> int:
        """Token budget of one answer: ``max_tokens``, else 24 plus, per label, 20 and
        half the quote length (``max_evidence``; digits and punctuation are single tokens)."""
        return self.max_tokens if self.max_tokens is not None else 24 + self.max_labels * (20 + self.max_evidence // 2)


def make_judges(
    models: Sequence[str],
    *,
    seed: int = 0,
    detail: Literal["auto", "full", "brief"] = "auto",
    max_labels: int | None = None,
    max_evidence: int | None = None,
) -> list[JudgeSpec]:
    """Judge specs for a list of model strings (``"m1,m2,m3".split(",")``).

    Repeated models get distinct seeds (``seed + k``) and prompt variants ``k`` for
    their k-th copy. ``detail="auto"`` gives the embedded model brief prompts (its
    context is small) and every other model full ones; embedded judges also default to
    shorter answers (3 labels, 60-character quotes) than others (6 labels, 100).

    Raises:
        ValueError: no models, an empty model string, or a ``scripted/`` policy (judges
            are language models).
    """
    from ..llm.models import is_embedded, is_scripted

    models = [m.strip() for m in models]
    if not models or any(not m for m in models):
        raise ValueError(f"judges: need non-empty model strings, got {list(models)!r}")
    if bad := [m for m in models if is_scripted(m)]:
        raise ValueError(f"judges: {bad} are scripted policies; a judge must be a language model")
    seen: dict[str, int] = {}
    judges = []
    for i, model in enumerate(models):
        k = seen.get(model, 0)
        seen[model] = k + 1
        emb = is_embedded(model)
        judges.append(
            JudgeSpec(
                name=f"j{i + 1}",
                model=model,
                seed=seed + k,
                variant=k,
                detail=("brief" if emb else "full") if detail == "auto" else detail,
                max_labels=max_labels or (3 if emb else 6),
                max_evidence=max_evidence or (60 if emb else 100),
            )
        )
    return judges


def panel_note(judges: Sequence[JudgeSpec]) -> str:
    """A sentence describing the panel; says so when judges share a model."""
    models = [j.model for j in judges]
    distinct = sorted(set(models))
    if len(models) == 1:
        return f"1 judge: {models[0]}."
    if len(distinct) == len(models):
        return f"{len(judges)} judges, {len(distinct)} different models: {', '.join(models)}."
    return (
        f"{len(judges)} judges but only {len(distinct)} distinct model(s) ({', '.join(distinct)}): "
        "copies of one model differ only by seed and prompt variant (category order), so "
        "their agreement measures that model's stability, not agreement between models."
    )
