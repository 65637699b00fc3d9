"""LLM partial agents: the genome's ``instruction`` is the system prompt, the problem
and the notes so far are the user prompt (templates/act.j2); the answer is a short
typed decision. Mutation rewrites the instruction with the LLM (templates/mutate.j2)
and toggles one trigger step kind (EoM sec. 3.3: mutation by an LLM rewriting the
parent's prompt). A bankrupt agent's replacement (exploration, EoM: "ineffective agents
go bankrupt and are replaced via exploration") gets the failed agent's instruction
rewritten by the LLM, told that the agent went bankrupt (templates/repair.j2); its
trigger is kept.

The decision schemas are in :mod:`.schemas`. Fallbacks (documented, applied when the
model answered but no answer is usable after the client's second call): a note-only
agent writes an empty note; an answering agent gives no answer (the episode
continues); a rewrite that is empty, truncated or refused keeps the parent's
instruction (a child still differs by its trigger; a replacement then gets one trigger
step kind toggled, so it never copies the failed agent unchanged). A missing decision
(no answer at all: transport failure after retries, or a prompt too long for the
context window) is never replaced: :class:`~scarce_lab.llm.MissingDecisionError` is
raised (with the call records, which are passed to ``record_calls`` first) and the run
stops.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable

from scarce_lab.llm.outcomes import NO_ANSWER, MissingDecisionError
from scarce_lab.llm.quoting import quote, template_env, unquote

from ..world.qa import Contribution, QAObs
from .partial import ANSWERING, TEMPLATES, PartialGenome, PartialLayer, mutate_trigger
from .schemas import AnswerDecision, NoteDecision

_JINJA = template_env(TEMPLATES, keep_trailing_newline=False)


def call_seed(*parts) -> int:
    """A stable 31-bit seed from ``parts`` (run seed, episode, step, agent...)."""
    return zlib.crc32(":".join(map(str, parts)).encode()) & 0x7FFFFFFF


def render_act(genome: PartialGenome, obs: QAObs, *, reference: bool = False) -> list[dict]:
    """Chat messages for one step of ``genome`` on ``obs`` (``reference``: the system
    prompt is the frozen part then the trainable instruction, as the reference's
    ``BaseAgent.get_system_prompt``)."""
    user = _JINJA.get_template("act.j2").render(
        question=obs.question, notes=list(obs.notes), answers=genome.capability in ANSWERING
    )
    system = reference_system_prompt(genome) if reference else genome.instruction
    return [{"role": "system", "content": system}, {"role": "user", "content": user.strip()}]


def frozen_prompt(genome: PartialGenome) -> str:
    """The frozen part of a reference-preset agent's prompt (its role; never mutated)."""
    return _JINJA.get_template("ref_frozen.j2").render(capability=genome.capability).strip()


def reference_system_prompt(genome: PartialGenome) -> str:
    """Frozen part + blank line + trainable part (the genome's instruction)."""
    return frozen_prompt(genome) + "\n\n" + genome.instruction


def render_state(obs: QAObs) -> str:
    """The shared state shown to a waking agent: the problem and the notes so far (quoted)."""
    notes = "\n".join(f"- [{c}] {quote(t)}" for c, t in obs.notes) or "(no notes yet)"
    return f"Problem: {obs.question}\nNotes:\n{notes}"


def render_wakeup(genome: PartialGenome, obs: QAObs) -> list[dict]:
    """The reference's wake-up question (templates/ref_wakeup.j2): answer ``\\boxed{yes}``
    or ``\\boxed{no}``."""
    text = _JINJA.get_template("ref_wakeup.j2").render(system=reference_system_prompt(genome), state=render_state(obs))
    return [{"role": "user", "content": text.strip()}]


