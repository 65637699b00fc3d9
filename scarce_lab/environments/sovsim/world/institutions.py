"""Institutions in the commons: peer sanctions, a quota vote and leader elections (pure, no I/O).

Three optional SovSim condition settings (each off by default: with all off the game is
the paper's, move for move), in the order they act in a round:

1. **Election** (``elections = k``, boss/king conditions only; ``0``: none). Before
   rounds ``1 + k, 1 + 2k, ...`` every agent present casts one secret ballot for one
   agent present (itself or the incumbent included: a vote for the incumbent is a vote
   of confidence). Plurality rule; a tie is won by the incumbent when it is among the
   tied, else by the tied agent with the lowest id number. The leader *role* moves
   (its powers: the boss's/king's last move with the subordinates' choices in view, the
   king's whole-remainder cap, the kcpr_m announcement and knowledge of the pool); each
   agent keeps its model (seats are bound to agent ids when the game starts). The
   former leader takes the new leader's place among the subordinates, so the leader is
   still the last of :attr:`~.commons.CommonsGame.agents`. Only the tally is public.
2. **Quota vote** (``quota = all | leader``; ``off``: none). Each round, after the
   king's announcement and the discussion and before the extractions, every agent
   proposes a cap (a multiple of the step in ``0..capacity``). The binding quota is the
   **lower median** of the proposals: with single-peaked preferences the median
   proposal is the majority-rule (Condorcet) winner (Black 1948); with an even number of
   voters every value between the two middle proposals ties in pairwise majority and the
   rule takes the lower, the tighter cap. ``all``: no agent may extract more than the
   quota this round; ``leader`` (boss/king conditions): only the leader's cap is bound
   (the vote on the leader's cap). The quota enters the world's legal actions
   (:meth:`~.commons.CommonsGame.legal_actions`); proposals are private, the sorted
   proposals and the quota public.
3. **Peer sanctions** (``sanctions = true``), costly punishment after the round's
   extractions are revealed (Fehr & Gächter 2000, AER 90(4); Ostrom 1990's graduated
   sanctions): every agent present assigns 0..``max_points`` punishment points to each
   other agent, at once. Each point costs its sender ``cost`` points and removes
   ``impact`` points from its target; defaults 1 and 3 (the 1:3 cost-to-impact ratio
   of Fehr & Gächter 2002, Nature 415; Nikiforakis & Normann 2008 vary it) and 10
   points per target (the 0..10 scale of Fehr & Gächter 2000). An agent spends at most
   its round payoff (``points * cost <= payoff``); its net payoff may fall below zero
   through points received. Accounting (:func:`settle_sanctions`): net_i = payoff_i -
   cost * sent_i - impact * received_i, so the round's net total is the gross total minus
   ``(cost + impact)`` times the points assigned. Sanctions are anonymous: everyone
   learns each agent's points received and spent, not who punished whom (the decisions
   are private events). A sanction phase follows every settled round, the last and a
   collapse's included.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

#: The config fields of the institutions (SovSim's optional condition settings), in order.
INSTITUTION_FIELDS = ("sanctions", "sanction_cost", "sanction_impact", "sanction_max_points", "quota", "elections")

#: The quota settings: ``off`` (no vote), ``all`` (binds every agent), ``leader`` (binds the leader).
QUOTA_SCOPES = ("off", "all", "leader")


class InvalidInstitutionError(ValueError):
    """A ballot, proposal or sanction broke the rules; the message names the agent, the
    field and the value."""


@dataclass(frozen=True)
class InstitutionRules:
    """Which institutions are on and their parameters (module docstring).

    Attributes:
        sanctions: peer punishment after each round.
        sanction_cost: points a punishment point costs its sender (>= 1).
        sanction_impact: points a punishment point removes from its target (>= 1).
        sanction_max_points: most points one agent may assign one target in a round (>= 1).
        quota: ``off``, ``all`` or ``leader``.
        elections: an election every ``elections`` rounds (``0``: never).

    Raises:
        ValueError: a value out of range or of the wrong type (names the setting and value).
    """

    sanctions: bool = False
    sanction_cost: int = 1
    sanction_impact: int = 3
    sanction_max_points: int = 10
    quota: Literal["off", "all", "leader"] = "off"
    elections: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.sanctions, bool):
            raise ValueError(f"sanctions must be true or false, got {self.sanctions!r}")
        for name in ("sanction_cost", "sanction_impact", "sanction_max_points"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        if self.quota not in QUOTA_SCOPES:
            raise ValueError(f"quota must be one of {list(QUOTA_SCOPES)}, got {self.quota!r}")
        if isinstance(self.elections, bool) or not isinstance(self.elections, int) or self.elections < 0:
            raise ValueError(f"elections must be an int >= 0 (0: no elections), got {self.elections!r}")

    @property
    def on(self) -> bool:
        """True when any institution is on."""
        return self.sanctions or self.quota != "off" or self.elections > 0

    def check_condition(self, condition: str) -> None:
        """Refuse an institution the condition has no use for.

        Raises:
            ValueError: ``elections`` or ``quota=leader`` in ``cpr`` (no leader).
        """
        if str(condition) == "cpr":
            if self.elections:
                raise ValueError(f"elections={self.elections} in cpr, which has no leader to elect")
            if self.quota == "leader":
                raise ValueError("quota='leader' in cpr, which has no leader; use quota='all'")

    def check_config(self, condition: str, rounds: int, newcomer: bool) -> None:
        """Refuse settings that would play no institution or split conditions of one game.

        Raises:
            ValueError: :meth:`check_condition`'s cases; a sanction parameter set away
                from its default with sanctions off; elections with an interval of at
                least ``rounds`` (none would be held); institutions with a newcomer
                (names the setting and value).
        """
        self.check_condition(condition)
        if not self.sanctions:
            for name, default in (("sanction_cost", 1), ("sanction_impact", 3), ("sanction_max_points", 10)):
                if getattr(self, name) != default:
                    raise ValueError(f"{name}={getattr(self, name)!r} needs sanctions=true (with sanctions off "
                                     "nobody punishes)")
        if self.elections and self.elections >= rounds:
            raise ValueError(f"elections={self.elections} in a game of {rounds} rounds: no election would be held "
                             f"(the first is before round {1 + self.elections})")
        if self.on and newcomer:
            raise ValueError("institutions with a newcomer are not built (the votes and sanctions assume the seats "
                             "of round 1); run one or the other")

    def election_before(self, round: int) -> bool:
        """True when an election opens ``round`` (rounds ``1 + k, 1 + 2k, ...``)."""
        return self.elections > 0 and round > 1 and (round - 1) % self.elections == 0


# -- legal choices ------------------------------------------------------------------------
@dataclass(frozen=True)
class BallotLegal:
    """An election ballot: one of ``candidates`` (every agent present)."""

    agent: str
    candidates: tuple[str, ...]
    incumbent: str

    def why_not(self, value: object) -> str | None:
        """Why ``value`` is not a legal ballot (``None`` when legal)."""
        if not isinstance(value, str) or value not in self.candidates:
            return f"ballot of {self.agent} must be one of {list(self.candidates)}, got {value!r}"
        return None

    @property
    def fallback(self) -> str:
        """The documented fallback: a vote for the incumbent (the status quo)."""
        return self.incumbent


@dataclass(frozen=True)
class ProposalLegal:
    """A quota proposal: a multiple of ``step`` in ``0..high`` (pool units)."""

    agent: str
    high: int
    step: int

    def values(self) -> range:
        """Every legal proposal, ascending."""
        return range(0, self.high + 1, self.step)

    def why_not(self, value: object) -> str | None:
        """Why ``value`` is not a legal proposal (``None`` when legal)."""
        if isinstance(value, bool) or not isinstance(value, int) or value not in self.values():
            return f"quota proposal of {self.agent} must be a multiple of {self.step} in 0..{self.high}, got {value!r}"
        return None

    @property
    def fallback(self) -> int:
        """The documented fallback: the largest proposal (no restriction: the status quo)."""
        return self.high


@dataclass(frozen=True)
class SanctionLegal:
    """Punishment points: a dict target -> int in ``0..max_points`` over ``targets``,
    costing at most ``budget`` (the agent's round payoff) at ``cost`` a point."""

    agent: str
    targets: tuple[str, ...]
    max_points: int
    cost: int
    budget: Fraction

    @property
    def max_total(self) -> int:
        """The most points the agent can afford this round."""
        afford = int(self.budget // self.cost) if self.budget > 0 else 0
        return min(afford, self.max_points * len(self.targets))

    def why_not(self, value: object) -> str | None:
        """Why ``value`` is not a legal assignment (``None`` when legal)."""
        if not isinstance(value, dict):
            return f"sanction points of {self.agent} must be a dict target -> points, got {type(value).__name__}"
        bad = [t for t in value if t not in self.targets]
        if bad:
            return f"sanction targets of {self.agent} must be other agents of {list(self.targets)}, got {bad}"
        for t, p in value.items():
            if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= self.max_points:
                return f"sanction points of {self.agent} on {t} must be an int in 0..{self.max_points}, got {p!r}"
        total = sum(value.values())
        if total * self.cost > self.budget:
            return (f"sanction points of {self.agent} cost {total * self.cost} points, more than its round payoff "
                    f"{float(self.budget):g} (at most {self.max_total} points)")
        return None

    @property
    def fallback(self) -> dict[str, int]:
        """The documented fallback: no punishment."""
        return {}


Legal = BallotLegal | ProposalLegal | SanctionLegal


# -- records ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ElectionRecord:
    """A held election: ``ballots`` by voter (``agents`` order), the ``tally`` (candidate
    -> votes, candidates with votes only), the ``incumbent`` and the ``elected``."""

    round: int
    agents: tuple[str, ...]
    ballots: tuple[str, ...]
    tally: tuple[tuple[str, int], ...]
    incumbent: str
    elected: str

    @property
    def moved(self) -> bool:
        """True when the seat changed hands."""
        return self.elected != self.incumbent


@dataclass(frozen=True)
class QuotaRecord:
    """A quota vote: ``proposals`` by agent (``agents`` order) and the binding ``quota``."""

    round: int
    agents: tuple[str, ...]
    proposals: tuple[int, ...]
    quota: int
    scope: str


@dataclass(frozen=True)
class SanctionRecord:
    """A round's sanctions (points; payoffs exact).

    ``points[i][j]``: points agent ``agents[i]`` assigned ``agents[j]``; ``spent``,
    ``lost`` and ``net`` by agent: the cost paid, the payoff removed and the change to
    the round payoff (``-spent - lost``)."""

    round: int
    agents: tuple[str, ...]
    points: tuple[tuple[int, ...], ...]
    spent: tuple[Fraction, ...]
    lost: tuple[Fraction, ...]
    net: tuple[Fraction, ...] = field(default=())

    def received(self) -> tuple[int, ...]:
        """Points each agent received."""
        return tuple(sum(row[j] for row in self.points) for j in range(len(self.agents)))

    def sent(self) -> tuple[int, ...]:
        """Points each agent assigned."""
        return tuple(sum(row) for row in self.points)


def elect(agents: tuple[str, ...], ballots: dict[str, str], incumbent: str, round: int) -> ElectionRecord:
    """Plurality over ``ballots`` (voter -> candidate); ties to the incumbent, else to the
    lowest id number (module docstring)."""
    counts = Counter(ballots[a] for a in agents)
    top = max(counts.values())
    tied = [c for c, k in counts.items() if k == top]
    winner = incumbent if incumbent in tied else min(tied, key=lambda a: int(a[1:]))
    tally = tuple(sorted(counts.items(), key=lambda kv: int(kv[0][1:])))
    return ElectionRecord(round, agents, tuple(ballots[a] for a in agents), tally, incumbent, winner)


def lower_median(values: list[int]) -> int:
    """The lower median: the ``(n - 1) // 2``-th smallest value (module docstring's rule)."""
    s = sorted(values)
    return s[(len(s) - 1) // 2]


def settle_sanctions(agents: tuple[str, ...], points: dict[str, dict[str, int]], rules: InstitutionRules,
                     round: int) -> SanctionRecord:
    """The round's sanction accounting (module docstring): spent_i = cost * sent_i,
    lost_i = impact * received_i, net_i = -(spent_i + lost_i)."""
    matrix = tuple(tuple(points.get(a, {}).get(b, 0) for b in agents) for a in agents)
    rec = SanctionRecord(round, agents, matrix, (), ())
    spent = tuple(Fraction(rules.sanction_cost * s) for s in rec.sent())
    lost = tuple(Fraction(rules.sanction_impact * r) for r in rec.received())
    return SanctionRecord(round, agents, matrix, spent, lost, tuple(-(s + m) for s, m in zip(spent, lost, strict=True)))


@dataclass(frozen=True)
class InstitutionObservation:
    """What an agent sees when it votes, proposes or sanctions.

    ``phase`` is ``elect``, ``quota`` or ``sanction``; ``legal`` its legal choices;
    ``pool`` the pool it may see (``None`` for a kcpr_m subordinate, who sees
    ``announced_pool``); ``last_round`` the round just settled (sanction phase);
    ``elections``, ``quotas``, ``sanctions`` the public records so far (a sanction record
    holds the full matrix: prompts show only its public parts); ``history`` the settled
    rounds; ``talk`` the messages it may see; ``rules`` the institutions.
    """

    phase: Any
    condition: Any
    round: int
    rounds_total: int
    agent: str
    agent_index: int
    agents: tuple[str, ...]
    roles: tuple[str, ...]
    leader: str | None
    is_leader: bool
    pool: int | None
    announced_pool: int | None
    legal: Legal
    rules: InstitutionRules
    history: tuple[Any, ...]
    last_round: Any = None
    elections: tuple[ElectionRecord, ...] = ()
    quotas: tuple[QuotaRecord, ...] = ()
    sanctions: tuple[SanctionRecord, ...] = ()
    talk: tuple[Any, ...] = ()
    config: Any = field(repr=False, default=None)

    @property
    def pool_seen(self) -> int:
        """The pool as presented to this agent (the announcement when the truth is hidden)."""
        if self.pool is not None:
            return self.pool
        return self.announced_pool if self.announced_pool is not None else 0
