"""SovSim event payloads (environment ``sovsim``).

``Event.round`` is the game round, 1-based; round 0 holds the set-up. Units: pool
units for the pool, extractions and announcements; points for payoffs (exact payoffs
are kept as fraction strings, eq. 3 of the SovSim paper). Agents are ``a0 .. a{n-1}``;
the leader (boss or king) is the last. Lists indexed "by agent" follow
``GameStart.agents``.

==============  =========================  ============  ==========================
kind            agent                      phase         visibility
==============  =========================  ============  ==========================
game_start      --                         setup         public
announcement    the king (kcpr_m)          announce      private (the king)
talk            the speaker                talk          public, or private (the
                                                         speaker and its recipients;
                                                         a silence: the speaker)
extraction      each agent                 extract |     private (the agent)
                                           leader
round           --                         settle        public
agent_joined    the newcomer               join          public
agent_left      the agent who left         join          public
game_end        --                         end           public
interview       each LLM agent (opt-in)    interview     researcher
ballot          each agent (elections)     elect         private (the voter)
election        --                         elect         public
quota_proposal  each agent (quota vote)    quota         private (the agent)
quota           --                         quota         public
sanction        each agent (sanctions)     sanction      private (the punisher)
sanctions       --                         sanction      public
==============  =========================  ============  ==========================

Institutions (:mod:`scarce_lab.environments.sovsim.world.institutions`, each off by
default): an election opens its round (``ballot`` events, then ``election``); the quota
vote follows the announcement and the discussion (``quota_proposal`` events, then
``quota``); the sanctions follow the round's ``round`` event (``sanction`` events, then
``sanctions``). ``round.payoffs`` stay the eq. 3 payoffs; with sanctions,
``game_end.total_payoffs`` are net of them.

With a newcomer (``config.newcomer``) ``agent_joined`` (and, when it replaces an
agent, ``agent_left``) open the round it joins in; from then on ``round`` lists the
agents of their round (leader last), and ``game_end.total_payoffs`` is by every
agent who played (``GameStart.agents``, then the newcomer).
"""

from __future__ import annotations

from fractions import Fraction
from typing import ClassVar, Literal, Self

from pydantic import Field, model_validator

from ...data.events.base import DecisionFields, Payload, Visibility
from ...data.events.interview import InterviewFields
from ...data.events.migrations import private_to


class GameStart(Payload):
    """Set-up of one simulation.

    Attributes:
        agents: agent ids in seat order (leader last).
        roles: role of each agent, by agent (``citizen``, ``worker``/``boss``,
            ``peasant``/``king``).
        leader: the leader's id, ``None`` in ``cpr``.
        condition: ``cpr``, ``bcpr``, ``kcpr`` or ``kcpr_m``.
        role_labels: ``default`` (the paper's role names in prompts) or ``neutral``.
        model: the model string that drove every agent (``mixed`` when the seats run
            different models: the manifest's ``models`` names each agent's).
        simulation: the simulation index within its sweep (0-based).
        n_agents, rounds, initial_pool, capacity, step, subordinate_cap,
            collapse_threshold, regeneration_factor, announce_max: the game's
            parameters (pool units; see ``scarce_lab.environments.sovsim.world.commons.CommonsConfig``).
    """

    kind: Literal["game_start"] = "game_start"
    agents: list[str]
    roles: list[str]
    leader: str | None
    condition: str
    role_labels: str
    model: str
    simulation: int
    n_agents: int
    rounds: int
    initial_pool: int
    capacity: int
    step: int
    subordinate_cap: int
    collapse_threshold: int
    regeneration_factor: int
    announce_max: int


class Announcement(DecisionFields):
    """The king's announcement of the pool (``kcpr_m`` only).

    Attributes:
        announced_pool: the pool value the king told the peasants (pool units; may be
            false).
        true_pool: the true pool at the start of the round (pool units).
        reasoning: the king's stated reasoning.
    """

    kind: Literal["announcement"] = "announcement"
    default_visibility: ClassVar[Visibility] = Visibility.private
    announced_pool: int
    true_pool: int
    reasoning: str = ""


