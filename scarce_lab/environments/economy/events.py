"""Economy of Minds event payloads (environment ``economy``).

``Event.round`` is the episode index: training episodes ``0 .. episodes-1`` first,
then frozen-evaluation episodes ``episodes .. episodes+eval_episodes-1``;
``Event.phase`` is ``train`` or ``eval``. Money is in integer credits (EoM sec. 3:
bids, bucket-brigade payments, rewards, rent, endowments). ``step`` fields count steps
within the episode from 0. Every kind is public except where noted: the economy's
auctions and wealth are common knowledge in the Hayek machine.

Kinds: ``birth``, ``episode_start`` (detail ``steps`` only), ``auction``, ``payment``,
``step``, ``reward``, ``episode_end``, ``episode_agents``, ``rent``, ``death``,
``population``, ``agent_joined`` (runs with a newcomer only).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...data.events.base import Payload
from ...data.events.migrations import pairs


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RuleLiteral(_Record):
    """One condition of a Blocks World rule: ``feature`` must be ``value``."""

    feature: str
    value: bool


class Genome(_Record):
    """An agent's policy, as data (fields of the other genome kind are ``None``).

    Attributes:
        kind: ``rule`` (Blocks World rule agent) or ``partial`` (question-answer agent
            with one capability, possibly an LLM prompt).
        literals, move, text: a rule: its conditions, the move ``[src, dst]`` stack
            indices, and a readable description.
        capability, instruction, wake_on: a partial agent: its capability (plan,
            compute, check, answer, full), its instruction (the LLM prompt, rewritten by
            mutation) and the step kinds that trigger it.
    """

    kind: Literal["rule", "partial"]
    literals: list[RuleLiteral] | None = None
    move: list[int] | None = None
    text: str | None = None
    capability: str | None = None
    instruction: str | None = None
    wake_on: list[str] | None = None


class Birth(Payload):
    """An agent enters the economy (founder, child of a rich agent, or newcomer); the
    event's ``agent`` is the new agent.

    Attributes:
        origin: ``founder``, ``child``, ``newcomer``, ``replacement`` or ``joined`` (a
            run's newcomer, see ``agent_joined``).
        parent: the parent's id (children and replacements), else ``None``.
        bid: its bid b_a (credits; the fixed bid of the paper's scheme).
        endowment: credits it starts with. funder: who paid the endowment (``bank``
            or the parent). episode: the episode it was born in.
        genome: its policy.
    """

    kind: Literal["birth"] = "birth"
    origin: str
    parent: str | None = None
    bid: int
    endowment: int
    funder: str
    episode: int
    genome: Genome


class TaskInstance(_Record):
    """The task of an episode: Blocks World (``n_blocks``, ``target``, ``stacks``:
    colour ids bottom first) or a question (``item_id``, ``question``, ``answer``)."""

    n_blocks: int | None = None
    target: list[int] | None = None
    stacks: list[list[int]] | None = None
    item_id: str | None = None
    question: str | None = None
    answer: str | None = None


class EpisodeStart(Payload):
    """Start of an episode (written with ``detail="steps"``): its index within its
    phase and the task instance."""

    kind: Literal["episode_start"] = "episode_start"
    episode: int
    task: TaskInstance


class Bid(_Record):
    """One eligible agent's bid in an auction (credits)."""

    agent: str
    bid: int


class Auction(Payload):
    """The auction for control of one step (EoM sec. 3.2).

    Attributes:
        step: step index in the episode. bids: the eligible agents' bids.
        winner: the agent that acts. price: what it pays the previous winner (credits).
        tie: several agents bid the maximum. random_winner: the winner was drawn at
            random (ablation ``no-auction`` or a tie-break).
        step_kind: the task's kind of step (e.g. ``start``, ``after_plan``).
        round_robin: the round-robin baseline chose the agent (no money moves).
        call_ids: the model calls that decided who bid (the reference preset's
            wake-up questions, ``purpose`` ``wakeup``), as in ``llm_calls.jsonl``;
            empty where no model decided (bids themselves are the agents' rules).
    """

    kind: Literal["auction"] = "auction"
    step: int
    bids: list[Bid]
    winner: str
    price: int
    tie: bool
    random_winner: bool
    step_kind: str
    round_robin: bool = False
    call_ids: list[str] = Field(default_factory=list)


class Payment(Payload):
    """Bucket brigade: the winner pays its bid to the previous winner (the bank on an
    episode's first step). Training only. Amount in credits."""

    kind: Literal["payment"] = "payment"
    step: int
    payer: str
    payee: str
    amount: int
    reason: str


class Action(_Record):
    """What the winner did: a Blocks World move (``src``, ``dst`` stack indices) or a
    question-answer note (``capability``, ``text``, ``answer``)."""

    src: int | None = None
    dst: int | None = None
    capability: str | None = None
    text: str | None = None
    answer: str | None = None


class Step(Payload):
    """The winner's action and the task's answer to it.

    Attributes:
        step: step index. action: the action. step_kind: as in the auction.
        reward: credits the task paid (0 unless the episode was solved).
        done, solved: the episode ended / ended solved.
        invalid: the action was not legal (Blocks World: an empty source stack).
        final_answer: the answer the task graded (question-answer tasks, last step).
        call_ids: the model calls behind the action (the winner's ``act:...`` call and
            its repair), as in ``llm_calls.jsonl``; empty for rules and scripted agents.
    """

    kind: Literal["step"] = "step"
    step: int
    action: Action
    step_kind: str
    reward: int
    done: bool
    solved: bool
    invalid: bool = False
    final_answer: str | None = None
    call_ids: list[str] = Field(default_factory=list)


class Reward(Payload):
    """The environment's reward paid to the agent that acted (training only; credits)."""

    kind: Literal["reward"] = "reward"
    step: int
    amount: int


class EpisodeEnd(Payload):
    """End of an episode.

    Attributes:
        episode: index within its phase. solved: the task was solved. steps: steps taken.
        reward: credits the task paid. end: why it ended (``solved``, ``done``,
            ``no_eligible``, ``max_steps``). task: the instance's size or id (written
            with ``detail="episodes"``, where there is no ``episode_start``).
    """

    kind: Literal["episode_end"] = "episode_end"
    episode: int
    solved: bool
    steps: int
    reward: int
    end: str
    task: TaskInstance | None = None


class StepKindWins(_Record):
    """Steps of one kind won in an episode."""

    step_kind: str
    wins: int


class AgentEpisodeSummary(_Record):
    """One agent's episode: steps won by step kind, credits ``paid`` (bids),
    ``received`` (from the next winner) and ``reward``. Realised value of its wins =
    received + reward."""

    agent: str
    wins: list[StepKindWins]
    paid: int
    received: int
    reward: int


class EpisodeAgents(Payload):
    """Per-agent aggregates of one episode (agents that won at least one step)."""

    kind: Literal["episode_agents"] = "episode_agents"
    agents: list[AgentEpisodeSummary]


class Rent(Payload):
    """Rent charged at the end of an episode (EoM: every k episodes): ``amount``
    credits from each of ``agents`` (what they could pay), ``total`` credits."""

    kind: Literal["rent"] = "rent"
    amount: int
    agents: list[str]
    total: int


class Death(Payload):
    """The event's ``agent`` leaves at the end of ``episode``: ``cause``
    (``bankruptcy``), its ``wealth`` before settlement, the ``settlement`` paid
    (credits) and its ``age`` in episodes."""

    kind: Literal["death"] = "death"
    episode: int
    cause: str
    wealth: int
    settlement: int
    age: int


class AgentJoined(Payload):
    """The event's ``agent`` joins the economy at the start of training episode
    ``episode`` with its own ``seat`` (the run's ``newcomer``: see
    :class:`scarce_lab.environments.economy.config.EconomyNewcomer`); its ``birth`` event (origin
    ``joined``) follows with its bid, endowment and genome. The seat's model is in the
    manifest (``models``), never in an agent's prompt."""

    kind: Literal["agent_joined"] = "agent_joined"
    episode: int
    seat: str


class AgentWealth(_Record):
    """One living agent in a population snapshot: wealth and bid in credits, and
    whether it is a novice (bids max + epsilon until its first win)."""

    agent: str
    wealth: int
    bid: int
    novice: bool


class Population(Payload):
    """Snapshot of the population after an episode: the living agents, the bank and
    the rent sink (credits); ``total`` is the ledger's sum over every account (always 0:
    money is conserved)."""

    kind: Literal["population"] = "population"
    agents: list[AgentWealth]
    bank: int
    rent_sink: int
    total: int


PAYLOADS: tuple[type[Payload], ...] = (
    Birth, EpisodeStart, Auction, Payment, Step, Reward, EpisodeEnd, EpisodeAgents, Rent, Death, Population,
    AgentJoined,
)
ROUND_MEANING = "episode index (training episodes first, then frozen evaluation)"


def final_counts(config: dict) -> dict[str, int]:
    """Kinds a complete run holds a known number of times, from its config: one
    ``episode_end`` per training and evaluation episode."""
    n = [config.get("episodes"), config.get("eval_episodes")]
    return {"episode_end": n[0] + n[1]} if all(isinstance(x, int) for x in n) else {}


def genome_payload(g: dict) -> Genome:
    """A policy's genome (``genome_json``: a rule's ``if``/``move``/``text``, a partial
    agent's ``capability``/``instruction``/``wake_on``) as its typed record."""
    return Genome(**_genome(g))


# -- version 1 -> 2 ------------------------------------------------------------
def _genome(g: dict) -> dict:
    if g.get("kind") == "rule":
        return {"kind": "rule", "literals": [{"feature": f, "value": w} for f, w in g.get("if", [])],
                "move": list(g.get("move", [])), "text": g.get("text")}
    return {"kind": "partial", "capability": g.get("capability"), "instruction": g.get("instruction"),
            "wake_on": list(g.get("wake_on", []))}


def migrate_v1(out: dict, p: dict) -> None:
    """Rewrite a version-1 Economy event (``out``) and its payload (``p``) in place
    (genomes, the agent of births and deaths, bids, step info, per-agent records as
    lists)."""
    kind = out["kind"]
    if kind == "birth":
        p["genome"] = _genome(p["genome"])
        out["agent"] = p.pop("agent", out.get("agent"))
    elif kind == "death":
        out["agent"] = p.pop("agent", out.get("agent"))
    elif kind == "auction":
        p["bids"] = pairs(p.get("bids") or {}, "agent", "bid")
        p.pop("eligible", None)
    elif kind == "step":
        info = p.pop("info", None) or {}
        if info.get("invalid"):
            p["invalid"] = True
        if "answer" in info:
            p["final_answer"] = None if info["answer"] is None else str(info["answer"])
    elif kind == "episode_agents":
        p["agents"] = [
            {"agent": a, "wins": pairs(s.get("wins", {}), "step_kind", "wins"), "paid": s["paid"],
             "received": s["received"], "reward": s["reward"]}
            for a, s in (p.get("agents") or {}).items()
        ]
    elif kind == "population":
        wealth, bids = p.pop("wealth"), p.pop("bids")
        novices = set(p.pop("novices", []))
        p["agents"] = [{"agent": a, "wealth": w, "bid": bids[a], "novice": a in novices} for a, w in wealth.items()]
