"""The LLM-judge panel: K judges label units with a taxonomy; majority arbitration.

Each judge is a model (any litellm model string, or the offline ``embedded/smollm2``)
with a seed and a prompt variant. It answers one unit with a structured multi-label
answer (:func:`answer_schema`): a list of ``{label, evidence}`` items, ``label`` one of
the taxonomy's ids (an enum), ``evidence`` a short quote from the unit. When the same
model appears more than once in a panel, its copies differ by seed and by prompt
variant (the categories are listed in a different, seeded order), and the panel's
``note`` says so: such a panel measures one model's stability, not agreement between
models.

Running (:func:`run_panel`): concurrent (asyncio, bounded by ``concurrency``), cached
(the :class:`~scarce_lab.llm.LLMClient` caches every response), resumable (each
finished judgement is appended to ``judgements.jsonl`` in ``out_dir``; a rerun skips
the (unit, judge) pairs already there, except transport errors, which are retried),
with a progress bar. Unparseable answers (no valid answer after the client's repair
attempt) are kept as judgements with ``status="unparseable"``; they do not vote (see
:mod:`scarce_lab.judge.arbitration`).

Output (:class:`PanelResult`): polars tables keyed to the labelled rounds
``(run_id, round, agent)``: ``judgements`` (one row per unit and judge), ``labels``
(one row per unit: accepted labels, ties, unparseable judges) and ``votes`` (one row
per unit and label that got at least one vote).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import polars as pl
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator

from .arbitration import arbitrate, default_min_votes
from .taxonomy import Taxonomy
from .units import Unit

PROMPT_DIR = Path(__file__).parent / "prompts"
JUDGEMENTS_FILE = "judgements.jsonl"
CALLS_FILE = "llm_calls.jsonl"
PANEL_FILE = "panel.json"

_env = Environment(
    loader=FileSystemLoader(PROMPT_DIR),
    undefined=StrictUndefined,
    keep_trailing_newline=False,
    autoescape=False,
)


# -- judges ---------------------------------------------------------------------------
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
        """Token budget of one answer: ``max_tokens`` or about 45 tokens per label plus
        the quote length / 3 (digits and punctuation are single tokens)."""
        if self.max_tokens is not None:
            return self.max_tokens
        return 24 + self.max_labels * (20 + self.max_evidence // 2)


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
    from ..llm.models import is_embedded

    models = [m.strip() for m in models]
    if not models or any(not m for m in models):
        raise ValueError(f"judges: need non-empty model strings, got {list(models)!r}")
    if bad := [m for m in models if m.startswith("scripted/")]:
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


# -- answer schema -----------------------------------------------------------------------
def _short(limit: int):
    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > limit:
            return value[:limit]
        return value

    return cut


@cache
def _answer_schema(ids: tuple[str, ...], max_labels: int, max_evidence: int) -> type[BaseModel]:
    label_type = Literal.__getitem__(ids)
    evidence_type = Annotated[
        str, BeforeValidator(_short(max_evidence)), Field(max_length=max_evidence)
    ]
    item = create_model(
        "LabelEvidence",
        __config__=ConfigDict(extra="ignore"),
        label=(label_type, ...),
        evidence=(evidence_type, ""),
    )

    def dedupe(cls, value):
        # A label given twice counts once (the first quote is kept).
        if not isinstance(value, list):
            return value
        out, seen = [], set()
        for it in value:
            lab = it.get("label") if isinstance(it, dict) else getattr(it, "label", None)
            if lab in seen:
                continue
            seen.add(lab)
            out.append(it)
        return out

    return create_model(
        "JudgeAnswer",
        __config__=ConfigDict(extra="ignore"),
        __validators__={"_dedupe": field_validator("labels", mode="before")(dedupe)},
        labels=(list[item], Field(default_factory=list, max_length=max_labels)),
    )


def answer_schema(
    taxonomy: Taxonomy, *, max_labels: int = 6, max_evidence: int = 100
) -> type[BaseModel]:
    """Pydantic model of a judge's answer: ``{"labels": [{"label", "evidence"}]}``.

    ``label`` is a ``Literal`` of the taxonomy's ids (an enum in the JSON schema, which
    the embedded model's grammar enforces); ``evidence`` is at most ``max_evidence``
    characters (longer quotes are cut, not rejected); at most ``max_labels`` items; a
    repeated label counts once.
    """
    return _answer_schema(tuple(taxonomy.ids), max_labels, max_evidence)


# -- prompts -----------------------------------------------------------------------------
def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def render_messages(
    taxonomy: Taxonomy, unit: Unit, judge: JudgeSpec, *, max_chars: int = 1200
) -> list[dict[str, str]]:
    """Chat messages for one judge and one unit (templates ``prompts/system.j2`` and
    ``prompts/unit.j2``). Long texts are clipped to ``max_chars`` characters each."""
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


def evidence_found(evidence: str, unit: Unit) -> bool:
    """True when the quote's words appear, in order, in the unit's text (case and
    punctuation ignored); an empty quote is never found."""
    quote = " ".join(_WORD.findall(evidence.lower()))
    if not quote:
        return False
    text = " ".join([unit.public_reasoning, *(m.text for m in unit.private_messages), unit.context])
    return quote in " ".join(_WORD.findall(text.lower()))


# -- judgements --------------------------------------------------------------------------
class Judgement(BaseModel):
    """One judge's answer to one unit (one line of ``judgements.jsonl``).

    ``status``: ``ok`` (valid first answer), ``repaired`` (valid after the repair
    attempt), ``unparseable`` (no valid answer; ``labels`` is empty and does not vote),
    ``error`` (transport/provider error; retried on the next run). Units: ``latency_s``
    seconds, ``cost_usd`` US dollars.
    """

    model_config = ConfigDict(extra="forbid")

    unit_id: str
    run_id: str
    round: int
    agent: str
    judge: str
    judge_key: str
    model: str
    status: Literal["ok", "repaired", "unparseable", "error"]
    labels: list[str] = Field(default_factory=list)
    evidence: dict[str, str] = Field(default_factory=dict)
    evidence_found: dict[str, bool] = Field(default_factory=dict)
    violation: str | None = None
    n_calls: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    cost_usd: float | None = None
    cache_hit: bool = False

    @property
    def votes(self) -> bool:
        """True when this judgement counts in arbitration."""
        return self.status in ("ok", "repaired")


def _sum(values):
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


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

    The fallback (applied when no valid answer comes back) is the empty answer, and the
    judgement is then marked ``unparseable`` (or ``error`` for transport failures).
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
    if out.missing:  # no answer at all (transport): retried on the next run
        status = "error"
    elif out.fallback_used:
        status = "unparseable"
    else:
        status = "repaired" if out.repaired else "ok"
    items = out.decision.labels if status in ("ok", "repaired") else []
    evidence = {it.label: it.evidence for it in items}
    j = Judgement(
        unit_id=unit.unit_id,
        run_id=unit.run_id,
        round=unit.round,
        agent=unit.agent,
        judge=judge.name,
        judge_key=judge.key,
        model=judge.model,
        status=status,
        labels=list(evidence),
        evidence=evidence,
        evidence_found={lab: evidence_found(q, unit) for lab, q in evidence.items()},
        violation=out.violation,
        n_calls=len(calls),
        prompt_tokens=_sum(c.prompt_tokens for c in calls),
        completion_tokens=_sum(c.completion_tokens for c in calls),
        latency_s=sum(c.latency_s for c in calls),
        cost_usd=_sum(c.cost_usd for c in calls),
        cache_hit=all(c.cache_hit for c in calls),
    )
    return j, calls


# -- store -------------------------------------------------------------------------------
class JudgementStore:
    """Append-only ``judgements.jsonl`` (+ ``llm_calls.jsonl``, ``panel.json``) in a folder.

    Raises (``open``):
        ValueError: the folder was started with another taxonomy, or a line of
            ``judgements.jsonl`` is corrupt (a torn last line is skipped).
    """

    def __init__(self, out_dir: Path):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / JUDGEMENTS_FILE

    def check_meta(self, meta: dict[str, Any]) -> None:
        """Write ``panel.json``, or check that an existing one uses the same taxonomy."""
        p = self.dir / PANEL_FILE
        if p.exists():
            old = json.loads(p.read_text())
            if old.get("taxonomy") != meta.get("taxonomy"):
                raise ValueError(
                    f"{self.dir}: holds judgements for taxonomy {old.get('taxonomy')!r}, "
                    f"not {meta.get('taxonomy')!r}; use another --out folder"
                )
            meta = {**old, **meta, "judges": _merge_judges(old.get("judges", []), meta["judges"])}
        p.write_text(json.dumps(meta, indent=2, sort_keys=True))

    def load(self) -> list[Judgement]:
        """Every stored judgement (the last one wins for a repeated (unit, judge) pair)."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        torn_tail = not data.endswith(b"\n")
        out: dict[tuple[str, str], Judgement] = {}
        for i, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                j = Judgement.model_validate_json(raw)
            except ValueError as exc:
                if torn_tail and i == len(lines):
                    continue  # a killed writer's half line
                raise ValueError(f"{self.path}:{i}: corrupt judgement line: {exc}") from exc
            out[(j.unit_id, j.judge_key)] = j
        return list(out.values())

    def append(self, judgement: Judgement, calls: list) -> None:
        """Append one judgement and its call records (flushed at once)."""
        with self.path.open("a") as fh:
            fh.write(judgement.model_dump_json() + "\n")
        with (self.dir / CALLS_FILE).open("a") as fh:
            for c in calls:
                fh.write(c.model_dump_json() + "\n")