class Extraction(DecisionFields):
    """One agent's extraction decision.

    Attributes:
        extraction: units taken from the pool (a multiple of ``step``), as applied
            (the fallback value when ``fallback_used``).
        max_extraction: the largest legal value for this agent now (pool units).
        pool_seen: the pool as presented to the agent (the announcement for
            ``kcpr_m`` peasants).
        remainder_seen: the pool left after the subordinates' extractions, shown to
            the leader in its phase (pool units); ``None`` otherwise.
        reasoning: the agent's stated reasoning.
    """

    kind: Literal["extraction"] = "extraction"
    default_visibility: ClassVar[Visibility] = Visibility.private
    extraction: int = Field(ge=0)
    max_extraction: int = Field(ge=0)
    pool_seen: int
    remainder_seen: int | None = None
    reasoning: str = ""


class Talk(DecisionFields):
    """One talk turn of the discussion phase (``talk`` public or public+private):
    a message, or the speaker's silence.

    Attributes:
        text: the message as posted (at most ``talk_max_chars`` characters); ``""``
            for a silence (nothing was posted; the event is then private to the speaker).
        recipients: the agents a private message was sent to (the envelope's
            ``visible_to`` is the speaker then these); empty for a public message.
        turn: the pass within the round's discussion (1-based).
        reasoning: the speaker's stated reasoning (scripted policies name themselves).

    A scripted policy's promise or quota is machine-readable in ``text``
    (``[promise extraction=N]``, ``[quota per_agent=N]``; parsed by
    :func:`scarce_lab.environments.sovsim.analysis.talk.stated_extractions`); a model's messages
    are labelled by the commons judge.
    """

    kind: Literal["talk"] = "talk"
    text: str
    recipients: list[str] = Field(default_factory=list)
    turn: int = Field(ge=1)
    reasoning: str = ""


class RoundSettled(Payload):
    """A settled round (eqs. 2-5).

    Attributes:
        agents: agent ids, in the order of the lists below.
        pool_before: true pool at the start of the round (pool units).
        announced_pool: the king's announcement (``kcpr_m``), else ``None``.
        extractions: units taken, by agent.
        remainder_seen: what the leader saw after the subordinates (``None`` in cpr).
        remaining: ``max(0, pool_before - sum(extractions))`` (pool units).
        payoffs: points, by agent (floats of ``payoffs_exact``).
        payoffs_exact: exact payoffs as fraction strings (``"53/4"``).
        collapsed: the remaining pool fell below the collapse threshold.
        next_pool: the pool of the next round (0 after a collapse).
    """

    kind: Literal["round"] = "round"
    agents: list[str]
    pool_before: int
    announced_pool: int | None = None
    extractions: list[int]
    remainder_seen: int | None = None
    remaining: int
    payoffs: list[float]
    payoffs_exact: list[str]
    collapsed: bool
    next_pool: int


class AgentJoined(Payload):
    """An agent joined the game (the newcomer; public). The event's ``agent`` is the
    newcomer (``a{n}``), its ``round`` the first round it plays.

    Attributes:
        role: its role from that round (``peasant``, ``king``...).
        replaces: the agent it replaced (``None``: an extra agent).
    """

    kind: Literal["agent_joined"] = "agent_joined"
    role: str
    replaces: str | None = None


class AgentLeft(Payload):
    """An agent left the game (replaced by the newcomer; public). The event's ``agent``
    is who left, its ``round`` the first round it no longer plays.

    Attributes:
        role: its last role.
        replaced_by: the newcomer who took its seat.
    """

    kind: Literal["agent_left"] = "agent_left"
    role: str
    replaced_by: str | None = None


class GameEnd(Payload):
    """End of the game.

    Attributes:
        rounds_played: rounds settled (1..rounds).
        collapsed: the game ended by collapse.
        total_payoffs: points summed over the rounds, by agent.
    """

    kind: Literal["game_end"] = "game_end"
    rounds_played: int
    collapsed: bool
    total_payoffs: list[float]


