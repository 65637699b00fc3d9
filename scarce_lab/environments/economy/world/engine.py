"""One episode of the Hayek machine on a task: observe, trigger, auction, pay, act,
reward (EoM sec. 3.2, the planning loop).

The loop is pure: agent behaviour comes in as two callables (``trigger(record, obs)
-> bool`` and ``act(record, obs) -> action``) that the runner builds from the agent
layer, and events go out through ``emit(kind, step, agent, payload)``.

Events emitted (payload fields; money in credits):

- ``auction``: ``bids`` {eligible id: bid placed}, ``winner``, ``price``,
  ``tie``, ``random_winner``, ``step_kind``.
- ``payment`` (training only): ``payer``, ``payee``, ``amount``, ``reason``.
- ``step``: ``action`` (JSON-able), ``step_kind``, ``reward``, ``done``, ``solved``.
- ``reward`` (training only, reward > 0): ``amount``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .core import AgentRecord, AuctionResult, Economy
from .ledger import Transfer


@dataclass(frozen=True)
class StepResult:
    """What a task returns for one action: ``reward`` in credits (int >= 0)."""

    reward: int
    done: bool
    solved: bool
    info: dict = field(default_factory=dict)


class TaskEnv(Protocol):
    """A task instance the economy acts on (Blocks World, a QA problem)."""

    max_steps: int

    def observe(self) -> Any: ...

    def step_kind(self, obs: Any) -> str: ...

    def apply(self, action: Any) -> StepResult: ...


@dataclass
class EpisodeResult:
    """Summary of one episode: ``winners`` in step order; ``end`` is why it ended
    (``solved`` | ``done`` | ``no_eligible`` | ``max_steps``)."""

    solved: bool
    steps: int
    reward: int
    winners: list[str]
    end: str


Emit = Callable[[str, int | None, str | None, dict], None]


def _noop(kind: str, step: int | None, agent: str | None, payload: dict) -> None:
    return None


def emit_auction(emit: Emit, step: int, res: AuctionResult, step_kind: str) -> None:
    """Emit the ``auction`` event of ``res`` (payload: module docstring)."""
    emit("auction", step, res.winner, {"bids": res.bids, "winner": res.winner, "price": res.price, "tie": res.tie,
                                       "random_winner": res.random_winner, "step_kind": step_kind})


def emit_payment(emit: Emit, step: int, agent: str, tr: Transfer) -> None:
    """Emit the ``payment`` event of ``tr`` on ``agent``."""
    emit("payment", step, agent, {"payer": tr.src, "payee": tr.dst, "amount": tr.amount, "reason": tr.reason})


def emit_step(emit: Emit, step: int, agent: str, action: Any, step_kind: str, result: StepResult,
              *, info: bool = True) -> None:
    """Emit the ``step`` event of ``agent``'s ``action`` (already JSON-able) and its
    ``result`` (``info`` only when the task gave any and ``info`` is set)."""
    emit("step", step, agent, {"action": action, "step_kind": step_kind, "reward": result.reward,
                               "done": result.done, "solved": result.solved,
                               **({"info": result.info} if info and result.info else {})})


def run_episode(
    economy: Economy,
    env: TaskEnv,
    *,
    trigger: Callable[[AgentRecord, Any], bool],
    act: Callable[[AgentRecord, Any], Any],
    training: bool,
    rng: random.Random,
    emit: Emit = _noop,
    action_to_json: Callable[[Any], Any] = lambda a: a,
    order: list[str] | None = None,
) -> EpisodeResult:
    """Play one episode. In training the bucket brigade and rewards move money; in
    frozen evaluation (``training=False``) no money moves and only the auction picks
    who acts.

    ``order`` given: the round-robin baseline, no economy. The living agents of
    ``order`` act in that fixed cyclic order with ``training=False``; its ``auction``
    event also names the ``eligible`` agent and ``round_robin``, its ``step`` event
    has no ``info``.
    """
    previous: str | None = None
    out = EpisodeResult(False, 0, 0, [], "max_steps")
    alive = [a for a in order if a in economy.agents] if order is not None else []
    if order is not None and not alive:
        return EpisodeResult(False, 0, 0, [], "no_eligible")
    for step in range(env.max_steps):
        obs = env.observe()
        kind = env.step_kind(obs)
        if order is not None:
            winner = alive[step % len(alive)]
            emit("auction", step, winner, {
                "eligible": [winner], "bids": {}, "winner": winner, "price": 0, "tie": False,
                "random_winner": False, "step_kind": kind, "round_robin": True,
            })
        else:
            triggered = [a.agent_id for a in economy.living() if trigger(a, obs)]
            eligible = list(economy.placed_bids(triggered, trial=training))
            if not eligible:
                out.end = "no_eligible"
                break
            res = economy.auction(eligible, rng, trial=training)
            winner = res.winner
            emit_auction(emit, step, res, kind)
            if training:
                emit_payment(emit, step, winner, economy.pay(winner, previous, res.price))
        action = act(economy.agents[winner], obs)
        result = env.apply(action)
        out.winners.append(winner)
        emit_step(emit, step, winner, action_to_json(action), kind, result, info=order is None)
        if training and result.reward:
            economy.reward(winner, result.reward)
            emit("reward", step, winner, {"amount": result.reward})
        out.reward += result.reward
        out.steps += 1
        previous = winner
        if result.done:
            out.solved = result.solved
            out.end = "solved" if out.solved else "done"
            break
    return out
