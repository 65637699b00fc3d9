"""The recorded answers of a parent run, and the client that plays them back.

:class:`Replay` reads a parent's ``llm_calls.jsonl`` through the read gate
(:func:`scarce_lab.data.jsonl.read_lines_bounded`: a regular file within its limits,
every line a validated :class:`~scarce_lab.data.schema.LLMCallRecord`) after checking
:func:`parent_digest`; nothing else of the parent is read (its ``.checkpoint.pkl``
never). Answers are keyed on ``(model, messages_hash, attempt, seed)`` and given out in
the parent's order, so a prefix that asks the parent's questions with the parent's seeds
gets the parent's answers.

:class:`ReplayingClient` is the run's :class:`~scarce_lab.llm.client.LLMClient` with
:meth:`~ReplayingClient.acomplete` answered from the replay until the runner calls
:meth:`~ReplayingClient.go_live`: the record is built and parsed by the client's own
code (``_result`` then ``adecide``'s validation, repair and fallback), so a replayed
decision is the parent's decision. It is recorded as a cache hit at no cost (never new
spend), its ``original_latency_s`` the parent's latency.
"""

from __future__ import annotations

import hashlib
from collections import deque
from pathlib import Path
from typing import Any

from ..data.jsonl import loads, read_lines_bounded
from ..data.recorder import EVENTS, LLM_CALLS
from ..data.schema import LLMCallRecord, messages_hash
from ..llm import outcomes as oc
from ..llm.client import LLMClient, _result, effective_context
from ..llm.outcomes import CompletionResult, ResponseParts
from ..llm.scope import call_id_for
from . import ForkDivergedError, ForkError

__all__ = ["Replay", "ReplayingClient", "parent_digest"]


def _files(run_dir: Path) -> tuple[bytes, bytes]:
    """The parent's ``events.jsonl`` and ``llm_calls.jsonl`` bytes, through the read gate."""
    return read_lines_bounded(Path(run_dir) / EVENTS), read_lines_bounded(Path(run_dir) / LLM_CALLS)


def _digest(events: bytes, calls: bytes) -> str:
    h = hashlib.sha256()
    h.update(events)
    h.update(b"\0")
    h.update(calls)
    return h.hexdigest()


def parent_digest(run_dir: Path | str) -> str:
    """SHA-256 (hex) of ``run_dir``'s ``events.jsonl``, a NUL byte, then its
    ``llm_calls.jsonl`` (an absent calls file counts as empty: a scripted run).

    Raises:
        FileNotFoundError, FileLimitError: as the read gate (:mod:`scarce_lab.data.jsonl`).
    """
    return _digest(*_files(Path(run_dir)))


