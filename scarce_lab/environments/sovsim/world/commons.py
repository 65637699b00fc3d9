"""SovSim: a common-pool resource game under four power conditions (pure, no I/O).

Size: the whole game in one module (rules, the four conditions' turn order and
information, newcomers, the round record), so that the paper's equations are read in one
place; talk is apart (:mod:`.talk`).

Rules from the SovSim paper ("Sovereignty over the Commons Simulation", eqs. 1-5):

- ``n_agents`` = 4 agents, ``rounds`` = 12, pool P_1 = 120 units, capacity 120.
- Extractions z are multiples of 3 (pool units).
- ``remaining = max(0, P_t - sum_i z_i)`` (eq. 2);
  ``payoff_i = z_i / 3 + remaining / n`` points with n the number of agents, exact
  (:class:`fractions.Fraction`) (eq. 3; the paper's n is 4).
- If ``remaining < 12`` (collapse threshold) the pool collapses: the round is paid
  and the game ends (eq. 4). Otherwise ``P_{t+1} = min(120, 2 * remaining)`` (eq. 5).
  Extractions are paid as chosen even when their sum exceeds the pool.

Conditions (turn order and information per round):

- ``cpr``: four symmetric citizens choose 0..30 simultaneously, seeing the pool.
- ``bcpr``: three workers choose 0..30 simultaneously; the boss then sees their
  choices and the remainder ``max(0, P_t - sum z_workers)`` and extracts up to
  ``min(30, remainder)``.
- ``kcpr``: as ``bcpr`` but the king may take any multiple of 3 up to the whole
  remainder.
- ``kcpr_m``: before the round the king, who knows the pool, announces a pool value
  (integer 0..999, possibly false); peasants see only the announcement (and are told
  it may be false); the king then extracts as in ``kcpr``. Once a round is settled its
  true pool is revealed in every agent's history next to the announcement.

Talk (:mod:`scarce_lab.environments.sovsim.world.talk`, off by default: the paper's game): a
discussion phase after the announcement and before the extractions (leader last).
Institutions (:mod:`scarce_lab.environments.sovsim.world.institutions`, each off by default):
an election opening a round, a quota vote before the extractions, peer sanctions after
the round is settled.

Agents are ``a0 .. a{n-1}``; the leader (boss or king) is the last one, matching the
released SovSim trajectories (index 3 is the leader). The environment decides what
each agent observes (:meth:`CommonsGame.observe`); a subordinate's observation in
``kcpr_m`` never holds the current true pool.

Legal actions (the action mask, as PettingZoo's observations carry one): every
observation carries :class:`LegalActions`, the integers its agent may choose now.
:meth:`CommonsGame.legal_actions` is the one home of this rule: the game checks
actions with it, agents read it from the observation, and the runner replaces an
illegal answer through it.

Newcomer (GovSim's perturbation; :class:`NewcomerRule`, off by default, so a game
without one is the paper's game exactly): at the start of round ``k`` an outsider
``a{n}`` joins, as an extra agent or in an incumbent's seat. Eq. 3's ``n`` is the number
of agents *present in the round*, so ``remaining / n`` divides the remaining pool among
the agents who stand to lose it: the payoffs of a round sum to ``sum z / 3 +
remaining``, as in the paper. The collapse threshold, the caps and the regeneration
stay the configured pool units (properties of the resource, not of the group), so an
extra agent makes the pool's sustainable share ``P / (2 (n + 1))``. The leader is
always the last agent of :attr:`CommonsGame.agents` and of each :class:`RoundRecord`.
The newcomer sees the rules, the current pool and the rounds since it joined (GovSim's
newcomer starts with an empty memory); every agent's observation lists the joins and
leaves so far (:attr:`Observation.changes`: public).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .institutions import (
    BallotLegal,
    ElectionRecord,
    InstitutionObservation,
    InstitutionRules,
    InvalidInstitutionError,
    ProposalLegal,
    QuotaRecord,
    SanctionLegal,
    SanctionRecord,
    elect,
    lower_median,
    settle_sanctions,
)
from .talk import Discussion, TalkMessage, TalkObservation, TalkRules, Utterance


class Condition(StrEnum):
    """The four SovSim power conditions."""

    cpr = "cpr"
    bcpr = "bcpr"
    kcpr = "kcpr"
    kcpr_m = "kcpr_m"


class Phase(StrEnum):
    """Protocol phase of a round, in order: elect (with elections, in their rounds),
    announce (kcpr_m only), talk (with talk on), quota (with a quota vote), extract,
    leader, sanction (with sanctions; after the round is settled)."""

    elect = "elect"
    announce = "announce"
    talk = "talk"
    quota = "quota"
    extract = "extract"
    leader = "leader"
    sanction = "sanction"
    done = "done"


#: The phases of the institutions (:mod:`.institutions`): decided through
#: :meth:`CommonsGame.observe_institution` and :meth:`CommonsGame.institute`.
INSTITUTION_PHASES = frozenset({Phase.elect, Phase.quota, Phase.sanction})


#: Canonical role names per condition: (subordinate role, leader role).
ROLES: dict[Condition, tuple[str, str]] = {
    Condition.cpr: ("citizen", "citizen"),
    Condition.bcpr: ("worker", "boss"),
    Condition.kcpr: ("peasant", "king"),
    Condition.kcpr_m: ("peasant", "king"),
}


class InvalidActionError(ValueError):
    """An action broke the rules; the message names the agent, field and value."""


class CommonsConfig(BaseModel):
    """Game parameters (pool units; defaults are the SovSim paper's, sec. 3).

    Raises:
        pydantic.ValidationError: a parameter is out of range (names field and value).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_agents: int = Field(4, ge=2, description="agents in the game (the leader is the last)")
    rounds: int = Field(12, ge=1, description="rounds at most")
    initial_pool: int = Field(120, ge=1, description="pool at the start (units)")
    capacity: int = Field(120, ge=1, description="the pool never regrows above this (units)")
    step: int = Field(3, ge=1, description="extractions are multiples of this (units)")
    subordinate_cap: int = Field(30, ge=0, description="largest extraction of a subordinate (units)")
    collapse_threshold: int = Field(12, ge=0, description="the pool collapses when fewer units remain")
    regeneration_factor: int = Field(2, ge=1, description="next pool = min(capacity, factor x remaining)")
    announce_max: int = Field(999, ge=0, description="largest pool a king may announce (kcpr_m)")

    @model_validator(mode="after")
    def _pool_fits(self) -> CommonsConfig:
        if self.initial_pool > self.capacity:
            raise ValueError(f"initial_pool ({self.initial_pool}) exceeds capacity ({self.capacity})")
        if self.subordinate_cap % self.step:
            raise ValueError(f"subordinate_cap ({self.subordinate_cap}) is not a multiple of step ({self.step}): "
                             "the cap itself would be an illegal extraction")
        if self.collapse_threshold > self.initial_pool:
            raise ValueError(
                f"collapse_threshold ({self.collapse_threshold}) exceeds initial_pool ({self.initial_pool}): "
                "every game would collapse in round 1 whatever the agents do"
            )
        return self


class NewcomerRule(BaseModel):
    """An outsider who joins at the start of round ``round`` (module docstring).

    Attributes:
        round: the first round the newcomer plays (2..rounds; round 1 would be an
            ordinary seat).
        mode: ``extra`` (one more agent from that round) or ``replace`` (the newcomer
            takes the seat of ``replaces``, who leaves and plays no further round).
        replaces: the agent id who leaves (``replace`` only; ``a0 .. a{n-1}``).
        leader: who holds the leader's position after the join: ``incumbent`` (the
            default; the newcomer inherits it only by replacing the leader) or
            ``newcomer`` (the incumbent leader becomes a subordinate; not in ``cpr``).

    Raises:
        pydantic.ValidationError: ``replaces`` missing in ``replace`` mode or given in
            ``extra`` mode (names the field and value).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: int = Field(ge=2, description="the first round the newcomer plays")
    mode: Literal["extra", "replace"] = Field("extra", description="extra agent, or replacing `replaces`")
    replaces: str | None = Field(None, description="the agent who leaves (replace mode)")
    leader: Literal["incumbent", "newcomer"] = Field(
        "incumbent", description="who holds the leader's position after the join")

    @model_validator(mode="after")
    def _replaces_fits_mode(self) -> NewcomerRule:
        if self.mode == "replace" and self.replaces is None:
            raise ValueError("newcomer.replaces: replace mode needs the agent who leaves (e.g. replaces: a0)")
        if self.mode == "extra" and self.replaces is not None:
            raise ValueError(f"newcomer.replaces: {self.replaces!r} given in extra mode (nobody leaves); "
                             "use mode: replace")
        return self

    def check_game(self, condition: Condition | str, config: CommonsConfig) -> None:
        """Refuse a rule this game cannot play.

        Raises:
            ValueError: ``round`` after the last round, ``replaces`` not an agent of the
                game, or ``leader="newcomer"`` in ``cpr`` (names the field and value).
        """
        if self.round > config.rounds:
            raise ValueError(f"newcomer.round: {self.round} is after the game's last round ({config.rounds}); "
                             "the newcomer would never play")
        agents = [f"a{i}" for i in range(config.n_agents)]
        if self.replaces is not None and self.replaces not in agents:
            raise ValueError(f"newcomer.replaces: no agent {self.replaces!r} in this game; agents are {agents}")
        if self.leader == "newcomer" and Condition(condition) == Condition.cpr:
            raise ValueError("newcomer.leader: 'newcomer' in cpr, which has no leader")

    def newcomer_id(self, config: CommonsConfig) -> str:
        """The newcomer's agent id: ``a{n}`` (``n`` the configured agents)."""
        return f"a{config.n_agents}"


@dataclass(frozen=True)
class MembershipChange:
    """A join or a leave (public: every agent's observation lists them).

    Attributes:
        kind: ``joined`` or ``left``.
        agent: who joined or left.
        round: the first round played (joined) or the first round missed (left).
        role: the agent's role from that round (joined) or its last role (left).
        other: the agent replaced (joined) or the one who replaced it (left); ``None``
            for an extra agent.
    """

    kind: Literal["joined", "left"]
    agent: str
    round: int
    role: str
    other: str | None = None


@dataclass(frozen=True)
class LegalActions:
    """The legal choices of one agent at one decision: ``low, low + step, ..., high``.

    Attributes:
        agent: the deciding agent.
        phase: ``announce`` (the value is an announced pool, any integer
            ``0..announce_max``) or ``extract`` / ``leader`` (an extraction in pool
            units, a multiple of the config's ``step`` up to the agent's cap).
        high: the largest legal value (a multiple of ``step`` above ``low``).
        step: the spacing of legal values (1 for announcements).
        low: the smallest legal value (0 in every SovSim condition).

    The rule's source: SovSim paper sec. 3 (caps 30 for subordinates and the boss,
    the whole remainder for a king, multiples of 3; announcements 0..999).
    """

    agent: str
    phase: Phase
    high: int
    step: int
    low: int = 0

    def __post_init__(self) -> None:
        if self.step < 1 or self.high < self.low or (self.high - self.low) % self.step:
            raise ValueError(f"LegalActions of {self.agent}: high {self.high} must be low {self.low} plus a "
                             f"multiple of step {self.step} (step >= 1): the largest legal value must be legal")

    @property
    def field(self) -> str:
        """The decision's field name: ``announced_pool`` or ``extraction``."""
        return "announced_pool" if self.phase == Phase.announce else "extraction"

    def values(self) -> range:
        """Every legal value, ascending."""
        return range(self.low, self.high + 1, self.step)

    def why_not(self, value: object) -> str | None:
        """Why ``value`` is illegal now (``None`` when legal); the message names the
        agent, the field, the legal set and the value."""
        if isinstance(value, bool) or not isinstance(value, int) or value not in self.values():
            if self.phase == Phase.announce:
                return f"announced_pool of {self.agent} must be an int in {self.low}..{self.high}, got {value!r}"
            return (f"extraction of {self.agent} must be a multiple of {self.step} in "
                    f"{self.low}..{self.high}, got {value!r}")
        return None

    def clamp(self, value: int) -> int:
        """The legal value nearest below ``value`` (floored to ``step``, clipped to
        ``low..high``)."""
        return min(self.high, max(self.low, self.low + floor_to_step(int(value) - self.low, self.step)))


@dataclass(frozen=True)
class RoundRecord:
    """A settled round (pool units; payoffs in points, exact).

    ``extractions``/``payoffs`` are indexed by agent position (leader last);
    ``announced_pool`` is ``None`` outside ``kcpr_m``; ``remainder_seen`` is what the
    leader saw (``None`` in ``cpr``); ``next_pool`` is 0 after a collapse; ``agents``
    are the agents of the round in the order of the tuples (leader last).
    """

    round: int
    pool_before: int
    announced_pool: int | None
    extractions: tuple[int, ...]
    remainder_seen: int | None
    remaining: int
    payoffs: tuple[Fraction, ...]
    collapsed: bool
    next_pool: int
    agents: tuple[str, ...] = ()

    def index_of(self, agent: str) -> int | None:
        """``agent``'s position in this round's tuples (``None``: not in the round)."""
        return self.agents.index(agent) if agent in self.agents else None


@dataclass(frozen=True)
class Observation:
    """What one agent may see when it has to act.

    ``pool`` is the true pool or ``None`` when hidden (kcpr_m subordinates);
    ``announced_pool`` is the king's claim (kcpr_m); ``subordinate_extractions`` and
    ``remainder`` are given to the leader in its phase; ``legal`` holds the values the
    agent may choose now (:class:`LegalActions`; ``max_extraction`` and ``step`` read
    it); ``history`` lists settled rounds (true values revealed) since the agent joined;
    ``roles`` gives each present agent's role (by ``agents``); ``changes`` lists the
    joins and leaves so far (:class:`MembershipChange`, public); ``config`` holds the
    rules of this round (``n_agents`` = the agents present); ``talk`` holds
    every discussion message the agent may see so far (public ones and private ones
    it sent or received; empty with talk off); ``talk_rules`` the discussion's rules
    (``None`` with talk off); ``institutions`` the institutions (``None`` with all off),
    ``quota`` this round's voted quota, ``sanctions`` and ``elections`` the public
    records so far (:mod:`.institutions`).
    """

    condition: Condition
    phase: Phase
    round: int
    rounds_total: int
    agent: str
    agent_index: int
    role: str
    is_leader: bool
    agents: tuple[str, ...]
    pool: int | None
    announced_pool: int | None
    pool_may_be_false: bool
    subordinate_extractions: tuple[int, ...] | None
    remainder: int | None
    legal: LegalActions
    history: tuple[RoundRecord, ...]
    config: CommonsConfig = field(repr=False)
    roles: tuple[str, ...] = ()
    changes: tuple[MembershipChange, ...] = ()
    talk: tuple[TalkMessage, ...] = ()
    talk_rules: TalkRules | None = None
    institutions: InstitutionRules | None = None
    quota: int | None = None
    sanctions: tuple[SanctionRecord, ...] = ()
    elections: tuple[ElectionRecord, ...] = ()

    @property
    def max_extraction(self) -> int:
        """The largest legal value now (pool units; the largest announcement in ``announce``)."""
        return self.legal.high

    @property
    def step(self) -> int:
        """The spacing of legal values now (1 in ``announce``)."""
        return self.legal.step

    @property
    def pool_seen(self) -> int:
        """The pool as presented to this agent (announcement if the truth is hidden)."""
        if self.pool is not None:
            return self.pool
        assert self.announced_pool is not None
        return self.announced_pool


def floor_to_step(value: int, step: int) -> int:
    """Largest multiple of ``step`` that is <= ``value`` (and >= 0)."""
    return max(0, (int(value) // step) * step)


def settle(
    pool: int, extractions: tuple[int, ...], config: CommonsConfig
) -> tuple[int, tuple[Fraction, ...], bool, int]:
    """Apply eqs. 2-5 to one round.

    Returns ``(remaining, payoffs, collapsed, next_pool)``: remaining pool units,
    exact payoffs per agent (z/3 + remaining/n, n = ``len(extractions)``: the agents
    of the round), whether the pool collapsed (remaining < collapse threshold) and the
    next round's pool (0 after collapse).

    Raises:
        ValueError: ``len(extractions)`` differs from ``config.n_agents``.
    """
    if len(extractions) != config.n_agents:
        raise ValueError(f"settle: {len(extractions)} extractions for a round of {config.n_agents} agents")
    remaining = max(0, pool - sum(extractions))
    share = Fraction(remaining, config.n_agents)
    payoffs = tuple(Fraction(z, 3) + share for z in extractions)
    collapsed = remaining < config.collapse_threshold
    next_pool = 0 if collapsed else min(config.capacity, config.regeneration_factor * remaining)
    return remaining, payoffs, collapsed, next_pool


class CommonsGame:
    """One SovSim game as a state machine.

    Loop: while ``not game.over``: ``for a in game.acting_agents(): obs = game.observe(a)``;
    collect one integer per acting agent; ``game.act({agent: value})``. The value is an
    extraction (pool units) or, in the ``announce`` phase, the announced pool.
    :meth:`act` returns the :class:`RoundRecord` when the action settled a round.
    """

    #: talk (``None``: none); class defaults load checkpoints pickled before talk existed
    talk_rules: TalkRules | None = None
    transcript: tuple[TalkMessage, ...] = ()
    _discussion: Discussion | None = None
    #: institutions (all off: the paper's game) and their public records
    institutions: InstitutionRules = InstitutionRules()
    elections: tuple[ElectionRecord, ...] = ()
    quotas: tuple[QuotaRecord, ...] = ()
    sanctions: tuple[SanctionRecord, ...] = ()
    _quota: int | None = None

    def __init__(self, condition: Condition | str, config: CommonsConfig | None = None,
                 newcomer: NewcomerRule | None = None, talk: TalkRules | None = None,
                 institutions: InstitutionRules | None = None):
        try:
            self.condition = Condition(condition)
        except ValueError:
            raise ValueError(
                f"condition must be one of {[c.value for c in Condition]}, got {condition!r}"
            ) from None
        self.config = config or CommonsConfig()
        #: the configured rules (``config`` holds the current round's: ``n_agents`` changes
        #: when an extra agent joins)
        self.initial_config = self.config
        if newcomer is not None:
            newcomer.check_game(self.condition, self.config)
        self.newcomer = newcomer
        #: joins and leaves so far (public)
        self.changes: list[MembershipChange] = []
        self.agents: tuple[str, ...] = tuple(f"a{i}" for i in range(self.config.n_agents))
        self.leader: str | None = None if self.condition == Condition.cpr else self.agents[-1]
        sub_role, lead_role = ROLES[self.condition]
        self.roles: dict[str, str] = {
            a: (lead_role if a == self.leader else sub_role) for a in self.agents
        }
        #: agent -> the first round it played
        self.joined: dict[str, int] = dict.fromkeys(self.agents, 1)
        self.round = 1
        self.pool = self.config.initial_pool
        self.history: list[RoundRecord] = []
        self.over = False
        self._announced: int | None = None
        self._sub_extractions: dict[str, int] = {}
        if talk is not None and talk.on:
            self.talk_rules = talk
        if institutions is not None and institutions.on:
            institutions.check_condition(self.condition.value)
            if newcomer is not None:
                raise ValueError("institutions with a newcomer are not built (the votes and sanctions assume the "
                                 "seats of round 1); run one or the other")
            self.institutions = institutions
        self.phase = self._first_phase()

    # -- structure ------------------------------------------------------------------
    @property
    def subordinates(self) -> tuple[str, ...]:
        """Agents who choose in the simultaneous phase (all agents in ``cpr``)."""
        return tuple(a for a in self.agents if a != self.leader)

    def _first_phase(self) -> Phase:
        if self.institutions.election_before(self.round):
            return Phase.elect
        return self._after_elect()

    def _after_elect(self) -> Phase:
        return Phase.announce if self.condition == Condition.kcpr_m else self._after_announce()

    def _after_announce(self) -> Phase:  # the discussion opens here when talk is on
        if self.talk_rules is None:
            return self._after_talk()
        self._discussion = Discussion(self.round, (*self.subordinates, *((self.leader,) if self.leader else ())),
                                      self.talk_rules)
        return Phase.talk

    def _after_talk(self) -> Phase:  # the quota vote, when on, closes the deliberation
        return Phase.quota if self.institutions.quota != "off" else Phase.extract

    def acting_agents(self) -> tuple[str, ...]:
        """Agents who must act in the current phase (empty when the game is over)."""
        if self.phase == Phase.done:
            return ()
        if self.phase == Phase.extract:
            return self.subordinates
        if self.phase in INSTITUTION_PHASES:
            return self.agents
        if self.phase == Phase.talk:
            assert self._discussion is not None
            return (self._discussion.speaker,)
        assert self.leader is not None
        return (self.leader,)

    def remainder(self) -> int:
        """Pool left after the subordinates' extractions this round (leader phase)."""
        return max(0, self.pool - sum(self._sub_extractions.values()))

    def max_extraction(self, agent: str) -> int:
        """Largest legal extraction for ``agent`` in the current phase (pool units)."""
        c = self.config
        if self.phase == Phase.leader and agent == self.leader:
            rem = floor_to_step(self.remainder(), c.step)
            cap = min(c.subordinate_cap, rem) if self.condition == Condition.bcpr else rem
        else:
            cap = c.subordinate_cap
        if self._quota is not None and (self.institutions.quota == "all" or agent == self.leader):
            return min(cap, self._quota)  # the voted quota binds (world/institutions.py)
        return cap

    def legal_actions(self, agent: str) -> LegalActions:
        """What ``agent`` may choose now: the one home of SovSim's legality (module
        docstring). Raises ValueError if ``agent`` does not act in this phase."""
        if agent not in self.acting_agents():
            raise ValueError(
                f"agent {agent!r} does not act in phase {self.phase.value!r} of round {self.round}"
            )
        if self.phase == Phase.talk:
            raise ValueError(f"round {self.round} is in its talk phase: {agent} speaks (observe_talk, speak), "
                             "it chooses no number")
        if self.phase in INSTITUTION_PHASES:
            raise ValueError(f"round {self.round} is in its {self.phase.value} phase: {agent} decides through "
                             "observe_institution and institute")
        if self.phase == Phase.announce:
            return LegalActions(agent, self.phase, high=self.config.announce_max, step=1)
        return LegalActions(agent, self.phase, high=self.max_extraction(agent), step=self.config.step)

    # -- observation ----------------------------------------------------------------
    def observe(self, agent: str) -> Observation:
        """What ``agent`` sees now, with its legal actions. Raises ValueError if it
        does not act in this phase."""
        legal = self.legal_actions(agent)
        is_leader = agent == self.leader
        hidden = self.condition == Condition.kcpr_m and not is_leader
        leader_phase = self.phase == Phase.leader
        return Observation(
            condition=self.condition,
            phase=self.phase,
            round=self.round,
            rounds_total=self.config.rounds,
            agent=agent,
            agent_index=self.agents.index(agent),
            role=self.roles[agent],
            is_leader=is_leader,
            agents=self.agents,
            pool=None if hidden else self.pool,
            announced_pool=self._announced,
            pool_may_be_false=hidden,
            subordinate_extractions=(
                tuple(self._sub_extractions[a] for a in self.subordinates) if leader_phase else None
            ),
            remainder=self.remainder() if leader_phase else None,
            legal=legal,
            history=tuple(r for r in self.history if r.round >= self.joined.get(agent, 1)),
            config=self.config,
            roles=tuple(self.roles[a] for a in self.agents),
            changes=tuple(self.changes),
            talk=self.talk_seen_by(agent),
            talk_rules=self.talk_rules,
            **({"institutions": self.institutions, "quota": self._quota, "sanctions": self.sanctions,
                "elections": self.elections} if self.institutions.on else {}),
        )

    def set_talk(self, rules: TalkRules | None) -> None:
        """Open (``rules`` with talk on) or close (``None``, or talk off) the discussion
        from the current round on: a rule a fork changes (:mod:`scarce_lab.forks`).

        Raises:
            RuntimeError: the round has begun (someone announced, spoke or extracted),
                or the game is over.
        """
        if self.over or self._announced is not None or self._sub_extractions or any(
                m.round == self.round for m in self.transcript):
            raise RuntimeError(f"round {self.round} has begun (phase {self.phase.value!r}): the talk rule changes "
                               "only at the start of a round")
        self.talk_rules = rules if rules is not None and rules.on else None
        self._discussion = None
        if self.phase not in (Phase.announce, Phase.elect):
            self.phase = self._after_announce()

    # -- talk (scarce_lab.environments.sovsim.world.talk) -------------------------------------------
    def talk_seen_by(self, agent: str) -> tuple[TalkMessage, ...]:
        """Every posted message ``agent`` may see, in order (empty with talk off); a
        newcomer sees none from rounds before it joined (as it sees no earlier round)."""
        since = self.joined.get(agent, 1)
        return tuple(m for m in self.transcript if m.seen_by(agent) and m.round >= since)

    def observe_talk(self, agent: str) -> TalkObservation:
        """What the speaker ``agent`` sees in its turn. Raises ValueError if it is not
        the speaker now."""
        if self.phase != Phase.talk or agent not in self.acting_agents():
            raise ValueError(f"agent {agent!r} does not talk in phase {self.phase.value!r} of round {self.round}")
        assert self._discussion is not None
        hidden = self.condition == Condition.kcpr_m and agent != self.leader
        return self._discussion.observe(agent, self, pool=None if hidden else self.pool, announced=self._announced)

    def speak(self, agent: str, utterance: Utterance) -> TalkMessage | None:
        """Post the speaker's message (``None`` for silence; the extractions start after
        the last turn). Raises InvalidTalkError (a broken rule, not the speaker) or
        RuntimeError (not the talk phase)."""
        if self.phase != Phase.talk or self._discussion is None:
            raise RuntimeError(f"round {self.round} is in phase {self.phase.value!r}, not talk")
        msg = self._discussion.speak(agent, utterance, self.agents)
        if msg is not None:
            self.transcript = (*self.transcript, msg)
        if self._discussion.done:
            self._discussion = None
            self.phase = self._after_talk()
        return msg

    # -- institutions (scarce_lab.environments.sovsim.world.institutions) -------------
    def institution_legal(self, agent: str) -> BallotLegal | ProposalLegal | SanctionLegal:
        """``agent``'s legal ballot, quota proposal or sanction now (the one home of their
        legality). Raises ValueError if it does not act in an institution phase now."""
        if self.phase not in INSTITUTION_PHASES or agent not in self.acting_agents():
            raise ValueError(f"agent {agent!r} does not vote, propose or sanction in phase {self.phase.value!r} "
                             f"of round {self.round}")
        rules, c = self.institutions, self.config
        if self.phase == Phase.elect:
            assert self.leader is not None
            return BallotLegal(agent, self.agents, self.leader)
        if self.phase == Phase.quota:
            return ProposalLegal(agent, floor_to_step(c.capacity, c.step), c.step)
        last = self.history[-1]
        budget = last.payoffs[last.agents.index(agent)]
        return SanctionLegal(agent, tuple(a for a in self.agents if a != agent), rules.sanction_max_points,
                             rules.sanction_cost, budget)

    def observe_institution(self, agent: str) -> InstitutionObservation:
        """What ``agent`` sees when it votes, proposes or sanctions (a kcpr_m subordinate
        sees no true pool before the round is settled). Raises ValueError as
        :meth:`institution_legal`."""
        legal = self.institution_legal(agent)
        settled = self.phase == Phase.sanction
        hidden = self.condition == Condition.kcpr_m and agent != self.leader and not settled
        return InstitutionObservation(
            phase=self.phase, condition=self.condition, round=self.round, rounds_total=self.config.rounds,
            agent=agent, agent_index=self.agents.index(agent), agents=self.agents,
            roles=tuple(self.roles[a] for a in self.agents), leader=self.leader, is_leader=agent == self.leader,
            pool=None if hidden else self.pool, announced_pool=self._announced, legal=legal,
            rules=self.institutions, history=tuple(self.history), last_round=self.history[-1] if settled else None,
            elections=self.elections, quotas=self.quotas, sanctions=self.sanctions, talk=self.talk_seen_by(agent),
            config=self.config,
        )

    def institute(self, actions: dict[str, Any]) -> ElectionRecord | QuotaRecord | SanctionRecord:
        """Apply the institution phase's decisions: a ballot (agent id), a quota proposal
        (pool units) or sanction points (dict target -> points) per acting agent.

        Returns the phase's record (also kept in :attr:`elections`, :attr:`quotas` or
        :attr:`sanctions`).

        Raises:
            InvalidInstitutionError: missing/extra agent, or an illegal value (names the
                agent, field and value).
            RuntimeError: not an institution phase.
        """
        if self.phase not in INSTITUTION_PHASES:
            raise RuntimeError(f"round {self.round} is in phase {self.phase.value!r}, not an institution phase")
        expected = set(self.agents)
        if set(actions) != expected:
            raise InvalidInstitutionError(f"phase {self.phase.value!r} needs decisions from {sorted(expected)}, "
                                          f"got {sorted(actions)}")
        for a in self.agents:
            if (why := self.institution_legal(a).why_not(actions[a])) is not None:
                raise InvalidInstitutionError(why)
        if self.phase == Phase.elect:
            assert self.leader is not None
            rec: Any = elect(self.agents, actions, self.leader, self.round)
            self.elections = (*self.elections, rec)
            if rec.moved:
                self._seat_leader(rec.elected)
            self.phase = self._after_elect()
        elif self.phase == Phase.quota:
            props = tuple(actions[a] for a in self.agents)
            rec = QuotaRecord(self.round, self.agents, props, lower_median(list(props)), self.institutions.quota)
            self.quotas = (*self.quotas, rec)
            self._quota = rec.quota
            self.phase = Phase.extract
        else:
            rec = settle_sanctions(self.agents, actions, self.institutions, self.round)
            self.sanctions = (*self.sanctions, rec)
            self._advance(self.history[-1])
        return rec

    def _seat_leader(self, new: str) -> None:
        """Move the leader role to ``new``; the former leader takes ``new``'s place among
        the subordinates (the leader stays last)."""
        old = self.leader
        assert old is not None
        subs = [old if a == new else a for a in self.subordinates]
        sub_role, lead_role = ROLES[self.condition]
        self.agents = (*subs, new)
        self.leader = new
        self.roles = {a: (lead_role if a == new else sub_role) for a in self.agents}

    # -- acting ---------------------------------------------------------------------
    def _check(self, agent: str, value: int) -> int:
        reason = self.legal_actions(agent).why_not(value)
        if reason is not None:
            raise InvalidActionError(reason)
        return value

    def act(self, actions: dict[str, int]) -> RoundRecord | None:
        """Apply the current phase's actions (one int per acting agent).

        Returns the settled :class:`RoundRecord` if this completed a round, else None.

        Raises:
            InvalidActionError: missing/extra agent, or a value outside the rules
                (message names agent and value).
            RuntimeError: the game is over.
        """
        if self.over:
            raise RuntimeError("the game is over")
        if self.phase in INSTITUTION_PHASES:
            raise RuntimeError(f"round {self.round} is in its {self.phase.value} phase: use institute(actions)")
        expected = set(self.acting_agents())
        if set(actions) != expected:
            raise InvalidActionError(
                f"phase {self.phase.value!r} needs actions from {sorted(expected)}, got {sorted(actions)}"
            )
        if self.phase == Phase.talk:
            raise RuntimeError(f"round {self.round} is in its talk phase: use speak(agent, utterance)")
        if self.phase == Phase.announce:
            self._announced = self._check(self.leader, actions[self.leader])  # type: ignore[arg-type,index]
            self.phase = self._after_announce()
            return None
        if self.phase == Phase.extract:
            self._sub_extractions = {a: self._check(a, actions[a]) for a in self.subordinates}
            if self.leader is None:
                return self._settle()
            self.phase = Phase.leader
            return None
        # leader phase
        assert self.leader is not None
        z = self._check(self.leader, actions[self.leader])
        return self._settle(leader_z=z)

    def _settle(self, leader_z: int | None = None) -> RoundRecord:
        extractions = tuple(
            (leader_z if a == self.leader else self._sub_extractions[a]) for a in self.agents
        )
        remaining, payoffs, collapsed, next_pool = settle(self.pool, extractions, self.config)  # type: ignore[arg-type]
        rec = RoundRecord(
            round=self.round,
            pool_before=self.pool,
            announced_pool=self._announced,
            extractions=extractions,  # type: ignore[arg-type]
            remainder_seen=None if self.leader is None else self.remainder(),
            remaining=remaining,
            payoffs=payoffs,
            collapsed=collapsed,
            next_pool=next_pool,
            agents=self.agents,
        )
        self.history.append(rec)
        self._announced = None
        self._sub_extractions = {}
        self._quota = None
        if self.institutions.sanctions:  # the round is paid; sanctions come before the next
            self.phase = Phase.sanction
            return rec
        self._advance(rec)
        return rec

    def _advance(self, rec: RoundRecord) -> None:
        """End the game after ``rec`` (a collapse or the last round) or open the next round."""
        collapsed = rec.collapsed
        next_pool = rec.next_pool
        if collapsed or self.round >= self.config.rounds:
            self.over = True
            self.phase = Phase.done
        else:
            self.round += 1
            self.pool = next_pool
            if self.newcomer is not None and self.round == self.newcomer.round:
                self._join()
            self.phase = self._first_phase()

    def _join(self) -> None:
        """Apply the newcomer rule at the start of its round (module docstring)."""
        rule = self.newcomer
        assert rule is not None
        new = rule.newcomer_id(self.initial_config)
        sub_role, lead_role = ROLES[self.condition]
        subs = list(self.subordinates)
        leader = self.leader
        left: str | None = None
        if rule.mode == "replace":
            left = rule.replaces
            if left == leader:
                leader = new
            else:
                subs[subs.index(left)] = new  # type: ignore[arg-type]
        else:
            subs.append(new)
        if rule.leader == "newcomer" and leader != new:
            assert leader is not None  # check_game refuses it in cpr
            subs[subs.index(new)] = leader  # the incumbent leader takes the newcomer's seat
            leader = new
        old_roles = dict(self.roles)
        self.agents = (*subs, leader) if leader is not None else tuple(subs)
        self.leader = leader
        self.roles = {a: (lead_role if a == leader else sub_role) for a in self.agents}
        self.joined[new] = self.round
        self.config = self.config.model_copy(update={"n_agents": len(self.agents)})
        self.changes.append(MembershipChange("joined", new, self.round, self.roles[new], left))
        if left is not None:
            self.changes.append(MembershipChange("left", left, self.round, old_roles[left], new))

    # -- summaries ------------------------------------------------------------------
    def all_agents(self) -> tuple[str, ...]:
        """Every agent who played or plays, in the order they first appear (the
        starting agents, then the newcomer)."""
        seen = dict.fromkeys(a for r in self.history for a in r.agents)
        seen.update(dict.fromkeys(self.agents))
        return tuple(sorted(seen, key=lambda a: int(a[1:])))

    def total_payoffs(self) -> dict[str, Fraction]:
        """Exact payoff per agent summed over settled rounds (points), net of peer sanctions when
        they are on; with a newcomer,
        over the rounds each agent played (every agent who played is a key)."""
        out = dict.fromkeys(self.all_agents(), Fraction(0))
        for r in self.history:
            for a, p in zip(r.agents, r.payoffs, strict=True):
                out[a] += p
        for s in self.sanctions:  # peer sanctions (world/institutions.py): the net change
            for a, d in zip(s.agents, s.net, strict=True):
                out[a] += d
        return out
