"""The records of an Economy of Minds run that both engines (the default economy,
:mod:`.play`, and the ``eom-reference`` preset, :mod:`.reference`) write the same way:
the episode schedule, the engine's events as typed payloads with the per-agent summary,
the task instance at an episode's start, the episode's end, births, rent and deaths,
the population snapshot and the commit that closes each episode (event kinds:
:mod:`scarce_lab.environments.economy.events`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from scarce_lab.runners.calltap import CallTap

from .. import events as ev
from ..config import EconomyRunConfig
from ..world import EpisodeEnd


def emit_birth(rec, birth: dict, genome: dict, rnd: int) -> None:
    """Record ``birth`` (:func:`~scarce_lab.environments.economy.world.core.birth_record`)
    with the newborn's ``genome`` (its policy's ``genome_json``) as a ``birth`` event of
    training round ``rnd``."""
    b = dict(birth)
    agent = b.pop("agent")
    rec.emit(ev.Birth(**b, genome=ev.genome_payload(genome)), round=rnd, phase="train", agent=agent)


def action_payload(action) -> ev.Action:
    """An agent's action (its ``to_json()``) as the typed record of a ``step`` event."""
    d = action.to_json()
    return ev.Action(src=d.get("src"), dst=d.get("dst"), capability=d.get("capability"), text=d.get("text"),
                     answer=None if d.get("answer") is None else str(d["answer"]))


def _task_payload(info: dict) -> ev.TaskInstance:
    return ev.TaskInstance(**{k: (str(v) if k in ("item_id", "question", "answer") else v) for k, v in info.items()})


def _engine_payload(kind: str, step: int, p: dict, tap: CallTap | None = None):
    """An engine event (``emit(kind, step, agent, payload)``) as its typed payload;
    ``tap`` names the model calls behind an auction or a step."""
    call_ids = tap.take(kind) if tap is not None else []
    if kind == "auction":
        return ev.Auction(step=step, bids=[ev.Bid(agent=a, bid=b) for a, b in p["bids"].items()], winner=p["winner"],
                          price=p["price"], tie=p["tie"], random_winner=p["random_winner"], step_kind=p["step_kind"],
                          round_robin=p.get("round_robin", False), call_ids=call_ids)
    if kind == "payment":
        return ev.Payment(step=step, payer=p["payer"], payee=p["payee"], amount=p["amount"], reason=p["reason"])
    if kind == "step":
        info = p.get("info") or {}
        answer = info.get("answer")
        return ev.Step(step=step, action=p["action"], step_kind=p["step_kind"], reward=p["reward"], done=p["done"],
                       solved=p["solved"], invalid=bool(info.get("invalid", False)),
                       final_answer=None if answer is None else str(answer), call_ids=call_ids)
    if kind == "reward":
        return ev.Reward(step=step, amount=p["amount"])
    raise ValueError(f"unknown engine event kind {kind!r}")


class Episode(NamedTuple):
    """One episode of a run: its ``phase`` (``train`` | ``eval``), its ``index`` within
    the phase and its ``round`` (training first, then evaluation)."""

    phase: str
    index: int
    round: int


def episodes_to_play(cfg: EconomyRunConfig, state: dict) -> Iterator[Episode]:
    """The episodes not yet committed (``state["next_round"]`` on), in play order; notes
    the balances at the start of evaluation (``state["eval_balances"]``, which
    :func:`close_episode` checks)."""
    schedule = [Episode("train", e, e) for e in range(cfg.episodes)]
    schedule += [Episode("eval", e, cfg.episodes + e) for e in range(cfg.eval_episodes)]
    for ep in schedule[state["next_round"]:]:
        if ep.phase == "eval" and state["eval_balances"] is None:
            state["eval_balances"] = state["economy"].ledger.balances()
        yield ep


def start_episode(cfg: EconomyRunConfig, rec, tasks, ep: Episode, *, record: bool = True):
    """The task instance of ``ep``: ``(env, info)`` (``tasks.make``: the runner's task
    builder, :class:`.play._Tasks`); with
    ``detail="steps"`` and ``record``, records ``episode_start``."""
    env, info = tasks.make(ep.phase, ep.index)
    if cfg.detail == "steps" and record:
        rec.emit(ev.EpisodeStart(episode=ep.index, task=_task_payload(info)), round=ep.round, phase=ep.phase)
    return env, info


def end_episode(cfg: EconomyRunConfig, rec, ep: Episode, info: dict, summary: EpisodeSummary, *, solved: bool,
                steps: int, reward: int, end: str) -> None:
    """Record ``episode_end`` (with ``detail="episodes"`` the instance's size / id, as
    there is no ``episode_start``) and ``episode_agents``."""
    task = None
    if cfg.detail == "episodes":  # the summary keeps only the instance's size / id
        task = _task_payload({k: v for k, v in info.items() if k in ("n_blocks", "item_id")})
    rec.emit(ev.EpisodeEnd(episode=ep.index, solved=solved, steps=steps, reward=reward, end=end, task=task),
             round=ep.round, phase=ep.phase)
    rec.emit(ev.EpisodeAgents(agents=summary.records()), round=ep.round, phase=ep.phase)