class Replay:
    """The recorded answers of one parent run (module docstring).

    Attributes:
        run_id: the parent's run id.
        at: the fork step (calls of the prefix come before it).
        replayed: how many answers were given out so far.
    """

    def __init__(self, run_id: str, records: list[LLMCallRecord], at: int) -> None:
        self.run_id, self.at, self.replayed = run_id, at, 0
        #: the parent's folder (set by :meth:`from_run`): environments read its events there
        self.run_dir: Path | None = None
        self._answers: dict[tuple[str, str, int, Any], deque[LLMCallRecord]] = {}
        for r in records:
            self._answers.setdefault(_key(r.model, r.messages_hash, r.attempt, r.params.get("seed")), deque()).append(r)

    @classmethod
    def from_run(cls, run_dir: Path | str, *, at: int, digest: str | None = None) -> Replay:
        """The replay of the run in ``run_dir``; with ``digest``, refused unless the
        files hash to it (:func:`parent_digest`; the same bytes are then parsed).

        Raises:
            ForkError: the files changed since the fork was planned (both digests named),
                or a call line is not a valid record (file and line named).
            FileNotFoundError, FileLimitError: as the read gate.
        """
        from ..data.recorder import read_manifest

        run_dir = Path(run_dir)
        manifest = read_manifest(run_dir)
        events, calls = _files(run_dir)
        found = _digest(events, calls)
        if digest is not None and found != digest:
            raise ForkError(f"{run_dir}: the parent's events.jsonl/llm_calls.jsonl changed since the fork was planned "
                            f"(digest {found[:12]}..., the fork names {digest[:12]}...); fork it again")
        records = []
        for i, line in enumerate(calls.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(LLMCallRecord.model_validate(loads(line)))
            except ValueError as exc:
                raise ForkError(f"{run_dir / LLM_CALLS}:{i}: not a model-call record ({str(exc)[:300]})") from None
        replay = cls(manifest.run_id, records, at)
        replay.run_dir = run_dir
        return replay

    def take(self, model: str, mhash: str, seed: Any, attempt: int, context: Any = None) -> LLMCallRecord:
        """The parent's next recorded answer to this request.

        Raises:
            ForkDivergedError: the parent made no such call (or no more of them): names
                the run, the step, the agent and the call.
        """
        for key in (_key(model, mhash, attempt, seed), _key(model, mhash, attempt, None)):
            queue = self._answers.get(key)
            if queue:
                self.replayed += 1
                return queue.popleft()
        where = (f"step {getattr(context, 'round', None)}, agent {getattr(context, 'agent', None)!r}, "
                 f"purpose {getattr(context, 'purpose', '')!r}")
        raise ForkDivergedError(
            f"fork of {self.run_id} (at step {self.at}): the prefix asked {model!r} a question the parent never "
            f"asked ({where}, attempt {attempt}, seed {seed}, messages_hash {mhash[:12]}...): the replay no longer "
            "follows the parent (a changed prompt, config or package version); no live call is made in the prefix")


def _key(model: str, mhash: str, attempt: int, seed: Any) -> tuple[str, str, int, Any]:
    return model, mhash, attempt, seed


class ReplayingClient(LLMClient):
    """``client`` answering from ``replay`` until :meth:`go_live` (module docstring).
    It shares the client's settings, cache, rate limiter and concurrency bound."""

    def __init__(self, client: LLMClient, replay: Replay) -> None:  # noqa: D107 - the class says it
        self.__dict__.update(client.__dict__)
        self.replay, self.live = replay, False

    def go_live(self) -> None:
        """From now on every call is the wrapped client's (the fork step)."""
        self.live = True

    async def acomplete(self, model: str, messages: list[dict[str, Any]], *, seed: int, context: Any = None,
                        attempt: int = 0, decision_id: str | None = None, structured_output: str | None = None,
                        tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> CompletionResult:
        """:meth:`LLMClient.acomplete` once live; before, the parent's answer.

        Raises:
            ForkDivergedError: before :meth:`go_live`, a call the parent never made.
        """
        if self.live:
            return await super().acomplete(model, messages, seed=seed, context=context, attempt=attempt,
                                           decision_id=decision_id, structured_output=structured_output,
                                           tools=tools, **kwargs)
        ctx = effective_context(context)
        mhash = messages_hash(messages)
        old = self.replay.take(model, mhash, seed, attempt, ctx)
        call_id = call_id_for(run_id=ctx.run_id, agent=ctx.agent, round=ctx.round, purpose=ctx.purpose, seed=seed,
                              messages_hash=mhash, attempt=attempt, model=model, params=old.params)
        record = LLMCallRecord(
            run_id=ctx.run_id, call_id=call_id, round=ctx.round, agent=ctx.agent, purpose=ctx.purpose, model=model,
            params=old.params, dropped_params=old.dropped_params, structured_output=structured_output,
            messages=messages, messages_hash=mhash, attempt=attempt, decision_id=decision_id or call_id,
            prompt_tokens=old.prompt_tokens, completion_tokens=old.completion_tokens,
            original_latency_s=old.original_latency_s if old.cache_hit else old.latency_s,
            served_model=old.served_model, usage_reported=old.usage_reported, usage_problem=old.usage_problem,
            cost_usd=0.0, cache_hit=True)
        if old.outcome in oc.NO_ANSWER:  # the parent got no answer here: neither does the fork
            record.outcome, record.error = old.outcome, old.error
            if old.outcome == oc.MODEL_MISMATCH:
                record.raw_response, record.tool_calls = old.raw_response, old.tool_calls
            return CompletionResult(None, None, record, error=old.error)
        refused = old.outcome == oc.REFUSAL and (old.finish_reason or "").lower() not in oc.REFUSAL_REASONS
        no_choices = old.outcome == oc.EMPTY and "no choices" in (old.error or "")
        parts = ResponseParts(text=None if refused else old.raw_response, tool_calls=old.tool_calls,
                              finish_reason=old.finish_reason, refusal=old.raw_response if refused else None,
                              n_choices=0 if no_choices else 1)
        return _result(record, parts, tools=bool(tools))

