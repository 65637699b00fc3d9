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

from .. import events as ev
from ..world.reference import (
    RefEpisodeEnd,
    ReferenceEconomy,
    failure_trace,
    play_reference_episode,
)


def _birth_event(rec, economy, policy, b: dict, rnd: int, genome_payload) -> None:
    b = dict(b)
    agent = b.pop("agent")
    genome = economy.agents[agent].genome
    rec.emit(ev.Birth(**b, genome=genome_payload(policy.genome_json(genome))), round=rnd, phase="train", agent=agent)


def founders(cfg, rec, policy, genome_payload) -> ReferenceEconomy:
    """The founding population: ``cfg.agents`` novices with ``initial_wealth`` each."""
    # plain functions (the economy is checkpointed with the run; a policy holds a client)
    economy = ReferenceEconomy(cfg.reference, role_of=policy.role_of, tags_of=policy.tags_of, ablation=cfg.ablation)
    if hasattr(economy.role_of, "__self__") or hasattr(economy.tags_of, "__self__"):
        raise TypeError("policy.role_of / tags_of must be plain functions (the economy is checkpointed)")
    frng = random.Random(f"{cfg.seed}:founders")
    for genome in policy.founders(cfg.agents, frng):
        a, tr = economy.add_agent(genome, episode=0, origin="founder")
        rec.emit(ev.Birth(origin="founder", parent=None, bid=a.bid, endowment=tr.amount, funder=tr.src, episode=0,
                          genome=genome_payload(policy.genome_json(genome))), round=0, phase="train", agent=a.agent_id)
    return economy


def play(cfg, rec, policy, tasks, state, *, schedule, genome_payload, engine_payload, task_payload,
         action_payload, summary_cls) -> None:
    """Play every episode not yet committed (see module docstring); checkpoint each."""
    if state is None:
        economy = founders(cfg, rec, policy, genome_payload)
        state = {"economy": economy, "tasks": tasks.state(), "eval_balances": None, "next_round": 0}
    economy: ReferenceEconomy = state["economy"]
    tasks.load_state(state["tasks"])
    ref = cfg.reference

    def mutate(genome, rng):
        return policy.ref_mutate(genome, rng)

    def repair(genome, failure, rng):
        return policy.ref_repair(genome, failure, rng)

    for i, (phase, e, rnd) in enumerate(schedule):
        if rnd < state["next_round"]:
            continue
        if phase == "eval" and state["eval_balances"] is None:
            state["eval_balances"] = economy.ledger.balances()
        training = phase == "train"
        policy.episode = rnd
        summary = summary_cls()
        end = RefEpisodeEnd()
        evo = random.Random(f"{cfg.seed}:evo:{e}")
        bankrupts = []
        emitted = [0, 0]  # deaths, births already written
        taken: list[str] = []
        trials = ref.max_trials_per_episode if training else 1
        for trial in range(trials):
            snapshot = economy.balances()
            env, info = tasks.make(phase, e)
            context = {"task": str(info.get("question", "")), "answer": str(info.get("answer", ""))}
            if cfg.detail == "steps":
                if trial == 0:  # one per episode (the tables join it to the episode's end)
                    rec.emit(ev.EpisodeStart(episode=e, task=task_payload(info)), round=rnd, phase=phase)
            else:
                info = {k: v for k, v in info.items() if k in ("n_blocks", "item_id")}

            def emit(kind, step, agent, payload, _rnd=rnd, _phase=phase, _sum=summary):
                _sum.add(kind, agent, payload)
                if cfg.detail == "steps":
                    rec.emit(engine_payload(kind, step, payload), round=_rnd, phase=_phase, agent=agent)

            def act(a, obs, _rnd=rnd, _taken=taken):
                out = policy.act(a.genome, obs, agent=a.agent_id, episode=_rnd, step=len(_taken))
                _taken.append(a.agent_id)
                return out

            def wakes(a, obs, _taken=taken):
                return policy.wakes(a.genome, obs, agent=a.agent_id, step=len(_taken))

            rng = random.Random(f"{cfg.seed}:auction:{phase}:{e}:{trial}")
            res = play_reference_episode(economy, env, wakes=wakes, act=act, training=training, rng=rng, emit=emit,
                                         action_to_json=action_payload, action_text=_text,
                                         first_step=len(taken))
            if hasattr(env, "close"):
                env.close()
            if not training:
                break
            if res.score is None or res.score < 1.0:  # HayekMAS._record_recent_failures
                for a in economy.living():
                    a.failure = {"trace": failure_trace(res.texts, a.agent_id), **context}
            removed = economy.remove_bankrupt(e, "bankruptcy", repair, evo, end)
            _flush(rec, economy, policy, end, emitted, rnd, genome_payload)
            if not removed:
                break
            bankrupts += removed
            for tr in economy.restore(snapshot):
                p = {"payer": tr.src, "payee": tr.dst, "amount": tr.amount, "reason": tr.reason}
                emit("payment", -1, tr.dst if tr.src == "bank" else tr.src, p)
        if training:
            tasks.record(res.solved)
        rec.emit(ev.EpisodeEnd(episode=e, solved=res.solved, steps=len(res.path),
                               reward=res.step_rewards + res.path_rewards, end=res.end,
                               task=task_payload(info) if cfg.detail == "episodes" else None), round=rnd, phase=phase)
        rec.emit(ev.EpisodeAgents(agents=summary.records()), round=rnd, phase=phase)
        if training:
            economy.end_episode(e, bankrupts, evo, mutate, repair, out=end)
            if end.rent:
                rec.emit(ev.Rent(amount=end.rent[0].amount, agents=[tr.src for tr in end.rent],
                                 total=sum(tr.amount for tr in end.rent)), round=rnd, phase="train")
            _flush(rec, economy, policy, end, emitted, rnd, genome_payload)
        close_episode(cfg, economy, rec, tasks, state, schedule, i, e, rnd, phase, snapshot=_snapshot)