def _merge_judges(old: list[dict], new: list[dict]) -> list[dict]:
    keys = {json.dumps(j, sort_keys=True) for j in old}
    return old + [j for j in new if json.dumps(j, sort_keys=True) not in keys]


# -- result tables -----------------------------------------------------------------------
JUDGEMENT_SCHEMA = {
    "unit_id": pl.String,
    "run_id": pl.String,
    "round": pl.Int64,
    "agent": pl.String,
    "judge": pl.String,
    "model": pl.String,
    "status": pl.String,
    "labels": pl.List(pl.String),
    "evidence": pl.String,
    "n_calls": pl.Int64,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "latency_s": pl.Float64,
    "cost_usd": pl.Float64,
    "cache_hit": pl.Boolean,
}


def judgements_frame(judgements: Sequence[Judgement]) -> pl.DataFrame:
    """One row per (unit, judge); ``evidence`` as JSON text ``{label: quote}``."""
    rows = []
    for j in judgements:
        row = j.model_dump()
        row["evidence"] = json.dumps(j.evidence, ensure_ascii=False)
        rows.append({k: row.get(k) for k in JUDGEMENT_SCHEMA})
    return pl.DataFrame(rows, schema=JUDGEMENT_SCHEMA, orient="row").sort(["unit_id", "judge"])


