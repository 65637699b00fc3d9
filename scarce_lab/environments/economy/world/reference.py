"""The Economy of Minds as its authors' code runs it (the ``eom-reference`` preset).

Our default economy (:mod:`.core`) follows the paper's text. The authors' engine
(github.com/zhentingqi/EoM, ``hayekmas/base/mas.py``, ``population.py``, ``agent.py``,
``config.py``) is a different economy; this module states its rules in our terms, as
pure seeded logic (no I/O, no agents, no LLM; behaviour comes in as callables). Every
rule below names the reference function it follows.

Money: the reference keeps float wealth (``initial_wealth=0.5``, ``base_bid=0.1``);
we keep integer credits with ``CREDITS_PER_UNIT`` = 1000 credits per reference unit
(``0.1`` -> 100 credits), so every preset value is exact. Path and step rewards are
real numbers in the reference; each payment is rounded to the nearest credit (half to
even), the only departure in amounts, at most 0.5 credit = 0.0005 units per payment.
Every movement goes through the :class:`~.ledger.Ledger` (money conserved; the bank
issues rewards and absorbs costs, rent goes to the rent sink).

Rules (reference function in brackets):

- Agents start as novices, founders included [``BaseAgent.initialize``]; children get
  ``initial_wealth`` new money from the bank, not an endowment from a parent
  [``HayekMAS._add_born_agent``].
- Joining [``HayekMAS._run_auction_action_loop``]: outside terminal mode an agent joins
  when its wake-up callable says so (LLM agents: the model answers ``\\boxed{yes}``;
  researchworld ``ResearchAgent.match_wakeup_condition``), and with ``no_repeat_role``
  an agent of the role that acted last does not join (same function). In the last
  ``start_on_step_from_end`` steps (terminal mode, ``_is_terminal_mode_step``) wake-up
  is bypassed and only agents carrying a tag in ``terminal_tags`` join
  (``_restrict_agents_for_terminal_mode``); none -> the episode ends.
- Bids, training only [same loop, "BID INITIALIZATION"]: ``fixed``: a novice bids
  ``base_bid + novice_bid_epsilon`` and becomes a veteran at once (whether it wins or
  not); a veteran is reset to ``base_bid``. ``fixed_with_eps``: a novice bids the
  highest veteran bid among the joining agents (``base_bid`` if none) plus epsilon,
  becomes a veteran, and keeps that bid for life. Frozen evaluation uses the bids as
  they are. Highest bid wins; ties at random (``random.choice(top_bidders)``).
- Bucket brigade (training): the winner pays its bid to the previous winner of the
  episode, the first winner to nobody (here: the bank).
- Step rewards (``reward_scheme="path_reward_and_stepwise_reward"``): the task's step
  reward goes to the winner, or with ``step_reward_split_chain`` in equal shares to
  the unique agents among the last ``step_reward_chain_window`` winners. The task
  bonus of a final answer is ``terminal_output_bonus_scale * signal(score)``
  (researchworld ``ResearchEnv._handle_final_answer``), ``signal(s) = env_reward_scale
  * (2s - 1)`` with ``center_env_reward`` else ``env_reward_scale * s``
  [``RewardConfig.reward_signal``].
- Path reward at episode end (training) [``HayekMAS._apply_path_rewards``]: every action
  on the path (every step's winner, repeats included; with
  ``path_reward_per_unique_author`` each author once) gets
  ``path_reward_scale * signal(score) / path_length``; a missing score counts as
  ``missing_terminal_score``. Centred, a failed episode costs every action on it.
- Replay [``HayekMAS._train_forward``]: after an episode, agents with wealth below zero
  are removed; if any, survivors' wealth is restored to what it was before the trial
  (bids and novice status kept) and the same instance is replayed, up to
  ``max_trials_per_episode`` trials in all.
- Roles [``HayekMAS._ensure_necessary_roles_exist``]: after every removal, each founding
  role with no living agent is restored by a repair of a removed agent of that role.
- Rent every ``rent_interval`` episodes, then removal of the bankrupt (again with role
  recovery). Births for bankruptcies [``_resolve_bankruptcy_births``]: for each agent
  removed in the episode, with probability ``p_a`` a mutation of the richest living
  agent, with ``p_b`` a repair of the removed agent, else no birth. Periodic births
  [``_periodic_births``]: every ``birth_interval`` episodes, ``num_births_per_interval``
  births, each a mutation of the richest agent with probability ``periodical_good_p``,
  else a repair of the poorest. Top-up [end of ``_train_forward``]: while the
  population is below ``min_num_agents``, mutations of the richest (at most one per
  founder). ``max_num_agents`` caps every birth (0: no cap) except role recovery.
- Ablations (ours; the reference has none): ``no-auction`` a random joining agent
  wins; ``no-exploitation`` no mutation births (p_a, periodic good births, top-up);
  ``no-exploration`` no repair births except role recovery.

Size: one set of rules (settings, shipped presets, population, one episode) meant to be
read side by side with ``mas.py``; split, the rule-to-function map would be scattered.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .core import MAX_CREDITS, AuctionResult, EpisodeEnd, Population, birth_record, decide_auction
from .engine import Emit, _noop, emit_auction, emit_payment, emit_step
from .ledger import BANK, Transfer

CREDITS_PER_UNIT = 1000
#: The largest reward scale (absolute): a scale of 1e300 made 300-digit payments that no
#: dataset can hold (see ``MAX_CREDITS``).
MAX_SCALE = 1e6


def credits(units: float) -> int:
    """Reference money units as integer credits (nearest credit, half to even)."""
    return round(units * CREDITS_PER_UNIT)


class ReferenceConfig(BaseModel):
    """The reference engine's settings (``hayekmas/base/config.py``: ``EngineConfig``,
    ``RewardConfig``, ``EvolutionConfig``, ``TerminalConfig``), money in credits
    (:data:`CREDITS_PER_UNIT` per reference unit). Defaults are the reference's
    dataclass defaults; the presets of :data:`PRESETS` are its shipped configs.

    Raises:
        pydantic.ValidationError: a field out of range (money at most ``MAX_CREDITS``,
            scales at most ``MAX_SCALE`` in absolute value), ``p_a + p_b > 1``,
            ``min_num_agents > max_num_agents`` (a cap set), a float that
            is NaN or infinite (a scale of ``nan`` or ``inf`` ended the run mid-episode
            when a payment was rounded to credits).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_steps_per_episode: int = Field(10, ge=1, description="reference: steps per episode")
    max_trials_per_episode: int = Field(4, ge=1, description="reference: replays of an episode after a bankruptcy, in all")
    birth_interval: int = Field(5, ge=0, description="reference: episodes between periodic births (0: none)")
    num_births_per_interval: int = Field(2, ge=0, description="reference: births per periodic birth")
    min_num_agents: int = Field(0, ge=0, description="reference: population top-up floor (0: none)")
    max_num_agents: int = Field(0, ge=0, description="reference: population cap (0: none)")
    bid_scheme: Literal["fixed", "fixed_with_eps"] = Field("fixed", description="reference: fixed or fixed_with_eps")
    base_bid: int = Field(100, ge=0, le=MAX_CREDITS, description="reference: base bid (credits; 1000 per reference unit)")
    novice_bid_epsilon: int = Field(10, ge=0, le=MAX_CREDITS, description="reference: novice premium (credits)")
    initial_wealth: int = Field(500, ge=0, le=MAX_CREDITS, description="reference: wealth of every new agent, new money (credits)")
    rent: int = Field(0, ge=0, le=MAX_CREDITS, description="reference: rent (credits)")
    rent_interval: int = Field(5, ge=1, description="reference: episodes between rents")
    reward_scheme: Literal["path_reward_only", "path_reward_and_stepwise_reward"] = Field(
        "path_reward_only", description="reference: path rewards only, or path and step rewards")
    path_reward_scale: float = Field(1.0, ge=-MAX_SCALE, le=MAX_SCALE, description="reference: path reward scale")
    terminal_output_bonus_scale: float = Field(0.5, ge=-MAX_SCALE, le=MAX_SCALE, description="reference: task bonus scale of a final answer")
    env_reward_scale: float = Field(1.0, ge=-MAX_SCALE, le=MAX_SCALE, description="reference: scale of the reward signal")
    missing_terminal_score: float = Field(0.0, ge=0.0, le=1.0, description="reference: score of an episode without one")
    center_env_reward: bool = Field(True, description="reference: signal 2s-1 (centred) instead of s")
    path_reward_per_unique_author: bool = Field(False, description="reference: path reward once per author")
    step_reward_split_chain: bool = Field(False, description="reference: split step rewards over the last winners")
    step_reward_chain_window: int = Field(3, ge=1, description="reference: last winners sharing a step reward")
    p_a: float = Field(0.0, ge=0.0, le=1.0, description="reference: P(bankruptcy -> mutation of the richest)")
    p_b: float = Field(1.0, ge=0.0, le=1.0, description="reference: P(bankruptcy -> repair of the bankrupt)")
    periodical_good_p: float = Field(0.5, ge=0.0, le=1.0, description="reference: P(periodic birth is a mutation)")
    terminal_enabled: bool = Field(True, description="reference: terminal mode in the last steps")
    start_on_step_from_end: int = Field(1, ge=0, description="reference: terminal mode's number of last steps")
    terminal_tags: tuple[str, ...] = Field(("terminal",), description="reference: tags admitted in terminal mode")
    no_repeat_role: bool = Field(False, description="reference (researchworld): the role that acted last does not join")

    @model_validator(mode="after")
    def _probabilities(self) -> ReferenceConfig:
        if self.p_a + self.p_b > 1.0:
            raise ValueError(f"p_a + p_b must be <= 1, got {self.p_a} + {self.p_b}")
        if self.max_num_agents and self.min_num_agents > self.max_num_agents:
            raise ValueError(f"min_num_agents ({self.min_num_agents}) must not exceed max_num_agents "
                             f"({self.max_num_agents}): the cap would keep the floor from ever being reached")
        return self

    def signal(self, score: float) -> float:
        """``RewardConfig.reward_signal``: ``env_reward_scale * (2s-1)`` centred, else ``* s``."""
        base = 2.0 * score - 1.0 if self.center_env_reward else score
        return self.env_reward_scale * base

    def task_bonus(self, score: float) -> float:
        """``RewardConfig.terminal_output_bonus`` (reference units)."""
        return self.terminal_output_bonus_scale * self.signal(score)