def render_reference_rewrite(genome: PartialGenome, failure: dict | None = None) -> list[dict]:
    """The reference preset's mutation (``failure`` None: add a general reasoning skill,
    templates/ref_mutate.j2) or repair prompt (templates/ref_repair.j2: the failed
    trajectory, its turns quoted by :func:`~..runner.reference.quoted_trace`, the task and
    its correct answer). Both show the frozen part and rewrite only the trainable part,
    shown as a block quote."""
    if failure is None:
        text = _JINJA.get_template("ref_mutate.j2").render(frozen=frozen_prompt(genome), trainable=genome.instruction)
    else:
        text = _JINJA.get_template("ref_repair.j2").render(
            frozen=frozen_prompt(genome), trainable=genome.instruction, task=failure.get("task", ""),
            answer=failure.get("answer", ""), trace=failure.get("trace", ""))
    return [{"role": "user", "content": text.strip()}]


def wakeup_answer(text: str) -> bool:
    """``\\boxed{yes}`` anywhere in the lower-cased reply (the reference's test, researchworld
    ``match_wakeup_condition``); anything else is no."""
    return "boxed{yes}" in (text or "").lower()


def render_mutation(genome: PartialGenome, template: str = "mutate.j2") -> list[dict]:
    """Chat messages asking the LLM to rewrite ``genome``'s instruction (``mutate.j2`` for a
    child of a rich agent, ``repair.j2`` for the replacement of a bankrupt one)."""
    text = _JINJA.get_template(template).render(capability=genome.capability, instruction=genome.instruction)
    return [{"role": "user", "content": text.strip()}]


