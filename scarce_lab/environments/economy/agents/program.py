"""Agents that evolve a program (task directories, :mod:`scarce_lab.environments.economy.world.program`).

Genomes are the question-answer agents' :class:`~.partial.PartialGenome` (capability,
instruction, trigger), with program-task instructions (templates/program_<cap>.txt):
``plan`` and ``check`` write notes, ``compute`` edits the program, ``answer`` submits
it to the verifier (tagged ``terminal`` under the reference rules).

- :class:`ScriptedProgramPolicy` (``--model scripted/partial``): an offline stand-in;
  ``compute`` changes one integer literal of the program by a seeded step (a blind
  mutation operator, as in genetic programming), the others write fixed notes.
- :class:`LLMProgramPolicy`: ``compute`` asks the model for the whole new program in a
  fenced code block (no block: no edit, recorded as a fallback); ``plan``/``check``
  ask for a short note. Joining, mutation and repair are the LLM partial agents' (the
  reference's ``\\boxed{yes}`` question; frozen + trainable prompt parts).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from ..world.program import ProgramEdit, ProgramObs
from ..world.qa import CAPABILITIES
from .llm import _JINJA, LLMPartialPolicy, call_seed, reference_system_prompt
from .partial import ANSWERING, DEFAULT_WAKE, TEMPLATES, PartialGenome, ScriptedPartialPolicy

_INT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def program_genome(capability: str) -> PartialGenome:
    """The shipped program-task genome of ``capability``: its instruction
    (templates/program_<cap>.txt) and its default trigger.

    Raises:
        ValueError: ``capability`` is not one of plan, compute, check, answer.
    """
    if capability not in CAPABILITIES:
        raise ValueError(f"capability must be one of {CAPABILITIES}, got {capability!r}")
    instruction = (TEMPLATES / f"program_{capability}.txt").read_text().strip()
    return PartialGenome(capability, instruction, DEFAULT_WAKE[capability])


class _ProgramGenomes:
    """The program task's founders (cycling through plan, compute, check, answer) and
    newcomers (a random capability), for both program policies."""

    def founders(self, n: int, rng: random.Random) -> list[PartialGenome]:
        return [program_genome(CAPABILITIES[i % len(CAPABILITIES)]) for i in range(n)]

    def newcomer(self, rng: random.Random) -> PartialGenome:
        return program_genome(rng.choice(CAPABILITIES))


def nudge_integer(program: str, rng: random.Random) -> str | None:
    """``program`` with one integer literal (chosen by ``rng``) moved by -2..+2 (never 0,
    never below 0); None if it has none."""
    spots = list(_INT.finditer(program))
    if not spots:
        return None
    m = rng.choice(spots)
    v = max(0, int(m.group(1)) + rng.choice((-2, -1, 1, 2)))
    return program[: m.start()] + str(v) + program[m.end():]


def render_program_act(obs: ProgramObs, capability: str) -> str:
    """The user message of a program-task step (templates/program_act.j2): the task, the
    current program fenced (:func:`~scarce_lab.llm.quoting.fenced`), the score and the
    notes quoted."""
    return _JINJA.get_template("program_act.j2").render(instruction=obs.instruction, program=obs.program,
                                                        best_score=obs.best_score, notes=list(obs.notes),
                                                        compute=capability == "compute").strip()


def extract_program(text: str) -> str | None:
    """The last fenced code block of a reply (None: there is none)."""
    blocks = _FENCE.findall(text or "")
    return blocks[-1] if blocks and blocks[-1].strip() else None


class ScriptedProgramPolicy(_ProgramGenomes, ScriptedPartialPolicy):
    """Offline program agents (see module docstring); seeded per run, episode, step, agent."""

    def __init__(self, seed: int = 0):
        super().__init__("partial")
        self.seed = seed

    def act(self, genome: PartialGenome, obs: ProgramObs, *, agent: str, episode: int, step: int) -> ProgramEdit:
        cap = genome.capability
        if cap in ANSWERING:
            return ProgramEdit(cap, "submit", submit=True)
        if cap == "compute":
            new = nudge_integer(obs.program, random.Random(f"{self.seed}:{episode}:{step}:{agent}"))
            return ProgramEdit(cap, "edit" if new else "no integer to change", new)
        return ProgramEdit(cap, "keep the best program; change one constant at a time" if cap == "plan"
                           else f"best score so far: {obs.best_score}")


#: The answer tokens of a program (``act:compute``) call; recorded in a task-directory
#: run's condition settings as ``purpose_max_tokens`` (the record gate compares it).
PROGRAM_TOKENS = 2048


class LLMProgramPolicy(_ProgramGenomes, LLMPartialPolicy):
    """Program agents driven by a model (see module docstring)."""

    def __init__(self, *args, program_tokens: int = PROGRAM_TOKENS, **kwargs):
        super().__init__(*args, **kwargs)
        self.program_tokens = program_tokens
        self.reference = True

    def act(self, genome: PartialGenome, obs: ProgramObs, *, agent: str, episode: int, step: int) -> ProgramEdit:
        cap = genome.capability
        if cap in ANSWERING:
            return ProgramEdit(cap, "submit", submit=True)
        messages = [{"role": "system", "content": reference_system_prompt(genome)},
                    {"role": "user", "content": render_program_act(obs, cap)}]
        res = self._complete(messages, seed=call_seed(self.seed, episode, step, agent), purpose=f"act:{cap}",
                             agent=agent, round=episode, max_tokens=self.program_tokens if cap == "compute" else None)
        text = res.text or ""
        if cap == "compute":
            program = extract_program(text)
            if program is None:
                res.record.fallback_used = True  # no code block: no edit
            return ProgramEdit(cap, "edit" if program else "no program in the reply", program)
        return ProgramEdit(cap, text.strip()[:400])


def program_policies(cfg) -> Callable[[str, str | None], ScriptedProgramPolicy]:
    """The scripted registry of task-directory runs (for
    :func:`~scarce_lab.llm.model.model_for`): ``partial`` -> :class:`ScriptedProgramPolicy`
    seeded with ``cfg.seed``.

    Raises (from the registry):
        ValueError: any other policy name, or an argument.
    """

    def policy(name: str, arg: str | None) -> ScriptedProgramPolicy:
        if name != "partial" or arg is not None:
            raise ValueError(f"model {cfg.model!r}: task directories run scripted/partial or an LLM")
        p = ScriptedProgramPolicy(cfg.seed)
        p.reference = True
        return p

    return policy


def make_program_policy(cfg, *, client=None, record_calls=lambda calls: None, llm_kwargs=None):
    """The agent layer of a task-directory run: the model string resolved once
    (:func:`~scarce_lab.llm.model.model_for`): ``scripted/partial`` -> the scripted
    stand-in (:func:`program_policies`), a model -> :class:`LLMProgramPolicy` over it
    (``client``, else one made from ``cfg.llm``). ``llm_kwargs``: the policy's settings
    (``max_tokens``, ``program_tokens``) and litellm kwargs for every call.

    Raises:
        ValueError: a scripted policy other than ``partial``.
    """
    from scarce_lab.llm import make_client
    from scarce_lab.llm.model import model_for

    settings, litellm_kwargs = split_llm_kwargs(cfg, llm_kwargs, ("max_tokens", "program_tokens"))
    if settings.get("program_tokens", PROGRAM_TOKENS) != PROGRAM_TOKENS:
        raise ValueError(f"llm_kwargs program_tokens={settings['program_tokens']!r}: the manifest records "
                         f"{PROGRAM_TOKENS} (purpose_max_tokens act:compute); a program call sends that")
    lm = model_for(cfg.model, client=client, make_client=lambda: make_client(cfg.llm),
                   policies=program_policies(cfg), **litellm_kwargs)
    if lm.scripted:  # a scripted stand-in is its own agent layer (same methods as the model policy)
        return lm.policy
    return LLMProgramPolicy(lm, seed=cfg.seed, record_calls=record_calls, **settings)


def split_llm_kwargs(cfg, llm_kwargs: dict | None, settings: tuple[str, ...], *,
                     per_seat: bool = False) -> tuple[dict, dict]:
    """``(policy settings, litellm kwargs)`` of a runner's ``llm_kwargs``: the keys in
    ``settings`` configure the policy, the rest go to every model call. The policy's
    ``max_tokens`` is ``cfg.llm.max_tokens`` (recorded in the condition settings), so a
    recorded value is always the sent one (``per_seat``: the message names the seats'
    own setting too).

    Raises:
        ValueError: ``llm_kwargs`` ask for other answer tokens than ``llm.max_tokens``.
    """
    kw = dict(llm_kwargs or {})
    out = {k: kw.pop(k) for k in settings if k in kw}
    asked = out.get("max_tokens", cfg.llm.max_tokens)
    if asked != cfg.llm.max_tokens:
        seats = " (or seats.<seat>.max_tokens per seat)" if per_seat else ""
        raise ValueError(f"llm_kwargs max_tokens={asked!r} differs from llm.max_tokens={cfg.llm.max_tokens}: set "
                         f"llm.max_tokens{seats}, so the manifest records what is sent")
    out["max_tokens"] = cfg.llm.max_tokens
    return out, kw