def _ref(**kw) -> dict:
    money = ("base_bid", "novice_bid_epsilon", "initial_wealth", "rent")
    return {k: (credits(v) if k in money else v) for k, v in kw.items()}


#: Shipped reference configs (``global_configs/*.json`` and the adapters'
#: ``configs/train.json``) as preset values; ``founders`` is the founding roster's size.
PRESETS: dict[str, dict[str, Any]] = {
    "eom-reference": {"founders": None, "reference": {}},
    "eom-reference:research": {  # global_configs/train_research.json (5 founders: researchworld roster)
        "founders": 5,
        "reference": _ref(
            max_steps_per_episode=10, max_trials_per_episode=2, birth_interval=3, num_births_per_interval=2,
            min_num_agents=2, max_num_agents=20, bid_scheme="fixed", base_bid=0.1, novice_bid_epsilon=0.1,
            initial_wealth=0.5, rent=0.2, rent_interval=3, reward_scheme="path_reward_and_stepwise_reward",
            center_env_reward=True, env_reward_scale=1.0, path_reward_scale=1.0, terminal_output_bonus_scale=0.5,
            missing_terminal_score=0.0, p_a=0.334, p_b=0.334, periodical_good_p=0.5, no_repeat_role=True,
        ),
    },
    "eom-reference:cloudcast": {  # hayekmas/adapters/cloudcast/configs/train.json (6 founding roles)
        "founders": 6,
        "reference": _ref(
            max_steps_per_episode=22, max_trials_per_episode=1, birth_interval=3, num_births_per_interval=1,
            min_num_agents=6, max_num_agents=20, bid_scheme="fixed_with_eps", novice_bid_epsilon=0.005,
            base_bid=0.05, initial_wealth=0.7, rent=0.02, rent_interval=1,
            reward_scheme="path_reward_and_stepwise_reward", center_env_reward=False, env_reward_scale=2.0,
            path_reward_scale=2.0, terminal_output_bonus_scale=0.0, missing_terminal_score=0.0,
            path_reward_per_unique_author=True, p_a=0.4, p_b=0.4, periodical_good_p=0.6,
            start_on_step_from_end=2, no_repeat_role=False,
        ),
    },
    "eom-reference:arch_dse": {  # global_configs/train_arch_dse_world.json (3 historians, planners, executors)
        "founders": 9,
        "reference": _ref(
            max_steps_per_episode=80, max_trials_per_episode=1, birth_interval=2, num_births_per_interval=1,
            min_num_agents=6, max_num_agents=18, bid_scheme="fixed_with_eps", novice_bid_epsilon=0.05,
            base_bid=0.1, initial_wealth=0.5, rent=0.02, rent_interval=1,
            reward_scheme="path_reward_and_stepwise_reward", path_reward_scale=1.0,
            terminal_output_bonus_scale=1.0, env_reward_scale=0.5, missing_terminal_score=0.0,
            center_env_reward=False, p_a=0.334, p_b=0.334, periodical_good_p=0.5, no_repeat_role=False,
        ),
    },
}


