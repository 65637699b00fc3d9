"""Run manifests and LLM call records (schema version ``SCHEMA_VERSION``).

A *run directory* holds three files:

- ``manifest.json``: one :class:`RunManifest`.
- ``events.jsonl``: one event per line, validated against its environment's typed
  model (:mod:`scarce_lab.data.events`), in ``seq`` order. A round is durable once its
  ``round_committed`` event is on disk.
- ``llm_calls.jsonl``: :class:`LLMCallRecord` records, one per model call.

A run that is still running may also hold ``.checkpoint.pkl`` (the state to resume
from; removed when the run completes) and ``.writer.lock``; loaders ignore both.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .events.base import SCHEMA_VERSION


def package_version() -> str:
    """The installed scarce_lab version (recorded in every manifest and checkpoint)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("scarce-lab")
    except PackageNotFoundError:  # a source tree without install
        return "0.0.0+source"


def utc_now() -> datetime:
    """Current time, timezone-aware UTC."""
    return datetime.now(UTC)


class RunStatus(StrEnum):
    """Life cycle of a run: ``running`` until it ends ``complete`` or ``failed``."""

    running = "running"
    complete = "complete"
    failed = "failed"


class RunManifest(BaseModel):
    """What a run is: environment, condition, config, models, seed and status.

    Attributes:
        condition: a readable label derived from ``condition_settings`` (never typed by
            hand; see each environment's config ``condition_label``).
        condition_settings: every setting that defines the run's condition (flat
            ``name -> JSON scalar``); two runs belong to the same condition exactly when
            these are equal (tables group by them and refuse to pool different ones).
        config: the environment's whole config (its pydantic config model, dumped).
        models: role or agent name -> the model string that drove it (a litellm model
            such as ``openai/gpt-4o``, ``embedded/smollm2`` or ``scripted/<policy>``).
            API keys never appear here.
        seed: the run seed every random choice derives from.
        status: ``running`` until it ends ``complete`` or ``failed`` (a failed run
            resumes from its last committed round with ``--resume``).
        n_events: the number of events in ``events.jsonl`` when the run completed
            (written by the recorder; ``None`` while it runs and in runs recorded before
            this field): a loader refuses a complete run whose file holds another
            number (a cut or doubled copy).
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    environment: str
    condition: str
    condition_settings: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, str] = Field(default_factory=dict)
    seed: int
    package_version: str
    started_at: datetime = Field(default_factory=utc_now)
    ended_at: datetime | None = None
    status: RunStatus = RunStatus.running
    error: str | None = None
    notes: dict[str, Any] = Field(default_factory=dict)
    n_events: int | None = Field(None, ge=0)


class LLMCallRecord(BaseModel):
    """One model call: request, raw answer, parse result and accounting.

    Units: ``latency_s`` seconds (0 for a cache hit; ``original_latency_s`` keeps the
    latency of the call that filled the cache), ``cost_usd`` US dollars where litellm
    knows the price. ``attempt`` is 0 for the first try and 1 for the second (a repair,
    or a resend after a truncated or empty answer).

    ``params`` are the parameters litellm sent, after its own mapping;
    ``dropped_params`` the settings asked for that were not sent; ``structured_output``
    the form the decision's schema was sent in (``json_schema``, ``json_object``,
    ``tools``, ``prompt``; ``None`` for a plain completion).

    ``outcome`` is one of ``scarce_lab.llm.outcomes.OUTCOMES`` (``None`` in records
    written before outcomes existed); ``finish_reason`` is the provider's;
    ``decision_id`` is shared by the calls of one decision; ``decision_source`` is
    ``text`` or ``tool_call`` on the call whose answer was used; ``missing`` marks the
    last call of a decision that has no value (transport failure or context overflow:
    no fallback was played).

    A server's answer about itself is a claim (:mod:`scarce_lab.llm.costs`):
    ``served_model`` is the model the response names (``None`` when it names none, and in
    records before schema version 6); ``usage_reported`` the ``usage`` as the server sent
    it and ``usage_problem`` why it was not accepted (``None``: accepted). A flagged
    claim leaves ``prompt_tokens``/``completion_tokens`` ``None`` and costs the worst case.
    """

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = None
    call_id: str
    round: int | None = None
    agent: str | None = None
    purpose: str = ""
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    dropped_params: dict[str, Any] | None = None
    structured_output: str | None = None
    messages: list[dict[str, Any]]
    messages_hash: str
    raw_response: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    parsed: dict[str, Any] | None = None
    error: str | None = None
    attempt: int = 0
    fallback_used: bool = False
    outcome: str | None = None
    finish_reason: str | None = None
    decision_id: str | None = None
    decision_source: str | None = None
    missing: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    original_latency_s: float | None = None
    cost_usd: float | None = None
    served_model: str | None = None
    usage_reported: dict[str, Any] | None = None
    usage_problem: str | None = None
    cache_hit: bool = False
    timestamp: datetime = Field(default_factory=utc_now)


def check_run_id(found: Any, run_id: str, path: Any, lineno: int | None) -> None:
    """A record of a run's file (an event, a model call) belongs to the run whose
    manifest sits beside it: its ``run_id`` is ``run_id``, the manifest's (the recorder
    stamps every record; a null one is not ours either). Every reader of a run
    directory calls this for every record, so a file copied from another run is never
    merged in.

    Raises:
        TrajectoryFileError: naming ``path``, ``lineno``, the record's id and the
            manifest's.
    """
    if found != run_id:
        from .jsonl import TrajectoryFileError

        raise TrajectoryFileError(path, lineno, f"run_id {found!r:.80} is not this run's: the manifest beside it "
                                  f"says {run_id!r} (a file of another run copied in?)")


#: Prefix of a scripted policy's model string (``scripted/<policy>[:<arg>]``).
SCRIPTED_PREFIX = "scripted/"
HUMAN_PREFIX = "human/"


def is_scripted(model: str | None) -> bool:
    """True when ``model`` (a manifest's or a config's model string) names a scripted
    policy, which never calls a model. The one test of the convention: the model
    registry (:func:`scarce_lab.llm.models.resolve_model`), configs, runners and
    tables all ask here (this module is the bottom layer, readable by analysis too)."""
    return isinstance(model, str) and model.startswith(SCRIPTED_PREFIX)


def is_human(model: str | None) -> bool:
    """True when ``model`` names a person's seat (``human/<name>``): a front end asks a
    person; no model is called and nothing is priced."""
    return isinstance(model, str) and model.startswith(HUMAN_PREFIX)


def calls_no_model(model: str | None) -> bool:
    """True for a seat that never calls a model: a scripted policy or a person."""
    return is_scripted(model) or is_human(model)


def messages_hash(messages: list[dict[str, Any]]) -> str:
    """SHA-256 (hex, first 16 chars) of the canonical JSON of a message list."""
    blob = json.dumps(messages, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def scrub_surrogates(value: Any) -> Any:
    """``value`` with every lone UTF-16 surrogate in its strings (and dict keys) replaced
    by U+FFFD; lists, tuples and dicts are walked, other values returned as they are.

    A model answer may hold a JSON escape such as ``"\\ud800"``: Python decodes it into
    a string that cannot be written as UTF-8, which would crash the recorder.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_surrogates(v) for v in value)
    return value


def contract_json_schema() -> dict[str, Any]:
    """The JSON schema of every environment's event model, the manifest and the LLM
    call record: the on-disk contract of :data:`SCHEMA_VERSION` (pinned by a golden
    test)."""
    from .events import event_model, registered

    return {
        "schema_version": SCHEMA_VERSION,
        "events": {env: event_model(env).model_json_schema() for env in registered()},  # every one, discovered
        "manifest": RunManifest.model_json_schema(),
        "llm_call": LLMCallRecord.model_json_schema(),
    }