class Interview(InterviewFields):
    """An agent's retrospective interview after the game (``interviews: true``;
    fields: :class:`~.interview.InterviewFields`); researcher-only. ``round`` is the
    last round played."""

    kind: Literal["interview"] = "interview"


class Ballot(DecisionFields):
    """One agent's secret ballot in an election (``elections`` on).

    Attributes:
        candidate: the agent voted for, as applied (the incumbent when ``fallback_used``).
        incumbent: the leader before the election.
        reasoning: the agent's stated reasoning.
    """

    kind: Literal["ballot"] = "ballot"
    default_visibility: ClassVar[Visibility] = Visibility.private
    candidate: str
    incumbent: str
    reasoning: str = ""


class Election(Payload):
    """An election's public result (plurality; ties to the incumbent, else the lowest id).

    Attributes:
        candidates: agents who received votes (id order); ``votes`` their counts.
        incumbent: the leader before; ``elected`` the leader from this round on.
        moved: the seat changed hands.
        agents: the agents from this round on (leader last); ``roles`` theirs.
    """

    kind: Literal["election"] = "election"
    candidates: list[str]
    votes: list[int]
    incumbent: str
    elected: str
    moved: bool
    agents: list[str]
    roles: list[str]

    @model_validator(mode="after")
    def _a_tally(self) -> Self:
        """The counts and the result agree (world/institutions.py ``elect``)."""
        _same_length(self, "candidates", "votes")
        _not_negative(self, "votes")
        _same_length(self, "agents", "roles")
        if sum(self.votes) != len(self.agents):
            raise ValueError(f"election: {sum(self.votes)} votes from {len(self.agents)} agents")
        top = max(self.votes, default=0)
        tied = [c for c, v in zip(self.candidates, self.votes, strict=True) if v == top]
        if self.elected not in tied or (self.incumbent in tied and self.elected != self.incumbent):
            raise ValueError(f"election: {self.elected!r} elected, but the tally {dict(zip(self.candidates, self.votes, strict=True))} "
                             f"with incumbent {self.incumbent!r} elects one of {tied}")
        if self.moved != (self.elected != self.incumbent):
            raise ValueError(f"election: moved={self.moved} with incumbent {self.incumbent!r} and elected {self.elected!r}")
        return self


def _same_length(payload: Payload, *names: str) -> None:
    """Refuse lists of one public result that do not line up (names the fields)."""
    lengths = {n: len(getattr(payload, n)) for n in names}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{payload.kind}: lists of different lengths {lengths}")


def _not_negative(payload: Payload, *names: str) -> None:
    """Refuse a negative count or number of points (names the field and item)."""
    for n in names:
        for i, v in enumerate(getattr(payload, n)):
            if v < 0:
                raise ValueError(f"{payload.kind}: {n}.{i} is {v}, below 0")


class QuotaProposal(DecisionFields):
    """One agent's private quota proposal (``quota`` all or leader).

    Attributes:
        proposal: the proposed cap (pool units), as applied (the largest legal proposal,
            no restriction, when ``fallback_used``).
        max_proposal: the largest legal proposal (pool units).
        reasoning: the agent's stated reasoning.
    """

    kind: Literal["quota_proposal"] = "quota_proposal"
    default_visibility: ClassVar[Visibility] = Visibility.private
    proposal: int = Field(ge=0)
    max_proposal: int = Field(ge=0)
    reasoning: str = ""