def _text(action) -> str:
    d = action.to_json() if hasattr(action, "to_json") else {}
    return str(d.get("text") or "") + (f" [answer: {d['answer']}]" if d.get("answer") else "")


def _flush(rec, economy, policy, end: RefEpisodeEnd, emitted: list[int], rnd: int, genome_payload) -> None:
    """Write the deaths and births of ``end`` not yet written (deaths first)."""
    for d in end.deaths[emitted[0]:]:
        d = dict(d)
        agent = d.pop("agent")
        rec.emit(ev.Death(**d), round=rnd, phase="train", agent=agent)
    emitted[0] = len(end.deaths)
    for b in end.births[emitted[1]:]:
        _birth_event(rec, economy, policy, b, rnd, genome_payload)
    emitted[1] = len(end.births)


def _snapshot(economy: ReferenceEconomy, rec, rnd: int, phase: str) -> None:
    bal = economy.ledger.balances()
    rec.emit(ev.Population(
        agents=[ev.AgentWealth(agent=a.agent_id, wealth=bal[a.agent_id], bid=a.bid, novice=a.novice)
                for a in economy.living()],
        bank=bal["bank"], rent_sink=bal["rent_sink"], total=economy.ledger.total(),
    ), round=rnd, phase=phase)


def close_episode(cfg, economy, rec, tasks, state: dict, schedule: list, i: int, e: int, rnd: int,
                   phase: str, snapshot) -> None:
    """The end of every episode, for both engines (``snapshot(economy, rec, rnd, phase)``:
    the engine's population snapshot): a population snapshot every
    ``snapshot_every`` episodes and at the last of a phase, the check that a frozen
    evaluation left every balance as it was, then the commit (with the checkpoint
    ``state``) that makes the episode durable.

    Raises:
        RuntimeError: the frozen evaluation changed wealth.
    """
    count = cfg.episodes if phase == "train" else cfg.eval_episodes
    if e % cfg.snapshot_every == 0 or e == count - 1:
        snapshot(economy, rec, rnd, phase)
    last = i == len(schedule) - 1 or schedule[i + 1][0] != phase
    if phase == "eval" and last and economy.ledger.balances() != state["eval_balances"]:
        raise RuntimeError("frozen evaluation changed wealth")
    state["tasks"] = tasks.state()
    state["next_round"] = rnd + 1
    rec.commit_round(rnd, state=state)
