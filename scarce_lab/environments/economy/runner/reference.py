"""Play a run under an ``eom-reference`` preset (the authors' engine, see
:mod:`scarce_lab.environments.economy.world.reference`) and record it with the Economy's event kinds.

Called by :func:`scarce_lab.environments.economy.runner.play.run_economy` when ``cfg.preset`` is not
``default``. What the trajectory holds, beyond the default economy's events:

- ``payment`` events carry every money movement of the reference rules, by ``reason``:
  ``bucket_brigade`` (as ours), ``step_reward`` (a task bonus, signed: a payment to the
  bank is a cost), ``path_reward`` (one per action on the path, ``step`` = that
  action's step; signed likewise) and ``replay_restore`` (a survivor's wealth restored
  before a replay; ``step`` = -1).
- a replay (an episode played again after a bankruptcy, same instance) shows as the
  trial's ``death`` events, the ``replay_restore`` payments, then the steps again, their
  ``step`` numbers going on from the earlier trial's (one ``episode_start`` and one
  ``episode_end`` per episode, whatever the trials; ``episode_end.steps`` counts the
  accepted trial's steps).
- ``episode_end.reward``: the net credits the reward rules paid in the accepted trial
  (path + step rewards; negative when the episode cost its agents).
- ``episode_agents``: sums over every trial of the episode; ``reward`` is the signed sum
  of its step and path rewards (restores left out), ``paid``/``received`` the bucket
  brigade's.
- ``population``: ``bid`` is the bid an agent last set (0 before its first training
  auction), ``novice`` its status.

Seeds: as the default runner (founders, instances, auctions, evolution), plus the
trial in the auction seed ``{seed}:auction:{phase}:{e}:{trial}``.
"""

from __future__ import annotations

import random

from scarce_lab.llm.quoting import quote
from scarce_lab.runners.calltap import CallTap

from ..world.core import EpisodeEnd, birth_record
from ..world.engine import emit_payment
from ..world.reference import ReferenceEconomy, failure_trace, play_reference_episode
from .record import (
    EpisodeSummary,
    action_payload,
    close_episode,
    counted_act,
    emit_birth,
    end_episode,
    episodes_to_play,
    record_changes,
    start_episode,
)


def quoted_trace(texts: list[tuple[int, str, str]], agent: str) -> str:
    """The failure trace of a repair prompt (:func:`failure_trace`, ``agent``'s turns marked
    ``>>>``), each turn's text quoted (:func:`~scarce_lab.llm.quoting.quote`) so that a turn
    cannot forge a line of another turn."""
    return failure_trace([(s, who, quote(t.strip()) if t.strip() else "") for s, who, t in texts], agent)


def founders(cfg, rec, policy) -> ReferenceEconomy:
    """The founding population: ``cfg.agents`` novices with ``initial_wealth`` each."""
    # plain functions (the economy is checkpointed with the run; a policy holds a client)
    economy = ReferenceEconomy(cfg.reference, role_of=policy.role_of, tags_of=policy.tags_of, ablation=cfg.ablation)
    if hasattr(economy.role_of, "__self__") or hasattr(economy.tags_of, "__self__"):
        raise TypeError("policy.role_of / tags_of must be plain functions (the economy is checkpointed)")
    for genome in policy.founders(cfg.agents, random.Random(f"{cfg.seed}:founders")):
        emit_birth(rec, birth_record(*economy.add_agent(genome, episode=0, origin="founder")),
                   policy.genome_json(genome), 0)
    return economy


def play(cfg, rec, policy, tasks, state, *, tap: CallTap | None = None) -> None:
    """Play every episode not yet committed (see module docstring); checkpoint each."""
    if state is None:
        economy = founders(cfg, rec, policy)
        state = {"economy": economy, "tasks": tasks.state(), "eval_balances": None, "next_round": 0}
    economy: ReferenceEconomy = state["economy"]
    tasks.load_state(state["tasks"])

    def genome_json(a):
        return policy.genome_json(a.genome)

    for ep in episodes_to_play(cfg, state):
        phase, e, rnd = ep
        training = phase == "train"
        policy.episode = rnd
        summary = EpisodeSummary()
        emit = summary.emitter(cfg, rec, ep, tap)
        end = EpisodeEnd()
        evo = random.Random(f"{cfg.seed}:evo:{e}")
        bankrupts = []
        written = [0, 0]  # deaths, births already recorded
        taken: list[str] = []
        act = counted_act(lambda a: policy, rnd, taken)

        def wakes(a, obs, _taken=taken):
            return policy.wakes(a.genome, obs, agent=a.agent_id, step=len(_taken))

        for trial in range(cfg.reference.max_trials_per_episode if training else 1):
            snapshot = economy.balances()
            env, info = start_episode(cfg, rec, tasks, ep, record=trial == 0)  # one start per episode
            rng = random.Random(f"{cfg.seed}:auction:{phase}:{e}:{trial}")
            res = play_reference_episode(economy, env, wakes=wakes, act=act, training=training, rng=rng, emit=emit,
                                         action_to_json=action_payload, action_text=_text,
                                         first_step=len(taken))
            if hasattr(env, "close"):
                env.close()
            if not training:
                break
            if res.score is None or res.score < 1.0:  # HayekMAS._record_recent_failures
                context = {"task": str(info.get("question", "")), "answer": str(info.get("answer", ""))}
                for a in economy.living():
                    a.failure = {"trace": quoted_trace(res.texts, a.agent_id), **context}
            removed = economy.remove_bankrupt(e, "bankruptcy", policy.ref_repair, evo, end)
            record_changes(rec, economy, end, rnd, genome_json, written)
            if not removed:
                break
            bankrupts += removed
            for tr in economy.restore(snapshot):
                emit_payment(emit, -1, tr.dst if tr.src == "bank" else tr.src, tr)
        if training:
            tasks.record(res.solved)
        end_episode(cfg, rec, ep, info, summary, solved=res.solved, steps=len(res.path),
                    reward=res.step_rewards + res.path_rewards, end=res.end)
        if training:
            economy.end_episode(e, bankrupts, evo, policy.ref_mutate, policy.ref_repair, out=end)
            record_changes(rec, economy, end, rnd, genome_json, written)
        close_episode(cfg, economy, rec, tasks, state, ep)


def _text(action) -> str:
    d = action.to_json() if hasattr(action, "to_json") else {}
    return str(d.get("text") or "") + (f" [answer: {d['answer']}]" if d.get("answer") else "")