@dataclass
class RefAgent:
    """One member of the reference population (wealth lives in the ledger).

    ``role`` and ``tags`` come from the genome (the agent layer says how); ``bid`` is
    the bid it last set (credits; 0 before its first training auction, as the
    reference's ``initialize``); ``failure`` the last failed episode it acted in
    (trace, task, answer) for a repair.
    """

    agent_id: str
    genome: Any
    role: str
    tags: tuple[str, ...]
    born_episode: int
    origin: str  # founder | child (mutation of the richest) | replacement (repair)
    parent: str | None = None
    bid: int = 0
    novice: bool = True
    failure: dict | None = None


@dataclass
class RefEpisode:
    """One trial of an episode: ``path`` = ``[(step, winner)]``; ``score`` the task's
    score in [0, 1] (None: no final answer / no verification); ``end`` why it ended."""

    path: list[tuple[int, str]]
    score: float | None
    solved: bool
    end: str
    step_rewards: int = 0
    path_rewards: int = 0
    texts: list[tuple[int, str, str]] = field(default_factory=list)  # (step, agent, text)


Mutate = Callable[[Any, random.Random], Any]
Repair = Callable[[Any, dict | None, random.Random], Any]


class ReferenceEconomy(Population):
    """Population + ledger under the reference rules (see module docstring).

    ``role_of(genome) -> str`` and ``tags_of(genome) -> tuple`` come from the agent
    layer. ``ablation`` as in :data:`~.core.ABLATIONS`.
    """

    def __init__(self, config: ReferenceConfig, *, role_of: Callable[[Any], str],
                 tags_of: Callable[[Any], tuple[str, ...]], ablation: str = "none"):
        super().__init__()
        self.config = config
        self.ablation = ablation
        self.founder_roles: list[str] = []
        self.role_of = role_of
        self.tags_of = tags_of

    # -- population -----------------------------------------------------------------
    def can_add(self) -> bool:
        """``HayekMAS._can_add_agent``: no cap (0) or below ``max_num_agents``."""
        cap = self.config.max_num_agents
        return cap <= 0 or len(self.agents) < cap

    def add_agent(self, genome: Any, *, episode: int, origin: str = "founder",
                  parent: str | None = None) -> tuple[RefAgent, Transfer]:
        """A new novice with ``initial_wealth`` new money from the bank (founders too)."""
        role, tags = self.role_of(genome), tuple(self.tags_of(genome))
        rec = RefAgent(self._open(), genome, role, tags, episode, origin, parent)
        tr = self.ledger.transfer(BANK, rec.agent_id, self.config.initial_wealth, "initial_wealth")
        self.agents[rec.agent_id] = rec
        if origin == "founder":
            self.founder_roles.append(rec.role)
        return rec, tr

    def richest(self) -> RefAgent | None:
        """``Population.get_richest_agent`` (first in birth order among equals)."""
        return max(self.living(), key=lambda a: self.wealth(a.agent_id), default=None)

    def poorest(self) -> RefAgent | None:
        """``Population.get_poorest_agent``."""
        return min(self.living(), key=lambda a: self.wealth(a.agent_id), default=None)

    # -- joining, bids, auction, payments --------------------------------------------
    def terminal_mode(self, step: int) -> bool:
        """``HayekMAS._is_terminal_mode_step``: the last ``start_on_step_from_end`` steps."""
        cfg = self.config
        n = cfg.start_on_step_from_end
        return cfg.terminal_enabled and n > 0 and cfg.max_steps_per_episode - step <= n

    def joining(self, step: int, last_role: str | None, wakes: Callable[[RefAgent], bool]) -> list[str]:
        """The agents in this step's auction (see module docstring, "Joining")."""
        if self.terminal_mode(step):
            tags = set(self.config.terminal_tags)
            return [a.agent_id for a in self.living() if not tags or tags & set(a.tags)]
        out = []
        for a in self.living():
            if self.config.no_repeat_role and last_role is not None and a.role == last_role:
                continue
            if wakes(a):
                out.append(a.agent_id)
        return out

    def set_bids(self, active: list[str]) -> None:
        """Training bid initialisation (``fixed`` / ``fixed_with_eps``), in place."""
        cfg = self.config
        if cfg.bid_scheme == "fixed":
            for a in active:
                rec = self.agents[a]
                if rec.novice:
                    rec.bid, rec.novice = cfg.base_bid + cfg.novice_bid_epsilon, False
                else:
                    rec.bid = cfg.base_bid
            return
        vets = [self.agents[a].bid for a in active if not self.agents[a].novice]
        high = max(vets) if vets else cfg.base_bid
        for a in active:
            rec = self.agents[a]
            if rec.novice:
                rec.bid, rec.novice = high + cfg.novice_bid_epsilon, False

    def auction(self, active: list[str], rng: random.Random, training: bool) -> AuctionResult:
        """Highest bid wins, ties at random; training sets bids first.

        Raises:
            ValueError: ``active`` empty.
        """
        if not active:
            raise ValueError("active must name at least one living agent")
        if training:
            self.set_bids(active)
        bids = {a: self.agents[a].bid for a in active}
        return decide_auction(bids, rng, random_winner=self.ablation == "no-auction", draw_alone=True)

    def grant(self, agent_id: str, amount: int, reason: str) -> Transfer:
        """A signed reward: positive from the bank, negative to the bank."""
        if amount >= 0:
            return self.ledger.transfer(BANK, agent_id, amount, reason)
        return self.ledger.transfer(agent_id, BANK, -amount, reason)

    def path_rewards(self, path: list[tuple[int, str]], score: float | None) -> list[tuple[int, Transfer]]:
        """``HayekMAS._apply_path_rewards`` on the living agents of ``path``: ``[(step,
        transfer)]``, one per action (or per author with ``path_reward_per_unique_author``)."""
        cfg = self.config
        s = cfg.missing_terminal_score if score is None else score
        targets = [(st, a) for st, a in path if a in self.agents]
        if cfg.path_reward_per_unique_author:
            seen: set[str] = set()
            targets = [(st, a) for st, a in targets if not (a in seen or seen.add(a))]
        if not targets:
            return []
        each = credits(cfg.path_reward_scale * cfg.signal(s) / len(targets))
        return [(st, self.grant(a, each, "path_reward")) for st, a in targets]

    def step_reward(self, winner: str, chain: list[str], units: float) -> list[Transfer]:
        """A step reward (reference units) to the winner, or split over the chain."""
        if not units:
            return []
        if self.config.step_reward_split_chain:
            uniq = list(dict.fromkeys(a for a in chain if a in self.agents))
            return [self.grant(a, credits(units / len(uniq)), "step_reward") for a in uniq]
        return [self.grant(winner, credits(units), "step_reward")]

    # -- between trials and episodes -------------------------------------------------
    def balances(self) -> dict[str, int]:
        return {a: self.wealth(a) for a in self.agents}

    def restore(self, snapshot: dict[str, int]) -> list[Transfer]:
        """Survivors' wealth back to ``snapshot`` (the replay rollback), via the bank."""
        deltas = {a: snapshot[a] - self.wealth(a) for a in self.agents if a in snapshot}
        return [self.grant(a, d, "replay_restore") for a, d in deltas.items() if d]

    def remove_bankrupt(self, episode: int, cause: str, repair: Repair, rng: random.Random,
                        out: EpisodeEnd) -> list[RefAgent]:
        """Remove agents with wealth < 0, then recover missing founding roles
        (``remove_bankrupt_agents`` + ``_ensure_necessary_roles_exist``)."""
        removed = self.remove_insolvent(episode, cause, out)
        living_roles = {a.role for a in self.living()}
        for role in dict.fromkeys(self.founder_roles):
            if role in living_roles:
                continue
            candidates = [r for r in removed if r.role == role]
            if not candidates:  # a birth changed its parent's role: the agent layer's bug
                raise RuntimeError(f"founding role {role!r} is missing but no removed agent has it "
                                   "(mutate/repair must keep a genome's role)")
            self._birth("replacement", rng.choice(candidates), repair, episode, rng, out, cap=False)
            living_roles.add(role)
        return removed

    def _birth(self, origin: str, src: RefAgent, make: Mutate | Repair, episode: int, rng: random.Random,
               out: EpisodeEnd, cap: bool = True) -> None:
        """Add a born agent made from ``src``: a ``child`` (``make`` is ``mutate(genome,
        rng)``) or a ``replacement`` (``make`` is ``repair(genome, failure, rng)``). It keeps
        ``src``'s role (the reference's births are instances of the parent's class);
        ``cap``: none above ``max_num_agents``.

        Raises:
            ValueError: the new genome's role differs from ``src``'s.
        """
        genome = make(src.genome, rng) if origin == "child" else make(src.genome, src.failure, rng)
        if self.role_of(genome) != src.role:
            raise ValueError(f"a {origin} of a {src.role!r} agent has role {self.role_of(genome)!r}: "
                             "mutate/repair must keep a genome's role")
        if cap and not self.can_add():
            return
        out.births.append(birth_record(*self.add_agent(genome, episode=episode, origin=origin, parent=src.agent_id)))

    def end_episode(self, episode: int, bankrupts: list[RefAgent], rng: random.Random, mutate: Mutate,
                    repair: Repair, out: EpisodeEnd | None = None) -> EpisodeEnd:
        """Rent, bankruptcy births, periodic births, top-up (``_train_forward``'s tail).

        ``episode`` is 0-based (the reference counts from 1: rent and births are due
        when ``(episode + 1) % interval == 0``); ``bankrupts`` the agents removed during
        the episode's trials; ``repair(genome, failure, rng)`` gets the failed agent's
        last failure context (trajectory, task, correct answer).
        """
        cfg = self.config
        out = out or EpisodeEnd()
        n = episode + 1
        if cfg.rent > 0 and n % cfg.rent_interval == 0:
            self.charge_rent(cfg.rent, out)
            bankrupts = bankrupts + self.remove_bankrupt(episode, "bankruptcy", repair, rng, out)
        explore = self.ablation != "no-exploration"
        exploit = self.ablation != "no-exploitation"
        for dead in bankrupts:  # _resolve_bankruptcy_births
            draw = rng.random()
            if draw < cfg.p_a:
                parent = self.richest()
                if parent is not None and exploit:
                    self._birth("child", parent, mutate, episode, rng, out)
            elif draw < cfg.p_a + cfg.p_b and explore:
                self._birth("replacement", dead, repair, episode, rng, out)
        if cfg.birth_interval > 0 and n % cfg.birth_interval == 0:  # _periodic_births
            for _ in range(cfg.num_births_per_interval):
                if not self.can_add():
                    break
                if rng.random() < cfg.periodical_good_p:
                    parent = self.richest()
                    if parent is not None and exploit:
                        self._birth("child", parent, mutate, episode, rng, out)
                else:
                    src = self.poorest()
                    if src is not None and explore:
                        self._birth("replacement", src, repair, episode, rng, out)
        if cfg.min_num_agents > 0 and exploit:  # top-up by mutation of the richest
            for _ in self.founder_roles:
                if len(self.agents) >= cfg.min_num_agents:
                    break
                parent = self.richest()
                if parent is None:
                    break
                self._birth("child", parent, mutate, episode, rng, out)
        return out