class Quota(Payload):
    """The quota vote's public result: the lower median of the proposals binds this
    round's extractions.

    Attributes:
        proposals: the proposals, sorted (anonymous), pool units.
        quota: the binding cap (pool units).
        scope: ``all`` (every agent's cap) or ``leader`` (the leader's cap).
    """

    kind: Literal["quota"] = "quota"
    proposals: list[int]
    quota: int
    scope: str

    @model_validator(mode="after")
    def _the_lower_median(self) -> Self:
        """The quota is the lower median of the proposals (world/institutions.py)."""
        _not_negative(self, "proposals")
        if self.scope not in ("all", "leader"):
            raise ValueError(f"quota: scope {self.scope!r} is neither 'all' nor 'leader'")
        s = sorted(self.proposals)
        if not s or self.quota != s[(len(s) - 1) // 2]:
            raise ValueError(f"quota: {self.quota} is not the lower median of the proposals {self.proposals}")
        return self


class Sanction(DecisionFields):
    """One agent's punishment points after a round (``sanctions`` on); who punished whom
    is private to the punisher (and researchers).

    Attributes:
        targets: the other agents; ``points`` the points assigned each, as applied (none
            when ``fallback_used``).
        budget: the agent's round payoff, the most it may spend (points).
        reasoning: the agent's stated reasoning.
    """

    kind: Literal["sanction"] = "sanction"
    default_visibility: ClassVar[Visibility] = Visibility.private
    targets: list[str]
    points: list[int]
    budget: float
    reasoning: str = ""

    @model_validator(mode="after")
    def _points_by_target(self) -> Self:
        _same_length(self, "targets", "points")
        _not_negative(self, "points")
        return self


class Sanctions(Payload):
    """A round's sanctions settled (public; anonymous: who punished whom is not shown).

    Attributes:
        agents: agent ids, in the order of the lists.
        received / sent: punishment points received / assigned, by agent.
        spent / lost: points paid for punishing / removed by punishment, by agent.
        net: the change to each agent's round payoff (``-spent - lost``); ``net_exact``
            as fraction strings.
    """

    kind: Literal["sanctions"] = "sanctions"
    agents: list[str]
    received: list[int]
    sent: list[int]
    spent: list[float]
    lost: list[float]
    net: list[float]
    net_exact: list[str]

    @model_validator(mode="after")
    def _an_account(self) -> Self:
        """The accounts balance (world/institutions.py ``settle_sanctions``): every point
        sent is received, and net = -(spent + lost) exactly."""
        _same_length(self, "agents", "received", "sent", "spent", "lost", "net", "net_exact")
        _not_negative(self, "received", "sent", "spent", "lost")
        if sum(self.received) != sum(self.sent):
            raise ValueError(f"sanctions: {sum(self.sent)} points sent but {sum(self.received)} received")
        for a, sp, lo, n, ne in zip(self.agents, self.spent, self.lost, self.net, self.net_exact, strict=True):
            try:
                exact = Fraction(ne)
            except (ValueError, ZeroDivisionError):
                raise ValueError(f"sanctions: net_exact of {a} is not a fraction: {ne!r}") from None
            if float(exact) != n or abs(exact + Fraction(sp) + Fraction(lo)) > Fraction(1, 10**6):
                raise ValueError(f"sanctions: net of {a} is {ne} ({n}), not -(spent {sp} + lost {lo})")
        return self


PAYLOADS: tuple[type[Payload], ...] = (GameStart, Announcement, Extraction, RoundSettled, GameEnd,
                                       AgentJoined, AgentLeft, Talk, Interview, Ballot, Election,
                                       QuotaProposal, Quota, Sanction, Sanctions)
ROUND_MEANING = "game round, 1-based (0 = set-up)"


def final_counts(config: dict) -> dict[str, int]:
    """Kinds a complete run holds a known number of times, from its config: one
    ``game_end`` (a game ends by collapse or after its last round)."""
    return {"game_end": 1}


# -- version 1 -> 2 ------------------------------------------------------------
def migrate_v1(out: dict, p: dict) -> None:
    """Rewrite a version-1 SovSim event (``out``) and its payload (``p``) in place:
    ``game_start`` roles as a list and its config flattened; decisions private."""
    kind = out["kind"]
    if kind == "game_start":
        roles = p.pop("roles", {}) or {}
        p["roles"] = [roles.get(a, "") for a in p["agents"]]
        cfg = p.pop("config", {}) or {}
        for k in ("n_agents", "rounds", "initial_pool", "capacity", "step", "subordinate_cap",
                  "collapse_threshold", "regeneration_factor", "announce_max"):
            p[k] = cfg[k]
    elif kind in ("announcement", "extraction"):
        private_to(out)