class LLMPartialPolicy(PartialLayer):
    """Partial agents driven by one shared frozen model, a
    :class:`~scarce_lab.llm.model.Model` (``model``: one from
    :func:`~scarce_lab.llm.model.model_for`, or a model string bound here to ``client``
    as a :class:`~scarce_lab.llm.model.ClientModel`). Every decision and rewrite goes
    through its ``adecide``/``acomplete``; run, round (episode) and agent reach the
    records through the request and the run scope.

    ``record_calls(list[LLMCallRecord])`` receives every call record (the runner passes
    the recorder's). ``litellm_kwargs`` go to every call (``mock_response`` in tests;
    only with a model string: a resolved model carries its own). ``baseline='full'``
    makes every founder a full agent.

    Raises:
        ValueError: ``model`` is a scripted policy (the scripted stand-ins are their own
            policies, :class:`~.partial.ScriptedPartialPolicy`).
    """

    def __init__(
        self,
        model,
        client=None,
        *,
        seed: int,
        record_calls: Callable[[list], None] = lambda calls: None,
        full: bool = False,
        max_tokens: int = 96,
        **litellm_kwargs,
    ):
        from scarce_lab.llm.model import ClientModel, Model

        if isinstance(model, Model):
            if model.scripted:
                raise ValueError(f"model {model.name!r} is a scripted policy, not a model for LLM partial agents")
            if litellm_kwargs:
                raise ValueError(f"model {model.name!r} is already bound: pass litellm kwargs to model_for, "
                                 f"not here ({sorted(litellm_kwargs)})")
            self.lm = model
        else:
            self.lm = ClientModel(model, client, **litellm_kwargs)
        self.model = self.lm.name
        self.seed = seed
        self.record_calls = record_calls
        self.full = full
        self.max_tokens = max_tokens
        self.episode = 0

    @property
    def kwargs(self) -> dict:
        """The litellm kwargs sent with every call (the model's own dict: a change
        applies to the next call)."""
        return self.lm.litellm_kwargs

    def _complete(self, messages: list[dict], *, seed: int, purpose: str, agent: str | None, round: int,
                  max_tokens: int | None = None):
        """One completion of :attr:`lm` (``max_tokens``: default :attr:`max_tokens`), its
        record passed to ``record_calls``.

        Raises:
            MissingDecisionError: no answer (transport failure or context overflow).
        """
        res = _run(self.lm.acomplete(messages, seed=seed, purpose=purpose, agent=agent, round=round,
                                     max_tokens=self.max_tokens if max_tokens is None else max_tokens))
        self.record_calls([res.record])
        if res.record.outcome in NO_ANSWER:
            res.record.missing = True
            raise MissingDecisionError.from_calls([res.record])
        return res

    def _rewrite(self, genome: PartialGenome, rng: random.Random, template: str, purpose: str,
                 messages: list[dict] | None = None) -> str | None:
        """The LLM's rewrite of ``genome``'s instruction, or None when the call failed."""
        res = self._complete(messages or render_mutation(genome, template), purpose=purpose, agent=None,
                             seed=call_seed(self.seed, purpose, self.episode, rng.random()), round=self.episode)
        text = unquote(res.text or "").strip()  # a reply in the quoted form it was shown in
        if res.error or not text or res.record.outcome not in (None, "ok"):
            res.record.fallback_used = True
            return None
        return text[:600]

    def mutate(self, genome: PartialGenome, rng: random.Random) -> PartialGenome:
        """A rich agent's child: trigger toggled, instruction rewritten by the LLM."""
        child = mutate_trigger(genome, rng)
        text = self._rewrite(genome, rng, "mutate.j2", "mutation")
        return child if text is None else PartialGenome(child.capability, text, child.wake_on)

    def repair(self, genome: PartialGenome, rng: random.Random) -> PartialGenome:
        """A bankrupt agent's replacement: its instruction rewritten by the LLM, told the
        agent failed; trigger kept (toggled instead when the rewrite fails)."""
        text = self._rewrite(genome, rng, "repair.j2", "repair")
        if text is None:
            return mutate_trigger(genome, rng)
        return PartialGenome(genome.capability, text, genome.wake_on)

    # -- the eom-reference preset -------------------------------------------------------
    def wakes(self, genome: PartialGenome, obs: QAObs, *, agent: str, step: int) -> bool:
        """The reference's joining: the model, shown the agent's prompt and the state,
        answers ``\\boxed{yes}`` or not. A reply without it is no (one with neither
        ``boxed{yes}`` nor ``boxed{no}`` is recorded as a fallback); a missing reply
        (transport failure) stops the run."""
        res = self._complete(render_wakeup(genome, obs), seed=call_seed(self.seed, "wake", self.episode, step, agent),
                             purpose="wakeup", agent=agent, round=self.episode)
        text = (res.text or "").lower()
        if "boxed{yes}" not in text and "boxed{no}" not in text:
            res.record.fallback_used = True  # no decision in the reply: counted as no (the reference's rule)
        return wakeup_answer(text)

    def _reference_rewrite(self, genome, rng, failure, purpose) -> PartialGenome:
        text = self._rewrite(genome, rng, "", purpose, messages=render_reference_rewrite(genome, failure))
        if text is None or len(text) < 10:  # the reference keeps the parent's text below 10 characters
            return genome
        return PartialGenome(genome.capability, text, genome.wake_on)

    def ref_mutate(self, genome: PartialGenome, rng: random.Random) -> PartialGenome:
        """Mutation of the richest: the trainable part gains a general reasoning skill;
        the frozen part (the role) is kept."""
        return self._reference_rewrite(genome, rng, None, "mutation")

    def ref_repair(self, genome: PartialGenome, failure: dict | None, rng: random.Random) -> PartialGenome:
        """Repair: the trainable part rewritten from the failed trajectory, the task and
        its correct answer (without a recorded failure: the mutation prompt)."""
        return self._reference_rewrite(genome, rng, failure, "repair" if failure else "mutation")

    def act(self, genome: PartialGenome, obs: QAObs, *, agent: str, episode: int, step: int) -> Contribution:
        from scarce_lab.llm.model import DecisionRequest

        answering = genome.capability in ANSWERING
        schema = AnswerDecision if answering else NoteDecision
        fallback = AnswerDecision(note="", answer="") if answering else NoteDecision(note="")
        out = _run(self.lm.adecide(DecisionRequest(
            schema=schema,
            fallback=fallback,
            seed=call_seed(self.seed, episode, step, agent),
            messages=render_act(genome, obs, reference=self.reference),
            purpose=f"act:{genome.capability}",
            agent=agent,
            round=episode,
            max_tokens=self.max_tokens,
        )))
        self.record_calls(out.calls)
        if out.missing:
            raise MissingDecisionError.from_calls(out.calls)
        d = out.decision
        answer = getattr(d, "answer", None) or None
        return Contribution(genome.capability, d.note.strip()[:400], answer)


def _run(coro):
    from scarce_lab.llm.client import run_sync

    return run_sync(coro)