def play_reference_episode(
    economy: ReferenceEconomy,
    env,
    *,
    wakes: Callable[[RefAgent, Any], bool],
    act: Callable[[RefAgent, Any], Any],
    training: bool,
    rng: random.Random,
    emit: Emit = _noop,
    action_to_json: Callable[[Any], Any] = lambda a: a,
    action_text: Callable[[Any], str] = str,
    first_step: int = 0,
) -> RefEpisode:
    """One trial of one episode under the reference rules (see module docstring).

    ``env`` is a :class:`~.engine.TaskEnv`; a step that ends the episode gives the
    score in ``info["score"]`` (None: no usable score; without the key 1.0 if solved,
    0.0 if not). Emits ``auction``, ``payment`` (reasons ``bucket_brigade``,
    ``step_reward``, ``path_reward``) and ``step`` events with the engine's payloads. The role that acted last starts empty in
    every trial (base/env.py ``get_last_role`` reads the episode's action history, which
    ``initialize`` clears). ``first_step`` numbers the emitted steps on from an earlier
    trial of the same episode (a replay), so (episode, step) stays unique.
    """
    cfg = economy.config
    last_role: str | None = None
    previous: str | None = None
    chain: list[str] = []
    out = RefEpisode([], None, False, "max_steps")
    for step in range(min(cfg.max_steps_per_episode, env.max_steps)):
        obs = env.observe()
        kind = env.step_kind(obs)
        active = economy.joining(step, last_role, lambda a, _o=obs: wakes(a, _o))
        if not active:
            out.end = "no_eligible"
            break
        res = economy.auction(active, rng, training)
        at = first_step + step
        emit_auction(emit, at, res, kind)
        if training:
            emit_payment(emit, at, res.winner, economy.pay(res.winner, previous, res.price))
        rec = economy.agents[res.winner]
        chain = (chain + [res.winner])[-cfg.step_reward_chain_window:]
        action = act(rec, obs)
        result = env.apply(action)
        out.path.append((at, res.winner))
        out.texts.append((at, res.winner, action_text(action)))
        last_role = rec.role
        emit_step(emit, at, res.winner, action_to_json(action), kind, result)
        if result.done:
            score = result.info["score"] if "score" in result.info else (1.0 if result.solved else 0.0)
            out.score = None if score is None else float(score)
            out.solved = result.solved
            if training and cfg.reward_scheme == "path_reward_and_stepwise_reward":
                bonus = cfg.task_bonus(cfg.missing_terminal_score if out.score is None else out.score)
                out.step_rewards += sum(emit_reward(emit, at, tr) for tr in economy.step_reward(res.winner, chain, bonus))
            out.end = "solved" if out.solved else "done"
            break
        if training:
            previous = res.winner
    if training:
        out.path_rewards += sum(emit_reward(emit, st, tr) for st, tr in economy.path_rewards(out.path, out.score))
    return out


def emit_reward(emit: Emit, step: int, tr: Transfer) -> int:
    """Emit the ``payment`` of a signed reward (:meth:`ReferenceEconomy.grant`: a payment
    to the bank is a cost) on the agent it pays or charges; returns the signed credits."""
    emit_payment(emit, step, tr.dst if tr.dst != BANK else tr.src, tr)
    return tr.amount if tr.dst != BANK else -tr.amount


def failure_trace(texts: list[tuple[int, str, str]], agent: str) -> str:
    """``HayekMAS._build_agent_failure_trace``: the episode's turns, ``agent``'s marked
    with ``>>>``."""
    return "\n\n".join(f"{'>>>' if a == agent else '   '} [Step {s}] [{a}] {t.strip()}"
                       for s, a, t in texts if t.strip())
