"""The Hayek economy: agents with trigger, policy, bid and wealth; auction; bucket
brigade; rent; bankruptcy; reproduction of the rich; replacement of the bankrupt;
newcomers.

Rules and their sources (EoM = Qi et al. 2026, "Economy of Minds", arXiv:2606.02859,
sec. 3; Hayek = Baum & Durdanovic 2000):

- An agent is ``(trigger, policy, bid, wealth)``. Trigger and policy live in its
  ``genome`` (opaque to the economy: a rule for scripted agents, prompts for LLM
  agents); ``bid`` is a fixed integer number of credits; wealth is its ledger balance.
- Auction: among agents whose trigger fires, the highest bid wins; ties are broken by
  a seeded random choice (EoM sec. 3.2). Ablation ``no-auction``: a random eligible
  agent wins.
- Bucket brigade: the winner pays its bid to the previous winner of the episode (the
  bank on the first step); the environment's reward goes to the agent that acted
  (EoM sec. 3.2; Hayek "the winner buys the world from its previous owner").
- Rent: every ``rent_interval`` episodes each agent pays ``rent`` to the rent sink.
- Bankruptcy: an agent whose wealth is below zero at the end of an episode is removed
  (EoM: ``wealth < 0``); its balance is settled with the bank.
- Reproduction (exploitation): an agent whose wealth reaches
  ``reproduce_threshold`` creates a mutated child and endows it with
  ``child_endowment`` credits from its own wealth (Hayek: money is conserved, a
  child's capital comes from its parent). Ablation ``no-exploitation`` turns it off.
- Exploration by replacement (EoM: "agents that consistently contribute to successful
  trajectories accumulate wealth and are mutated via exploitation, while ineffective
  agents go bankrupt and are replaced via exploration", README and sec. 3.3): with
  ``replace_bankrupt`` (default) every agent removed for bankruptcy is replaced by a new
  agent made by modifying the failed agent's policy (``repair(genome, rng)``: for LLM
  agents an LLM rewrites its prompt; for rules a mutation of the rule), born with origin
  ``replacement``, the failed agent as ``parent``, its bid mutated like a child's, funded
  by the bank with ``initial_wealth``.
- Newcomers (exploration, in addition): every ``explore_interval`` episodes
  ``explore_count`` fresh random agents funded by the bank join (``explore_count=0``
  leaves replacement as the only exploration). Ablation ``no-exploration`` turns off both
  replacement and newcomers.
- Newcomer trial: a born agent (child or newcomer) is a *novice*; in an auction a
  novice bids the current maximum bid of the eligible veterans plus ``epsilon``, so it
  wins its first auction and gets a trial (EoM "fixed_with_eps": novice bid = max
  veteran bid + epsilon). After its first win in training it becomes a veteran and
  bids its own fixed ``bid`` from then on (EoM "fixed" scheme: the novice premium
  applies once). Its own bid is heritable: a child's bid is its parent's bid mutated by
  up to ``bid_mutation_pct`` percent (at least one credit); a newcomer's bid is drawn
  from ``[1, max veteran bid]`` (Hayek evolves bids with the agents).
- Bid scheme (default ``fixed``, the paper's: "Each agent has a wake-up condition, fixed
  bid, and wealth balance", EoM project page; sec. 3.1 ``b_a``): a veteran always bids
  its own fixed bid ``b_a``. Option ``holland`` (the hayekmas ``holland`` scheme, an
  option, not the paper's default): a veteran whose wealth reaches ``tycoon_wealth``
  bids ``holland_alpha_pct`` percent of its wealth when that exceeds its own bid
  (Holland's classifier-system bid, proportional to strength).
- Solvency (option ``solvent_bids``, off by default): no bid placed exceeds the
  bidder's wealth, a novice's trial bid included (stated once, :meth:`Economy.placed_bids`;
  :meth:`Economy.pay` refuses a payment above the payer's wealth).
- Seats (a run that gives agents different models or settings, ``seats``): every agent
  carries the seat it runs as (:attr:`AgentRecord.seat`, ``None`` in a run without
  seats). Offspring inherit their parent's seat: a child its parent's, a replacement the
  seat of the bankrupt agent it repairs (Hayek reproduction: a child is a mutated copy of
  its parent, so it runs what its parent runs); exploration newcomers, of no lineage,
  have none (the run's ``*`` seat). An agent that *joins* (origin ``joined``, the
  experimenter's newcomer) comes with its own seat and is funded by the bank.
- Frozen evaluation moves no money: callers simply do not call :meth:`pay`,
  :meth:`reward` or :meth:`end_episode` (see :mod:`.engine`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .ledger import BANK, RENT_SINK, Ledger, LedgerError, Transfer

ABLATIONS: tuple[str, ...] = ("none", "no-auction", "no-exploration", "no-exploitation")


#: The most credits one setting may hold. Money is recorded as 64-bit integers (the
#: datasets' polars ``Int64``, at most about 9.2e18): a run with ``initial_wealth=10**30``
#: completed and then could not be loaded. 10**12 credits leaves six orders of magnitude
#: for sums over a long run's episodes and agents.
MAX_CREDITS = 10**12


class EconomyConfig(BaseModel):
    """Economic parameters (EoM sec. 3; see the module docstring for each rule); all
    money in integer credits. JSON booleans are not credits.

    Raises:
        pydantic.ValidationError: a field out of range (names the field and value).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    initial_wealth: int = Field(40, ge=0, le=MAX_CREDITS, description="credits a founder or newcomer starts with (from the bank)")
    epsilon: int = Field(1, ge=0, le=MAX_CREDITS, description="a novice bids the max veteran bid plus this (credits)")
    rent: int = Field(5, ge=0, le=MAX_CREDITS, description="rent each agent pays every rent_interval episodes (credits)")
    rent_interval: int = Field(5, ge=1, description="episodes between rents")
    reproduce_threshold: int = Field(100, ge=0, le=MAX_CREDITS, description="wealth at which an agent reproduces (credits)")
    child_endowment: int = Field(10, ge=0, le=MAX_CREDITS, description="credits a parent gives its child")
    explore_interval: int = Field(2, ge=1, description="episodes between newcomers")
    explore_count: int = Field(1, ge=0, description="fresh newcomers per exploration (in addition to replacements)")
    max_agents: int = Field(24, ge=1, description="population cap")
    bid_mutation_pct: int = Field(20, ge=0, description="a child's bid differs from its parent's by up to this percent")
    solvent_bids: bool = Field(False, description="an agent may not bid more than its wealth")
    bid_scheme: Literal["fixed", "holland"] = Field(
        "fixed", description="fixed bids b_a (the paper's), or Holland's wealth-proportional bid (an option)")
    replace_bankrupt: bool = Field(
        True, description="exploration: replace each bankrupt agent by a repaired copy of its policy (the paper's)")
    holland_alpha_pct: int = Field(20, ge=0, description="holland scheme: percent of wealth bid")
    tycoon_wealth: int = Field(50, ge=0, le=MAX_CREDITS, description="holland scheme: wealth from which the proportional bid applies")
    ablation: Literal["none", "no-auction", "no-exploration", "no-exploitation"] = Field(
        "none", description="ablation (EoM sec. 5): none, no-auction, no-exploration or no-exploitation")

    @model_validator(mode="after")
    def _endowment_fits(self) -> EconomyConfig:
        if self.child_endowment > self.reproduce_threshold:
            raise ValueError(
                f"child_endowment ({self.child_endowment}) must not exceed reproduce_threshold ({self.reproduce_threshold})"
            )
        return self