def counted_act(of: Callable, rnd: int, taken: list[str]) -> Callable:
    """The engine's ``act(record, obs)``: the agent's layer (``of(record)``) acts with the
    episode ``rnd`` and the step number, the actions ``taken`` so far in the episode
    (extended by each call)."""

    def act(a, obs):
        out = of(a).act(a.genome, obs, agent=a.agent_id, episode=rnd, step=len(taken))
        taken.append(a.agent_id)
        return out

    return act


def record_changes(rec, economy, end: EpisodeEnd, rnd: int, genome_json: Callable,
                   written: list[int] | None = None) -> None:
    """Record the rent, deaths and births of ``end`` (in that order) as training events
    of round ``rnd``; ``genome_json(agent record)``: a newborn's genome. ``written``
    (deaths and births already recorded, updated) lets a caller record an ``end`` that
    grows (the reference runner's trials)."""
    written = [0, 0] if written is None else written
    if end.rent:
        rec.emit(ev.Rent(amount=end.rent[0].amount, agents=[tr.src for tr in end.rent],
                         total=sum(tr.amount for tr in end.rent)), round=rnd, phase="train")
    for d in end.deaths[written[0]:]:
        d = dict(d)
        agent = d.pop("agent")
        rec.emit(ev.Death(**d), round=rnd, phase="train", agent=agent)
    for b in end.births[written[1]:]:
        emit_birth(rec, b, genome_json(economy.agents[b["agent"]]), rnd)
    written[:] = [len(end.deaths), len(end.births)]


def close_episode(cfg: EconomyRunConfig, economy, rec, tasks, state: dict, ep: Episode) -> None:
    """The end of every episode, for both engines: a population snapshot every
    ``snapshot_every`` episodes and at the last of a phase, the check that a frozen
    evaluation left every balance as it was, then the commit (with the checkpoint
    ``state``) that makes the episode durable.

    Raises:
        RuntimeError: the frozen evaluation changed wealth.
    """
    last = ep.index == (cfg.episodes if ep.phase == "train" else cfg.eval_episodes) - 1
    if ep.index % cfg.snapshot_every == 0 or last:
        bal = economy.ledger.balances()
        rec.emit(ev.Population(
            agents=[ev.AgentWealth(agent=a.agent_id, wealth=bal[a.agent_id], bid=a.bid, novice=a.novice)
                    for a in economy.living()],
            bank=bal["bank"], rent_sink=bal["rent_sink"], total=economy.ledger.total(),
        ), round=ep.round, phase=ep.phase)
    if ep.phase == "eval" and last and economy.ledger.balances() != state["eval_balances"]:
        raise RuntimeError("frozen evaluation changed wealth")
    state["tasks"] = tasks.state()
    state["next_round"] = ep.round + 1
    rec.commit_round(ep.round, state=state)


class EpisodeSummary:
    """Per-agent aggregates of one episode, from the engine's events: ``wins`` by step
    kind, ``paid`` (bids paid, credits), ``received`` (payments received from the next
    winner), ``reward`` (credits). Realised value of an agent's wins = received + reward.
    """

    def __init__(self) -> None:
        self.agents: dict[str, dict] = {}

    def _a(self, agent: str) -> dict:
        return self.agents.setdefault(agent, {"wins": {}, "paid": 0, "received": 0, "reward": 0})

    def records(self) -> list[ev.AgentEpisodeSummary]:
        """The aggregates as typed records (agents in order of first appearance)."""
        return [
            ev.AgentEpisodeSummary(agent=a, wins=[ev.StepKindWins(step_kind=k, wins=n) for k, n in s["wins"].items()],
                                   paid=s["paid"], received=s["received"], reward=s["reward"])
            for a, s in self.agents.items()
        ]

    def emitter(self, cfg: EconomyRunConfig, rec, ep: Episode, tap: CallTap | None) -> Callable:
        """The engine's ``emit(kind, step, agent, payload)`` for ``ep``: adds each event to
        this summary and, with ``detail="steps"``, records it (``tap``: the model calls
        behind it)."""

        def emit(kind, step, agent, payload):
            self.add(kind, agent, payload)
            if cfg.detail == "steps":
                rec.emit(_engine_payload(kind, step, payload, tap), round=ep.round, phase=ep.phase, agent=agent)

        return emit

    def add(self, kind: str, agent: str | None, payload: dict) -> None:
        if kind == "auction":
            w = self._a(payload["winner"])["wins"]
            w[payload["step_kind"]] = w.get(payload["step_kind"], 0) + 1
        elif kind == "payment" and payload["reason"] == "replay_restore":
            return  # the replay's rollback is not earned (eom-reference preset)
        elif kind == "payment" and payload["reason"] != "bucket_brigade":
            # a reward rule of the eom-reference preset: signed reward (to the bank = a cost)
            if payload["payee"] not in ("bank", "rent_sink"):
                self._a(payload["payee"])["reward"] += payload["amount"]
            else:
                self._a(payload["payer"])["reward"] -= payload["amount"]
        elif kind == "payment":
            self._a(payload["payer"])["paid"] += payload["amount"]
            if payload["payee"] in self.agents:
                self._a(payload["payee"])["received"] += payload["amount"]
        elif kind == "reward":
            self._a(agent)["reward"] += payload["amount"]
