"""Partial agents for QA tasks: one capability each (plan, compute, check, answer),
short outputs; baselines: one ``full`` agent with every capability.

A genome is ``(capability, instruction, wake_on)``: ``instruction`` is the policy prompt
(LLM agents) and ``wake_on`` the trigger: the step kinds (see
:mod:`scarce_lab.environments.economy.world.qa`) on which the agent joins the auction. Only
``answer`` and ``full`` agents may give a final answer (EoM sec. 4: partial agents,
one capability each, so no single agent can solve a task alone).

:class:`ScriptedPartialPolicy` (``--model scripted/partial``) is an offline stand-in
for plumbing and tests: ``plan`` restates, ``compute`` works the generated arithmetic
problem through, ``check`` repeats the last number, ``answer`` answers the last number
in the notes.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from ..world.qa import CAPABILITIES, Contribution, QAObs, step_kind

TEMPLATES = Path(__file__).parent / "templates"
STEP_KINDS: tuple[str, ...] = ("start", "after_plan", "after_compute", "after_check", "after_answer")
DEFAULT_WAKE: dict[str, tuple[str, ...]] = {
    "plan": ("start",),
    "compute": ("start", "after_plan", "after_check", "after_answer"),
    "check": ("after_compute",),
    "answer": ("after_compute", "after_check"),
    "full": STEP_KINDS,
}
ANSWERING = ("answer", "full")


def default_instruction(capability: str) -> str:
    """The shipped instruction text for ``capability`` (templates/<capability>.txt)."""
    if capability not in (*CAPABILITIES, "full"):
        raise ValueError(f"capability must be one of {(*CAPABILITIES, 'full')}, got {capability!r}")
    return (TEMPLATES / f"{capability}.txt").read_text().strip()


@dataclass(frozen=True)
class PartialGenome:
    """Capability, instruction prompt and trigger (step kinds it wakes on)."""

    capability: str
    instruction: str
    wake_on: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.capability not in (*CAPABILITIES, "full"):
            raise ValueError(f"capability must be one of {(*CAPABILITIES, 'full')}, got {self.capability!r}")
        bad = [k for k in self.wake_on if k not in STEP_KINDS]
        if bad or not self.wake_on:
            raise ValueError(f"wake_on must be a non-empty subset of {STEP_KINDS}, got {self.wake_on!r}")

    def to_json(self) -> dict:
        return {
            "kind": "partial",
            "capability": self.capability,
            "instruction": self.instruction,
            "wake_on": list(self.wake_on),
        }


def founder_genomes(n: int, capabilities=CAPABILITIES) -> list[PartialGenome]:
    """``n`` founders cycling through ``capabilities`` with default prompts and triggers."""
    return [
        PartialGenome(c, default_instruction(c), DEFAULT_WAKE[c])
        for c in (capabilities[i % len(capabilities)] for i in range(n))
    ]


def random_genome(rng: random.Random) -> PartialGenome:
    """A newcomer: random capability, default prompt, random non-empty trigger set."""
    cap = rng.choice(CAPABILITIES)
    wake = tuple(k for k in STEP_KINDS if rng.random() < 0.5) or (rng.choice(STEP_KINDS),)
    return PartialGenome(cap, default_instruction(cap), wake)


def mutate_trigger(genome: PartialGenome, rng: random.Random) -> PartialGenome:
    """Toggle one step kind in the trigger set (kept non-empty)."""
    k = rng.choice(STEP_KINDS)
    wake = set(genome.wake_on) ^ {k} or {k}
    return PartialGenome(genome.capability, genome.instruction, tuple(s for s in STEP_KINDS if s in wake))


def genome_role(genome: PartialGenome) -> str:
    """A partial agent's role under the eom-reference preset: its capability."""
    return genome.capability


def genome_tags(genome: PartialGenome) -> tuple[str, ...]:
    """Its tags: ``terminal`` for the agents that may give the final answer."""
    return ("terminal",) if genome.capability in ANSWERING else ()