@dataclass
class AgentRecord:
    """One member of the population. Wealth lives in the ledger, not here."""

    agent_id: str
    genome: Any
    bid: int
    born_episode: int
    origin: str  # founder | child | newcomer | replacement | joined
    parent: str | None = None
    novice: bool = False
    #: the seat it runs as (inherited by its offspring); ``None``: no seat (the run's default)
    seat: str | None = None


@dataclass(frozen=True)
class AuctionResult:
    """Outcome of one auction: ``bids`` maps eligible agent -> bid (credits)."""

    winner: str
    bids: dict[str, int]
    price: int
    tie: bool
    random_winner: bool


@dataclass
class EpisodeEnd:
    """What an economy's ``end_episode`` did (this one's and :mod:`.reference`'s): money
    moves, deaths (:func:`death_record`) and births (:func:`birth_record`)."""

    rent: list[Transfer] = field(default_factory=list)
    deaths: list[dict] = field(default_factory=list)
    births: list[dict] = field(default_factory=list)


class Population:
    """Agents (ids ``a0, a1, ...`` in order of birth) and their ledger accounts, as both
    economies keep them (this module's and :mod:`.reference`'s)."""

    def __init__(self) -> None:
        self.ledger = Ledger()
        self.agents: dict[str, Any] = {}
        self._next_id = 0

    def living(self) -> list[Any]:
        """Living agents in order of birth."""
        return list(self.agents.values())

    def wealth(self, agent_id: str) -> int:
        """Wealth of ``agent_id`` in credits."""
        return self.ledger.balance(agent_id)

    def _open(self) -> str:
        """The next agent id, with its ledger account opened (balance 0)."""
        agent_id = f"a{self._next_id}"
        self._next_id += 1
        self.ledger.open(agent_id)
        return agent_id

    def remove_agent(self, agent_id: str, episode: int, cause: str) -> tuple[dict, Any]:
        """Remove an agent; its balance is settled with the bank. Returns its
        :func:`death_record` and the removed record."""
        wealth = self.wealth(agent_id)
        tr = self.ledger.close(agent_id)
        rec = self.agents.pop(agent_id)
        return death_record(rec, episode, cause, wealth, tr), rec

    def remove_insolvent(self, episode: int, cause: str, out: EpisodeEnd) -> list[Any]:
        """Remove every agent whose wealth is below zero (deaths into ``out``); returns
        the removed records."""
        removed = []
        for a in self.living():
            if self.wealth(a.agent_id) < 0:
                death, rec = self.remove_agent(a.agent_id, episode, cause)
                out.deaths.append(death)
                removed.append(rec)
        return removed

    def charge_rent(self, rent: int, out: EpisodeEnd) -> None:
        """Every living agent pays ``rent`` credits to the rent sink (into ``out.rent``)."""
        out.rent.extend(self.ledger.transfer(a.agent_id, RENT_SINK, rent, "rent") for a in self.living())

    def pay(self, winner: str, previous: str | None, price: int) -> Transfer:
        """Bucket brigade: ``winner`` pays ``price`` to ``previous`` (the bank on the
        first step, or when ``previous`` is gone)."""
        dst = previous if previous is not None and previous in self.agents else BANK
        return self.ledger.transfer(winner, dst, price, "bucket_brigade")


