"""The Economy of Minds conformance play (:func:`economy_trace`, the spec's ``harness``)
and its policy's choices (:class:`EconomyLegalPolicy`); the checks are in
:mod:`scarce_lab.testing.core`."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

from ...testing.core import LegalPolicy, Observation, Trace, refused
from .world.blocksworld import BlocksWorld, LegalMoves, Move, make_instance


class EconomyLegalPolicy(LegalPolicy):
    """:class:`~scarce_lab.testing.core.LegalPolicy` on the Economy's Blocks World: one
    move a decision."""

    def move(self, legal: LegalMoves, *key: Any) -> Move:
        """A legal move: an effective one, or (a third of the time, adversarially)
        any legal move, ineffective ones included."""
        rng = self.rng("move", *key)
        pool = legal.effective if legal.effective and rng.randrange(3) else legal.moves
        return rng.choice(pool)


def economy_trace(seed: int, fork_at: int | None = None) -> Trace:
    """Twenty Blocks World episodes of the Hayek machine; the winner's move is chosen
    by :class:`EconomyLegalPolicy` from the legal moves its observation carries, and an
    illegal action (not a move) is probed, and must be refused, at every step. An
    agent's policy is shown only the task's state (EoM sec. 3.2), never another
    agent's identity, bid or wealth: canary bids (7001, 7002, ...) must not appear in
    any observation. The economy gives agents no private state to see, so there is no
    positive control of their own.

    ``fork_at``: the play re-seeds from that episode on (the policy, the episodes'
    problems and the evolution draws), as a fork seed ``j > 0`` does
    (:mod:`scarce_lab.forks`); :func:`economy_fork_trace` checks its prefix."""
    from .world import Economy, EconomyConfig, run_episode

    policy = EconomyLegalPolicy(seed)
    economy = Economy(EconomyConfig(explore_interval=1, bid_scheme="fixed"))
    rng = random.Random(f"{seed}:founders")
    for i in range(6):
        economy.add_agent((1 + rng.randrange(3), 1 + rng.randrange(3)), episode=0, bid=7001 + i)
    trace = Trace()
    key = seed
    for e in range(20):
        if e == fork_at:
            key = seed + 7919
            policy = EconomyLegalPolicy(key)
            trace.outcomes.append(["fork", e])
        erng = random.Random(f"{key}:ep:{e}")
        target, stacks = make_instance(3, 3, erng)
        env = BlocksWorld(target, stacks, reward_per_block=10, max_steps=16)

        def act(record, obs, env=env, e=e, policy=policy):
            view = dataclasses.asdict(obs)
            text = json.dumps(view, default=str)
            others = [a for a in economy.agents if a != record.agent_id]
            leaks = [f"{a}'s id" for a in others if f'"{a}"' in text]
            leaks += [f"{a}'s bid" for a in others if str(economy.agents[a].bid) in text]
            trace.observations.append(Observation(record.agent_id, text, tuple(leaks)))
            bad = (1, 2)  # a pair, not a Move
            trace.outcomes.append(["refused", refused((TypeError,), f"{bad!r} as a move", lambda: env.apply(bad))])
            return policy.move(obs.legal, e, len(trace.observations))

        res = run_episode(economy, env, trigger=lambda a, o: True, act=act, training=True, rng=erng,
                          emit=lambda *a: None)
        economy.end_episode(e, random.Random(f"{key}:evo:{e}"), lambda g, r: (1 + r.randrange(3), g[1]),
                            lambda r: (1 + r.randrange(3), 1 + r.randrange(3)))
        trace.outcomes.append([e, res.solved, res.steps, res.winners, economy.ledger.balances()])
    return trace


def economy_fork_trace(seed: int, at: int = 8) -> Trace:
    """A parent play (:func:`economy_trace`) and its fork at episode ``at``, in one
    trace: every observation before the fork must be the parent's (else it is flagged
    as a leak: a fork's prefix is its parent's), and the canary checks hold across the
    switch."""
    parent, fork = economy_trace(seed), economy_trace(seed, fork_at=at)
    cut = fork.outcomes.index(["fork", at])
    n = sum(1 for o in fork.outcomes[:cut] if o and o[0] == "refused")  # one probe an observation
    assert 0 < n < len(fork.observations), f"the fork at episode {at} has no prefix or no continuation"
    for i, (p, f) in enumerate(zip(parent.observations[:n], fork.observations[:n], strict=True)):
        if p.text != f.text:
            fork.observations[i] = Observation(f.agent, f.text, (*f.leaks, f"a prefix observation ({i}) that is "
                                               "not the parent's"), f.own)
    return Trace(parent.observations + fork.observations, parent.outcomes + fork.outcomes)


def economy_seats_trace(seed: int) -> Trace:
    """A run with mixed seats and a newcomer, played by the real runner: the compute
    founder (and its offspring) on one model, the answer founder and the newcomer
    (joining at episode 2) on another, every other seat a scripted policy; both models answer from a script
    (:class:`~scarce_lab.llm.mock.MockModel`: no network). Every prompt sent is an
    observation of the agent it was sent for (a prompt rewrite, which names no agent, is
    ``rewrite``); a leak is any seat's model string, or the canary bids (every founder
    bids 7001, the newcomer 7002), in a prompt: an agent's prompt is its own genome and
    the task's notes (EoM sec. 3.2). Outcomes: every event's kind, agent and payload."""
    import tempfile
    from pathlib import Path

    from ...llm.mock import MockModel
    from .config import EconomyRunConfig
    from .runner.play import run_economy

    cfg = EconomyRunConfig(
        task="arithmetic", model="scripted/partial", agents=4, episodes=5, eval_episodes=1, seed=seed,
        founder_bid_min=7001, founder_bid_max=7001, economy={"explore_interval": 1, "reproduce_threshold": 45},
        seats={"compute": {"model": "openai/gpt-4o-mini", "temperature": 0.3}, "answer": "hosted_vllm/seat-canary",
               "newcomer": "hosted_vllm/seat-canary"},
        newcomer={"episode": 2, "bid": 7002})
    client = MockModel(['{"note": "result = 7", "answer": "7"}'])
    models = sorted(set(cfg.seat_models().values()))
    canaries = [*models, *(m.rsplit("/", 1)[-1] for m in models), "7001", "7002"]
    trace = Trace()
    with tempfile.TemporaryDirectory(prefix="scarce_lab_conformance_") as tmp:
        run_dir = run_economy(cfg, Path(tmp), client=client)
        for line in (run_dir / "llm_calls.jsonl").read_text(encoding="utf-8").splitlines():
            call = json.loads(line)
            text = json.dumps(call["messages"])
            leaks = tuple(c for c in canaries if c in text)
            trace.observations.append(Observation(call.get("agent") or "rewrite", text, leaks))
        for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
            e = json.loads(line)
            if e["kind"] != "round_committed":
                trace.outcomes.append([e["kind"], e.get("agent"), e["payload"]])
    return trace