# -- scripted stand-in ----------------------------------------------------------------
_START = re.compile(r"has (\d+) ")
_OPS = [
    (re.compile(r"gets (\d+) more"), lambda v, a: v + a[0]),
    (re.compile(r"gives away (\d+)"), lambda v, a: v - a[0]),
    (re.compile(r"buys (\d+) bags with (\d+)"), lambda v, a: v + a[0] * a[1]),
    (re.compile(r"among (\d+) people"), lambda v, a: v // a[0]),
]


def scripted_compute(question: str) -> int | None:
    """Work a generated arithmetic problem through (None if it does not parse)."""
    m = _START.search(question)
    if not m:
        return None
    value = int(m.group(1))
    for sentence in question.split(". "):
        for pat, fn in _OPS:
            mm = pat.search(sentence)
            if mm:
                value = fn(value, [int(g) for g in mm.groups()])
                break
    return value


def _last_number(texts: list[str]) -> str | None:
    for t in reversed(texts):
        nums = re.findall(r"-?\d+", t)
        if nums:
            return nums[-1]
    return None


class PartialLayer:
    """What the partial agents' layers share (the scripted one here, the model's in
    :mod:`.llm`): genomes, trigger and, under the eom-reference preset, role and tags.
    ``full``: every founder a full agent (the ``full`` baseline)."""

    kind = "partial"
    full = False
    reference = False  # set by the runner under an eom-reference preset

    role_of = staticmethod(genome_role)
    tags_of = staticmethod(genome_tags)

    def founders(self, n: int, rng: random.Random) -> list[PartialGenome]:
        return founder_genomes(n, ("full",) if self.full else CAPABILITIES)

    def newcomer(self, rng: random.Random) -> PartialGenome:
        return random_genome(rng)

    def trigger(self, genome: PartialGenome, obs: QAObs) -> bool:
        return step_kind(obs) in genome.wake_on

    def genome_json(self, genome: PartialGenome) -> dict:
        return genome.to_json()


class ScriptedPartialPolicy(PartialLayer):
    """Offline partial agents (see module docstring). ``baseline='full'`` gives full agents."""

    def __init__(self, name: str = "partial"):
        if name not in ("partial", "full"):
            raise ValueError(f"scripted policy for QA tasks must be partial|full, got {name!r}")
        self.name = name
        self.full = name == "full"

    #: a child's, a bankrupt agent's replacement's and (eom-reference preset) a mutation's
    #: genome: the trigger modified (the scripted stand-in has no prompt to rewrite)
    mutate = repair = ref_mutate = staticmethod(mutate_trigger)

    # -- the eom-reference preset (no model: the trigger stands in for the wake-up
    # question, a trigger mutation for the prompt rewrites) -------------------------------
    def wakes(self, genome: PartialGenome, obs: QAObs, *, agent: str, step: int) -> bool:
        return self.trigger(genome, obs)

    def ref_repair(self, genome: PartialGenome, failure: dict | None, rng: random.Random) -> PartialGenome:
        return mutate_trigger(genome, rng)

    def act(self, genome: PartialGenome, obs: QAObs, *, agent: str, episode: int, step: int) -> Contribution:
        cap = genome.capability
        if cap == "plan":
            return Contribution(cap, "Apply each 'Then' step in order to the first number.")
        if cap in ("compute", "full"):
            v = scripted_compute(obs.question)
            text = f"result = {v}" if v is not None else "cannot compute"
            return Contribution(cap, text, str(v) if cap == "full" and v is not None else None)
        last = _last_number([t for _, t in obs.notes])
        if cap == "check":
            return Contribution(cap, f"checked {last}" if last else "nothing to check")
        answer = last if last is not None else (_last_number([obs.question]) or "0")
        return Contribution(cap, f"answer {answer}", answer)