class Economy(Population):
    """Population + ledger. Pure and seeded: every random choice uses an ``rng`` the
    caller derives from the run seed.
    """

    def __init__(self, config: EconomyConfig | None = None):
        super().__init__()
        self.config = config or EconomyConfig()

    def max_bid(self) -> int:
        """Highest own bid among living veterans (0 if none)."""
        return max((a.bid for a in self.agents.values() if not a.novice), default=0)

    def veteran_bid(self, agent_id: str) -> int:
        """A veteran's bid in credits (module docstring, "Bid scheme")."""
        rec = self.agents[agent_id]
        cfg = self.config
        if cfg.bid_scheme == "holland":
            w = self.wealth(agent_id)
            if w >= cfg.tycoon_wealth:
                return max(rec.bid, w * cfg.holland_alpha_pct // 100)
        return rec.bid

    def placed_bids(self, eligible: list[str], trial: bool = True) -> dict[str, int]:
        """The bids placed in an auction among ``eligible`` (credits), in the order of
        ``eligible``: a veteran's :meth:`veteran_bid`; in training (``trial``) a novice's
        trial bid (module docstring, "Newcomer trial"; frozen evaluation: every agent
        bids its own bid).

        The one place ``solvent_bids`` is applied (module docstring, "Solvency"; Hayek,
        Baum & Durdanovic 2000: an agent cannot spend money it does not have): a veteran
        whose wealth is below its bid stays out; a novice's trial bid is the maximum bid
        of the *solvent* eligible veterans plus ``epsilon``, and a novice whose wealth is
        below that stays out. :meth:`pay` checks the winner's wealth.
        """
        solvent = self.config.solvent_bids
        vets = {a: self.veteran_bid(a) for a in eligible if not (trial and self.agents[a].novice)}
        vets = {a: b for a, b in vets.items() if not solvent or self.wealth(a) >= b}
        trial_bid = max(vets.values(), default=0) + self.config.epsilon
        out: dict[str, int] = {}
        for a in eligible:
            if a in vets:
                out[a] = vets[a]
            elif trial and self.agents[a].novice and (not solvent or self.wealth(a) >= trial_bid):
                out[a] = trial_bid
        return out

    def mutate_bid(self, bid: int, rng: random.Random) -> int:
        """A child's bid: ``bid`` moved by up to ``bid_mutation_pct`` percent (>= 1 credit
        of range), never below 1."""
        span = max(1, bid * self.config.bid_mutation_pct // 100)
        return max(1, bid + rng.randint(-span, span))

    def add_agent(
        self,
        genome: Any,
        *,
        episode: int,
        origin: str = "founder",
        bid: int | None = None,
        parent: str | None = None,
        seat: str | None = None,
        endowment: int | None = None,
    ) -> tuple[AgentRecord, Transfer]:
        """Add an agent and fund it.

        ``bid`` is the agent's own bid (credits); children, replacements, newcomers and
        joined agents start as novices (see module docstring). Founders, replacements,
        newcomers and joined agents are funded by the bank with ``initial_wealth`` (a
        joined agent: ``endowment`` if given); children by their parent with
        ``child_endowment``. A replacement's ``parent`` is the removed agent it repairs.
        ``seat``: the seat it runs as (see module docstring).

        Raises:
            ValueError: ``bid`` negative or ``origin`` unknown; ``parent`` missing for a
                child; ``endowment`` for another origin than ``joined``, or negative.
        """
        if origin not in ("founder", "child", "newcomer", "replacement", "joined"):
            raise ValueError(f"origin must be founder|child|newcomer|replacement|joined, got {origin!r}")
        if endowment is not None and (origin != "joined" or not isinstance(endowment, int) or endowment < 0):
            raise ValueError(f"endowment {endowment!r}: only a joined agent's, an int >= 0 credits")
        if bid is None:
            bid = self.config.epsilon
        if not isinstance(bid, int) or bid < 0:
            raise ValueError(f"bid must be an int >= 0 credits, got {bid!r}")
        agent_id = self._open()
        rec = AgentRecord(agent_id, genome, bid, episode, origin, parent, novice=origin != "founder", seat=seat)
        if origin == "child":
            if parent not in self.agents:
                raise ValueError(f"parent must be a living agent, got {parent!r}")
            tr = self.ledger.transfer(parent, agent_id, self.config.child_endowment, "endowment")
        else:
            amount = self.config.initial_wealth if endowment is None else endowment
            tr = self.ledger.transfer(BANK, agent_id, amount, "initial_wealth")
        self.agents[agent_id] = rec
        return rec, tr

    # -- auction and payments -------------------------------------------------------
    def auction(self, eligible: list[str], rng: random.Random, trial: bool = True) -> AuctionResult:
        """Pick the winner among ``eligible`` agent ids (highest bid; seeded tie-break).

        ``trial`` (training) gives novices their max + epsilon trial bid; frozen
        evaluation passes False so every agent bids its own bid. Ablation
        ``no-auction``: a uniformly random eligible agent wins.

        Raises:
            ValueError: ``eligible`` empty, naming an agent that is not alive, or (with
                ``solvent_bids``) holding no agent that can cover its bid.
        """
        if not eligible:
            raise ValueError("eligible must name at least one living agent")
        for a in eligible:
            if a not in self.agents:
                raise ValueError(f"eligible names an agent that is not alive: {a!r}")
        bids = self.placed_bids(eligible, trial)
        if not bids:
            raise ValueError(f"no agent among {eligible!r} can cover its bid (solvent_bids)")
        return decide_auction(bids, rng, random_winner=self.config.ablation == "no-auction")

    def pay(self, winner: str, previous: str | None, price: int) -> Transfer:
        """Bucket brigade: ``winner`` pays ``price`` (its winning bid) to ``previous``
        (the bank if None) and, if a novice, becomes a veteran.

        A winner that follows itself pays itself (no net change).

        Raises:
            LedgerError: with ``solvent_bids``, ``price`` exceeds the winner's wealth
                (the auction never lets that happen: see :meth:`placed_bids`).
        """
        if self.config.solvent_bids and price > self.wealth(winner):
            raise LedgerError(f"solvent_bids: {winner} would pay {price} credits with wealth {self.wealth(winner)}")
        self.agents[winner].novice = False
        return super().pay(winner, previous, price)

    def reward(self, agent_id: str, amount: int) -> Transfer:
        """The environment's reward (credits, from the bank) to the agent that acted."""
        return self.ledger.transfer(BANK, agent_id, amount, "reward")

    # -- between episodes -----------------------------------------------------------
    def end_episode(
        self,
        episode: int,
        rng: random.Random,
        mutate: Callable[[Any, random.Random], Any],
        newcomer: Callable[[random.Random], Any],
        repair: Callable[[Any, random.Random], Any] | None = None,
        ops_for: Callable[[str | None], tuple[Callable, Callable | None]] | None = None,
    ) -> EpisodeEnd:
        """Rent, bankruptcy, replacement of the bankrupt, reproduction of the rich,
        newcomers (in that order).

        ``episode`` is the 0-based training episode just finished; rent is due when
        ``(episode + 1) % rent_interval == 0``. ``mutate(genome, rng)`` returns a
        child's genome; ``repair(genome, rng)`` a replacement's genome made from the
        failed agent's (default: ``mutate``); ``newcomer(rng)`` a fresh one.
        ``ops_for(seat) -> (mutate, repair)``: in a run with seats, the mutation and
        repair of the parent's seat (its model rewrites the prompt); offspring inherit the
        parent's seat (module docstring).
        """
        cfg = self.config
        out = EpisodeEnd()

        def offspring(src: AgentRecord, origin: str) -> None:
            # a child (mutation) or a replacement (repair) by src's seat's operators; src's seat, a mutated bid
            m, r = (mutate, repair) if ops_for is None else ops_for(src.seat)
            op = m if origin == "child" else r or m
            rec, tr = self.add_agent(op(src.genome, rng), episode=episode, origin=origin, parent=src.agent_id,
                                     bid=self.mutate_bid(src.bid, rng), seat=src.seat)
            out.births.append(birth_record(rec, tr))

        if cfg.rent and (episode + 1) % cfg.rent_interval == 0:
            self.charge_rent(cfg.rent, out)
        failed: list[AgentRecord] = self.remove_insolvent(episode, "bankruptcy", out)
        if cfg.replace_bankrupt and cfg.ablation != "no-exploration":
            for dead in failed:
                if len(self.agents) >= cfg.max_agents:
                    break
                offspring(dead, "replacement")
        if cfg.ablation != "no-exploitation":
            rich = sorted(
                (a for a in self.living() if self.wealth(a.agent_id) >= cfg.reproduce_threshold),
                key=lambda a: (-self.wealth(a.agent_id), _id_key(a.agent_id)),
            )
            for parent in rich:
                if len(self.agents) >= cfg.max_agents:
                    break
                offspring(parent, "child")
        if cfg.ablation != "no-exploration" and (episode + 1) % cfg.explore_interval == 0:
            for _ in range(cfg.explore_count):
                if len(self.agents) >= cfg.max_agents:
                    break
                bid = rng.randint(1, max(1, self.max_bid()))
                rec, tr = self.add_agent(newcomer(rng), episode=episode, origin="newcomer", bid=bid)
                out.births.append(birth_record(rec, tr))
        return out


def decide_auction(bids: dict[str, int], rng: random.Random, *, random_winner: bool,
                   draw_alone: bool = False) -> AuctionResult:
    """The winner of ``bids`` (agent -> bid placed, credits): the highest bid, ties broken
    by ``rng.choice`` over the tied agents in id order; ``random_winner`` (ablation
    ``no-auction``): a uniformly random bidder. ``draw_alone``: draw even a lone top
    bidder (the reference's ``random.choice(top_bidders)``, which uses the ``rng`` every
    time)."""
    if random_winner:
        winner = rng.choice(sorted(bids, key=_id_key))
        return AuctionResult(winner, bids, bids[winner], False, True)
    top = max(bids.values())
    tied = sorted((a for a, b in bids.items() if b == top), key=_id_key)
    winner = tied[0] if len(tied) == 1 and not draw_alone else rng.choice(tied)
    return AuctionResult(winner, bids, top, len(tied) > 1, False)


def birth_record(rec: Any, tr: Transfer) -> dict:
    """The record of a birth (``EpisodeEnd.births``, the ``birth`` event's fields): the
    agent, its origin, parent and own bid, and who funded it with how many credits."""
    return {
        "agent": rec.agent_id,
        "origin": rec.origin,
        "parent": rec.parent,
        "bid": rec.bid,
        "endowment": tr.amount,
        "funder": tr.src,
        "episode": rec.born_episode,
    }


def death_record(rec: Any, episode: int, cause: str, wealth: int, settlement: Transfer | None) -> dict:
    """The record of a removal (``EpisodeEnd.deaths``, the ``death`` event's fields):
    ``wealth`` before the ``settlement`` with the bank (credits), age in episodes."""
    return {"agent": rec.agent_id, "episode": episode, "cause": cause, "wealth": wealth,
            "settlement": settlement.amount if settlement else 0, "age": episode - rec.born_episode}


def _id_key(agent_id: str) -> int:
    return int(agent_id[1:]) if agent_id[1:].isdigit() else -1
