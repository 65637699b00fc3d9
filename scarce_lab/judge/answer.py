"""A judge's answer: the schema it must validate against, and label normalisation.

An answer is ``{"labels": [{"label": <category id>, "evidence": <quote>}, ...]}``:

- ``labels`` is **required**: ``{"labels": []}`` is a real "no category applies"
  answer, while ``{}``, ``{"verdict": ...}`` or a lone ``{"label": ..., "evidence":
  ...}`` (the inner item of an answer cut off at ``max_tokens``) do not validate.
- A label written with other case, spacing, hyphens or underscores (``"Cheap Talk"``,
  ``" cheap_talk "``, ``"cheap-talk"``) is normalised to the taxonomy id with the same
  :func:`label_key`, when exactly one id has that key (an exact id always wins).
- A label that matches no id (or matches several) is kept as written and counted as an
  **invalid label** (:meth:`JudgeAnswerBase.invalid_labels`): the answer stays valid
  and its valid labels count; the judgement records the invalid ones per label
  (:mod:`scarce_lab.judge.judging`). ``label`` must be a string: any other JSON type
  makes the answer invalid.
- A label given twice (after normalisation) counts once; the first quote is kept.
- ``evidence`` longer than ``max_evidence`` characters is cut (not rejected); a null
  quote is ``""``; at most ``max_labels`` items (distinct labels).

The JSON schema sent to the model (``response_format``) still lists the taxonomy's ids
as an ``enum``, so grammar-constrained decoders (the embedded model) only produce ids.

Which JSON object in a reply is the answer (reasoning blocks, drafts, a quoted verdict
before the real one) is decided by :func:`scarce_lab.llm.parsing.parse_answer`.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    field_validator,
)

from .taxonomy import Taxonomy

_SEP = re.compile(r"[\s_\-]+")


def label_key(text: str) -> str:
    """Case- and spacing-free form of a label: Unicode NFKC, case folded, every run of
    whitespace, ``-`` and ``_`` turned into one ``_``, leading/trailing ``_`` removed
    (``" Cheap-Talk "`` -> ``"cheap_talk"``)."""
    return _SEP.sub("_", unicodedata.normalize("NFKC", text).casefold()).strip("_")


@cache
def _key_index(ids: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    index: dict[str, list[str]] = {}
    for i in ids:
        index.setdefault(label_key(i), []).append(i)
    return {k: tuple(v) for k, v in index.items()}


def normalise_label(label: str, ids: tuple[str, ...]) -> str | None:
    """The taxonomy id ``label`` stands for, or ``None`` when it matches no id or is
    ambiguous (several ids share its :func:`label_key`)."""
    if label in ids:
        return label
    found = _key_index(ids).get(label_key(label), ())
    return found[0] if len(found) == 1 else None


def _evidence(limit: int):
    def cut(value: Any) -> Any:
        return "" if value is None else value[:limit] if isinstance(value, str) else value

    return cut


class JudgeAnswerBase(BaseModel):
    """Base of the per-taxonomy answer models built by :func:`answer_schema`.

    ``labels`` holds every item, valid labels already normalised to taxonomy ids;
    :meth:`valid_items` and :meth:`invalid_labels` split them.
    """

    model_config = ConfigDict(extra="ignore")

    label_ids: ClassVar[tuple[str, ...]] = ()

    def valid_items(self) -> list[Any]:
        """Items whose label is a taxonomy id (in answer order)."""
        return [it for it in self.labels if it.label in self.label_ids]  # type: ignore[attr-defined]

    def invalid_labels(self) -> list[str]:
        """Labels (as written) that are not taxonomy ids, in answer order."""
        return [it.label for it in self.labels if it.label not in self.label_ids]  # type: ignore[attr-defined]


@cache
def _answer_schema(ids: tuple[str, ...], max_labels: int, max_evidence: int) -> type[BaseModel]:
    label_type = Annotated[str, WithJsonSchema({"type": "string", "enum": list(ids)})]
    evidence_type = Annotated[
        str, BeforeValidator(_evidence(max_evidence)), Field(max_length=max_evidence)
    ]
    item = create_model(
        "LabelEvidence",
        __config__=ConfigDict(extra="ignore"),
        label=(label_type, ...),
        evidence=(evidence_type, ""),
    )

    def normalise(cls, value):
        # Before item validation: map labels to ids, drop repeats (first quote kept).
        if not isinstance(value, list):
            return value
        out, seen = [], set()
        for it in value:
            lab = it.get("label") if isinstance(it, dict) else None
            if isinstance(lab, str):
                lab = normalise_label(lab, ids) or lab
                if lab in seen:
                    continue
                seen.add(lab)
                it = {**it, "label": lab}
            out.append(it)
        return out

    model = create_model(
        "JudgeAnswer",
        __base__=JudgeAnswerBase,
        __validators__={"_normalise": field_validator("labels", mode="before")(normalise)},
        labels=(list[item], Field(max_length=max_labels)),
    )
    model.label_ids = ids
    return model


def answer_schema(
    taxonomy: Taxonomy, *, max_labels: int = 6, max_evidence: int = 100
) -> type[BaseModel]:
    """Pydantic model of a judge's answer for ``taxonomy`` (rules: module docstring).

    Instances are :class:`JudgeAnswerBase`. Units: ``max_labels`` items,
    ``max_evidence`` characters per quote. Models are cached per (ids, limits).
    """
    return _answer_schema(tuple(taxonomy.ids), max_labels, max_evidence)