LABELS_SCHEMA = {
    "unit_id": pl.String,
    "run_id": pl.String,
    "round": pl.Int64,
    "agent": pl.String,
    "labels": pl.List(pl.String),
    "ties": pl.List(pl.String),
    "n_judges": pl.Int64,
    "n_valid": pl.Int64,
    "unparseable": pl.List(pl.String),
    "missing": pl.List(pl.String),
    "status": pl.String,
}
VOTES_SCHEMA = {
    "unit_id": pl.String,
    "run_id": pl.String,
    "round": pl.Int64,
    "agent": pl.String,
    "label": pl.String,
    "votes": pl.Int64,
    "n_valid": pl.Int64,
    "accepted": pl.Boolean,
    "tie": pl.Boolean,
    "relational": pl.Boolean,
    "evidence": pl.String,
    "evidence_found": pl.Float64,
}


def arbitrate_judgements(
    units: Sequence[Unit],
    judgements: Sequence[Judgement],
    judges: Sequence[JudgeSpec],
    taxonomy: Taxonomy,
    *,
    min_votes: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Arbitrate every unit; returns ``(labels, votes)`` frames (see module docstring).

    A judge with no judgement for a unit (not run yet) or a transport ``error`` is
    listed in ``missing`` and does not vote; an ``unparseable`` one is listed in
    ``unparseable``. Both count in the panel size for the default ``min_votes``.
    """
    by_pair = {(j.unit_id, j.judge_key): j for j in judgements}
    need = default_min_votes(len(judges)) if min_votes is None else min_votes
    label_rows, vote_rows = [], []
    for u in units:
        answers: dict[str, list[str] | None] = {}
        missing = []
        got: dict[str, Judgement] = {}
        for spec in judges:
            j = by_pair.get((u.unit_id, spec.key))
            if j is None or j.status == "error":
                missing.append(spec.name)
                answers[spec.name] = None
            else:
                got[spec.name] = j
                answers[spec.name] = j.labels if j.votes else None
        arb = arbitrate(answers, min_votes=need, label_order=taxonomy.ids)
        key = {"unit_id": u.unit_id, "run_id": u.run_id, "round": u.round, "agent": u.agent}
        label_rows.append(
            key
            | {
                "labels": list(arb.accepted),
                "ties": list(arb.ties),
                "n_judges": arb.n_judges,
                "n_valid": arb.n_valid,
                "unparseable": [n for n in arb.unparseable if n not in missing],
                "missing": missing,
                "status": arb.status,
            }
        )
        for lab, v in arb.votes.items():
            voters = [j for j in got.values() if j.votes and lab in j.labels]
            found = [j.evidence_found.get(lab, False) for j in voters]
            vote_rows.append(
                key
                | {
                    "label": lab,
                    "votes": v,
                    "n_valid": arb.n_valid,
                    "accepted": lab in arb.accepted,
                    "tie": lab in arb.ties,
                    "relational": lab in taxonomy.relational_ids,
                    "evidence": voters[0].evidence.get(lab, "") if voters else "",
                    "evidence_found": sum(found) / len(found) if found else None,
                }
            )
    labels = pl.DataFrame(label_rows, schema=LABELS_SCHEMA, orient="row")
    votes = pl.DataFrame(vote_rows, schema=VOTES_SCHEMA, orient="row")
    return labels, votes


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
        """unit_id -> one judge's labels (``None`` when unparseable or missing)."""
        out: dict[str, list[str] | None] = {u.unit_id: None for u in self.units}
        for j in self.raw:
            if j.judge == judge and j.votes:
                out[j.unit_id] = j.labels
        return out


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
        from ..llm import LLMClient, LLMSettings

        client = LLMClient(LLMSettings(max_concurrency=concurrency))
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
        wanted, keys = set(ids), {j.key for j in judges}
        done = {
            (j.unit_id, j.judge_key): j
            for j in store.load()
            if j.status != "error" and j.unit_id in wanted and j.judge_key in keys
        }
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

        bar = tqdm(total=len(pending), desc=f"judging ({len(judges)} judges)", disable=not progress)
        try:
            for fut in asyncio.as_completed([one(u, j) for u, j in pending]):
                judgement, calls = await fut
                if store is not None:
                    store.append(judgement, calls)
                results.append(judgement)
                bar.update(1)
        finally:
            bar.close()
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
