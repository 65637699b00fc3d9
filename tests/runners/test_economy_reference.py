"""The ``eom-reference`` preset against the authors' code (github.com/zhentingqi/EoM,
package ``hayekmas``, commit d608a28). Each test's docstring says what the reference
does and where (file and function); the test checks our preset does the same.
Money: 1000 credits per reference unit (``reference.CREDITS_PER_UNIT``)."""

from __future__ import annotations

import importlib.util
import json
import random

import polars as pl
import pytest

from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner.play import run_economy
from scarce_lab.environments.economy.world import BANK, EpisodeEnd, StepResult
from scarce_lab.environments.economy.world.reference import (
    PRESETS,
    ReferenceConfig,
    ReferenceEconomy,
    credits,
    failure_trace,
    play_reference_episode,
)


def _eco(**cfg) -> ReferenceEconomy:
    """Genomes are (role, tags) tuples."""
    return ReferenceEconomy(ReferenceConfig(**cfg), role_of=lambda g: g[0], tags_of=lambda g: g[1])


def _add(eco, role="r", tags=(), wealth=None, origin="founder"):
    rec, _ = eco.add_agent((role, tags), episode=0, origin=origin)
    if wealth is not None:
        eco.grant(rec.agent_id, wealth - eco.wealth(rec.agent_id), "test")
    return rec.agent_id


class _Task:
    """``n`` steps; step ``end_at`` (if any) ends it with ``score``."""

    def __init__(self, max_steps=10, end_at=None, score=None, solved=False):
        self.max_steps, self.end_at, self.score, self.solved, self.i = max_steps, end_at, score, solved, 0

    def observe(self):
        return self.i

    def step_kind(self, obs):
        return "any"

    def apply(self, action):
        self.i += 1
        if self.end_at is not None and self.i == self.end_at:
            return StepResult(0, True, self.solved, {"score": self.score})
        return StepResult(0, False, False)


def _play(eco, task, *, wakes=lambda a, o: True, training=True, seed=0):
    events = []
    res = play_reference_episode(eco, task, wakes=wakes, act=lambda a, o: f"{a.agent_id} acts", training=training,
                                 rng=random.Random(seed), emit=lambda *e: events.append(e))
    return res, events


# -- rewards -------------------------------------------------------------------------------
def test_path_reward_goes_to_every_action_on_the_path_centred():
    """hayekmas/base/mas.py ``HayekMAS._apply_path_rewards`` with config.py
    ``RewardConfig.path_reward_per_agent``/``reward_signal``: at episode end every entry of
    the realised path (an agent acting twice is paid twice) gets
    ``path_reward_scale * (2*score - 1) * env_reward_scale / path_length`` (centred), so a
    failed episode (score 0) costs every action on it."""
    eco = _eco(max_steps_per_episode=4, no_repeat_role=False, terminal_enabled=False, base_bid=0,
               novice_bid_epsilon=0)
    a, b = _add(eco, "x"), _add(eco, "y")
    path = [(0, a), (1, b), (2, a), (3, a)]
    before = {x: eco.wealth(x) for x in (a, b)}
    trs = eco.path_rewards(path, 0.0)  # failed: signal -1
    assert [t.amount for _, t in trs] == [250] * 4 and all(t.dst == BANK for _, t in trs)
    assert eco.wealth(a) - before[a] == -750 and eco.wealth(b) - before[b] == -250
    eco.path_rewards(path, 1.0)
    assert eco.wealth(a) == before[a] and eco.wealth(b) == before[b]
    assert eco.path_rewards(path, None)[0][1].dst == BANK  # missing score = missing_terminal_score 0
    assert eco.ledger.total() == 0


def test_path_reward_per_unique_author_and_uncentred():
    """config.py ``RewardConfig`` (``path_reward_per_unique_author``, used by the cloudcast
    train.json): the path reward is split over unique authors, each paid once; with
    ``center_env_reward`` false the signal is ``env_reward_scale * score``."""
    eco = _eco(path_reward_per_unique_author=True, center_env_reward=False, env_reward_scale=2.0,
               path_reward_scale=2.0)
    a, b = _add(eco), _add(eco)
    trs = eco.path_rewards([(0, a), (1, a), (2, b)], 0.5)
    assert [(t.dst, t.amount) for _, t in trs] == [(a, credits(2.0 * 2.0 * 0.5 / 2)), (b, 1000)]


def test_task_bonus_and_step_reward_split_over_the_last_winners():
    """adapters/researchworld/env.py ``ResearchEnv._handle_final_answer`` returns
    ``terminal_output_bonus(score)`` = ``terminal_output_bonus_scale * reward_signal(score)``
    as the step reward of the final answer; mas.py ``_run_auction_action_loop`` pays a
    step reward to the winner, or with ``step_reward_split_chain`` in equal shares to the
    unique agents among the last ``step_reward_chain_window`` winners."""
    eco = _eco(reward_scheme="path_reward_and_stepwise_reward", terminal_output_bonus_scale=0.5,
               path_reward_scale=0.0, no_repeat_role=False, terminal_enabled=False, base_bid=0,
               novice_bid_epsilon=0)
    a = _add(eco)
    res, ev = _play(eco, _Task(end_at=2, score=1.0, solved=True))
    assert res.step_rewards == 500 and res.path_rewards == 0 and eco.wealth(a) == 500 + 500
    res, ev = _play(eco, _Task(end_at=1, score=0.0))
    assert res.step_rewards == -500  # centred: a wrong final answer costs its author
    eco2 = _eco(reward_scheme="path_reward_and_stepwise_reward", step_reward_split_chain=True,
                step_reward_chain_window=3, path_reward_scale=0.0)
    x, y = _add(eco2), _add(eco2)
    trs = eco2.step_reward(x, [x, y, x], 0.5)
    assert sorted((t.dst, t.amount) for t in trs) == sorted([(x, 250), (y, 250)])


# -- bids, auction, payments ------------------------------------------------------------
def test_fixed_scheme_resets_veterans_to_one_base_bid():
    """mas.py ``_run_auction_action_loop``, bid scheme ``fixed``: every joining novice bids
    ``base_bid + novice_bid_epsilon`` and becomes a veteran at once; every veteran is
    reset to ``base_bid``; the highest bid wins, ties by ``random.choice``."""
    eco = _eco(bid_scheme="fixed", base_bid=100, novice_bid_epsilon=10)
    a, b = _add(eco), _add(eco)
    eco.agents[a].novice = False
    eco.agents[a].bid = 999
    res = eco.auction([a, b], random.Random(0), training=True)
    assert res.bids == {a: 100, b: 110} and res.winner == b
    assert not eco.agents[b].novice
    res = eco.auction([a, b], random.Random(0), training=True)  # both veterans now: one base bid
    assert res.bids == {a: 100, b: 100} and res.tie
    winners = {eco.auction([a, b], random.Random(s), training=True).winner for s in range(20)}
    assert winners == {a, b}  # ties broken at random


def test_fixed_with_eps_keeps_the_novice_premium_for_life_and_founders_start_as_novices():
    """mas.py bid scheme ``fixed_with_eps``: a novice bids the highest veteran bid among
    the joining agents (``base_bid`` when there is none) plus epsilon, becomes a veteran,
    and its bid never changes again; base/agent.py ``BaseAgent.initialize`` makes every
    agent a novice, founders included."""
    eco = _eco(bid_scheme="fixed_with_eps", base_bid=50, novice_bid_epsilon=5)
    a, b = _add(eco), _add(eco)
    assert eco.agents[a].novice and eco.agents[b].novice  # founders are novices
    res = eco.auction([a, b], random.Random(1), training=True)
    assert res.bids == {a: 55, b: 55}  # no veteran: base_bid + eps
    c = _add(eco, origin="child")
    res = eco.auction([a, b, c], random.Random(1), training=True)
    assert res.bids == {a: 55, b: 55, c: 60} and res.winner == c
    for _ in range(3):
        assert eco.auction([a, b, c], random.Random(1), training=True).bids[c] == 60  # kept for life


def test_bucket_brigade_first_payment_leaves_the_agents_and_eval_moves_no_money():
    """mas.py ``_run_auction_action_loop``: in training the winner pays its bid to the
    previous winner; the first winner pays to nobody ("void"; here the bank). In
    evaluation no money moves and bids stay as they are."""
    eco = _eco(bid_scheme="fixed", base_bid=100, novice_bid_epsilon=0, no_repeat_role=False,
               terminal_enabled=False, path_reward_scale=0.0)
    a = _add(eco)
    res, ev = _play(eco, _Task(max_steps=3))
    pays = [e[3] for e in ev if e[0] == "payment"]
    assert pays[0]["payee"] == BANK and all(p["payee"] == a for p in pays[1:])
    before = eco.ledger.balances()
    _play(eco, _Task(max_steps=3), training=False)
    assert eco.ledger.balances() == before


# -- joining ------------------------------------------------------------------------------
def test_terminal_mode_admits_only_terminal_agents_and_bypasses_wakeup():
    """mas.py ``_is_terminal_mode_step`` and ``_restrict_agents_for_terminal_mode``: in
    the last ``start_on_step_from_end`` steps the wake-up check is skipped and only
    agents with a tag in ``candidate_agent_tags`` (``terminal``) join."""
    eco = _eco(max_steps_per_episode=4, start_on_step_from_end=2, no_repeat_role=False)
    w, t = _add(eco, "worker"), _add(eco, "answer", ("terminal",))
    assert eco.joining(0, None, lambda a: a.role == "worker") == [w]
    assert eco.joining(2, None, lambda a: False) == [t] and eco.joining(3, None, lambda a: False) == [t]


def test_the_role_that_acted_last_does_not_join():
    """adapters/researchworld/agent.py ``ResearchAgent.match_wakeup_condition``: an agent
    whose role equals the environment's last role does not wake up (same role never acts
    twice in a row); otherwise the model is asked (``\\boxed{yes}``)."""
    eco = _eco(no_repeat_role=True, terminal_enabled=False)
    _, b = _add(eco, "plan"), _add(eco, "compute")
    assert eco.joining(0, "plan", lambda x: True) == [b]
    res, _ = _play(eco, _Task(max_steps=4))
    roles = [eco.agents[x].role for _, x in res.path]
    assert len(roles) == 4 and all(r1 != r2 for r1, r2 in zip(roles, roles[1:], strict=False))


def test_llm_wakeup_asks_for_boxed_yes():
    """researchworld ``match_wakeup_condition``: the model gets the agent's system prompt
    and the state (base/prompts.py ``WAKEUP_PROMPT``) and the agent wakes when
    ``boxed{yes}`` is in its lower-cased reply."""
    from scarce_lab.environments.economy.agents.llm import (
        LLMPartialPolicy,
        render_wakeup,
        wakeup_answer,
    )
    from scarce_lab.environments.economy.agents.partial import PartialGenome, default_instruction
    from scarce_lab.environments.economy.world.qa import QAObs
    from scarce_lab.llm import LLMClient, LLMSettings

    assert wakeup_answer("I should act. \\boxed{YES}") and not wakeup_answer("\\boxed{no}")
    assert not wakeup_answer("yes")
    g = PartialGenome("check", default_instruction("check"), ("after_compute",))
    msgs = render_wakeup(g, QAObs("What is 2 + 2?", (("compute", "2 + 2 = 4"),), 1))
    assert "\\boxed{yes}" in msgs[0]["content"] and "2 + 2 = 4" in msgs[0]["content"]
    assert g.instruction in msgs[0]["content"]
    calls = []
    pol = LLMPartialPolicy("openai/gpt-4o-mini", LLMClient(LLMSettings(cache=False)), seed=0,
                           record_calls=calls.extend, mock_response="Nothing to check yet. \\boxed{no}")
    assert pol.wakes(g, QAObs("q", (), 0), agent="a0", step=0) is False
    assert calls[0].purpose == "wakeup" and not calls[0].fallback_used
    pol.kwargs["mock_response"] = "I am a helpful assistant."  # neither yes nor no: no, as a fallback
    assert pol.wakes(g, QAObs("q", (), 0), agent="a0", step=1) is False and calls[1].fallback_used


# -- births and deaths --------------------------------------------------------------------
def _end(eco, e, bankrupts=(), **kw):
    muts, reps = [], []

    def mutate(g, rng):
        muts.append(g)
        return g

    def repair(g, failure, rng):
        reps.append((g, failure))
        return g

    out = eco.end_episode(e, list(bankrupts), random.Random(0), mutate, repair, **kw)
    return out, muts, reps


def test_periodic_births_mutate_the_richest_or_repair_the_poorest():
    """mas.py ``_train_forward`` / ``_periodic_births``: every ``birth_interval`` episodes
    (counted from 1), ``num_births_per_interval`` births, each a mutation of the single
    richest agent with probability ``periodical_good_p``, else a repair of the poorest;
    no wealth threshold; ``max_num_agents`` caps them."""
    eco = _eco(birth_interval=3, num_births_per_interval=2, periodical_good_p=1.0, max_num_agents=5)
    rich, poor = _add(eco, wealth=900), _add(eco, wealth=10)
    out, muts, reps = _end(eco, 1)  # episode 2 (1-based): not due
    assert out.births == []
    out, muts, reps = _end(eco, 2)
    assert [(b["origin"], b["parent"]) for b in out.births] == [("child", rich), ("child", rich)]
    eco2 = _eco(birth_interval=1, num_births_per_interval=1, periodical_good_p=0.0)
    rich, poor = _add(eco2, wealth=900), _add(eco2, wealth=10)
    out, _, reps = _end(eco2, 0)
    assert [(b["origin"], b["parent"]) for b in out.births] == [("replacement", poor)]
    out, _, _ = _end(eco, 5)  # 4 living, cap 5: one birth only
    assert len(out.births) == 1 and len(eco.agents) == 5


def test_bankruptcy_births_p_a_mutation_p_b_repair_else_none():
    """mas.py ``_resolve_bankruptcy_births``: for each agent removed in the episode, draw u:
    u < p_a -> a mutation of the richest; u < p_a + p_b -> a repair of the removed agent
    itself; else no birth (shipped configs: 0.334/0.334, cloudcast 0.4/0.4)."""
    for p_a, p_b, want in ((1.0, 0.0, "child"), (0.0, 1.0, "replacement"), (0.0, 0.0, None)):
        eco = _eco(p_a=p_a, p_b=p_b, birth_interval=0)
        rich = _add(eco, wealth=900)
        dead = _add(eco, wealth=-5)
        out = EpisodeEnd()
        removed = eco.remove_bankrupt(0, "bankruptcy", lambda g, f, r: g, random.Random(0), out)
        assert [d["agent"] for d in out.deaths] == [dead]
        end, _, _ = _end(eco, 0, removed)
        got = [(b["origin"], b["parent"]) for b in end.births]
        assert got == ([] if want is None else [(want, rich if want == "child" else dead)])
    with pytest.raises(ValueError, match="p_a \\+ p_b"):
        ReferenceConfig(p_a=0.6, p_b=0.6)


def test_children_get_new_money_not_an_endowment():
    """mas.py ``_add_born_agent``: a newborn is initialised with ``initial_wealth`` (new
    money); the parent pays nothing."""
    eco = _eco(birth_interval=1, num_births_per_interval=1, periodical_good_p=1.0, initial_wealth=700)
    parent = _add(eco, wealth=900)
    out, _, _ = _end(eco, 0)
    assert out.births[0]["funder"] == BANK and out.births[0]["endowment"] == 700
    assert eco.wealth(parent) == 900 and eco.agents[out.births[0]["agent"]].novice


def test_min_num_agents_tops_the_population_up_by_mutation():
    """mas.py end of ``_train_forward``: while the population is below ``min_num_agents``,
    good births (mutations of the richest agent), at most one per initial agent."""
    eco = _eco(min_num_agents=4, birth_interval=0)
    a = _add(eco, wealth=900)
    _add(eco, wealth=100)
    out, muts, _ = _end(eco, 0)
    assert len(eco.agents) == 2 + 2 and [b["parent"] for b in out.births] == [a, a]


def test_every_founding_role_is_kept_present():
    """mas.py ``_ensure_necessary_roles_exist``: after bankrupt agents are removed, each
    role of the initial agents that has no living member is restored by a repair of a
    removed agent of that role."""
    eco = _eco()
    _add(eco, "plan", wealth=100)
    ans = _add(eco, "answer", wealth=-1)
    out = EpisodeEnd()
    failures = []
    eco.agents[ans].failure = {"trace": "t", "task": "q", "answer": "4"}
    eco.remove_bankrupt(0, "bankruptcy", lambda g, f, r: failures.append(f) or g, random.Random(0), out)
    assert [d["agent"] for d in out.deaths] == [ans]
    assert [(b["origin"], b["parent"]) for b in out.births] == [("replacement", ans)]
    assert {a.role for a in eco.living()} == {"plan", "answer"} and failures == [{"trace": "t", "task": "q",
                                                                                   "answer": "4"}]


def test_repair_prompt_gets_the_failed_trajectory_the_task_and_the_answer():
    """mas.py ``birth_bad_agent`` passes the task description, the correct answer and the
    failure trace (``_build_agent_failure_trace``: the episode's turns, the agent's own
    marked ``>>>``) to the repair prompt (base/prompts.py ``BAD_AGENT_BIRTH_PROMPT``); the
    mutation prompt (``GOOD_AGENT_BIRTH_PROMPT``) adds a general reasoning skill to the
    trainable part and shows the frozen part as immutable; researchworld
    ``birth_good_agent`` keeps the parent's frozen prompt."""
    from scarce_lab.environments.economy.agents.llm import (
        LLMPartialPolicy,
        frozen_prompt,
        render_reference_rewrite,
    )
    from scarce_lab.environments.economy.agents.partial import PartialGenome, default_instruction
    from scarce_lab.llm import LLMClient, LLMSettings

    trace = failure_trace([(0, "a0", "plan: add"), (1, "a1", "answer 5")], "a1")
    assert trace.splitlines()[0].startswith("    [Step 0] [a0]") and ">>> [Step 1] [a1] answer 5" in trace
    g = PartialGenome("answer", default_instruction("answer"), ("after_compute",))
    rep = render_reference_rewrite(g, {"trace": trace, "task": "What is 2 + 2?", "answer": "4"})[0]["content"]
    assert "What is 2 + 2?" in rep and "The correct answer: 4" in rep and ">>> [Step 1]" in rep
    assert frozen_prompt(g) in rep and g.instruction in rep
    mut = render_reference_rewrite(g)[0]["content"]
    assert "reasoning skill" in mut and frozen_prompt(g) in mut and "correct answer" not in mut
    calls = []
    pol = LLMPartialPolicy("openai/gpt-4o-mini", LLMClient(LLMSettings(cache=False)), seed=0,
                           record_calls=calls.extend, mock_response="Check the last sum before answering.")
    child = pol.ref_mutate(g, random.Random(0))
    assert child.instruction == "Check the last sum before answering." and child.wake_on == g.wake_on
    assert frozen_prompt(child) == frozen_prompt(g)  # the frozen part is kept
    fixed = pol.ref_repair(g, {"trace": trace, "task": "q", "answer": "4"}, random.Random(0))
    assert fixed.capability == "answer" and [c.purpose for c in calls] == ["mutation", "repair"]


# -- whole runs ---------------------------------------------------------------------------
def _events(run_dir):
    return [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]


def test_replay_after_bankruptcy_restores_survivors_up_to_max_trials(tmp_path):
    """mas.py ``_train_forward``: after a trial with bankruptcies the bankrupt are removed,
    the survivors' wealth is restored to the snapshot taken before the trial (bids and
    status kept), and the same instance is replayed, at most ``max_trials_per_episode``
    trials in all."""
    cfg = EconomyRunConfig(task="arithmetic", model="scripted/partial", preset="eom-reference:research",
                           episodes=6, eval_episodes=0, seed=3,
                           reference={"initial_wealth": 150, "base_bid": 300, "max_trials_per_episode": 3,
                                      "path_reward_scale": 0.0, "terminal_output_bonus_scale": 0.0})
    ev = _events(run_economy(cfg, tmp_path))
    restored = {e["round"] for e in ev if e["kind"] == "payment" and e["payload"]["reason"] == "replay_restore"}
    for r in restored:  # a replayed episode: more steps recorded than the accepted trial took, none twice
        steps = [e["payload"]["step"] for e in ev if e["kind"] == "step" and e["round"] == r]
        end = next(e["payload"] for e in ev if e["kind"] == "episode_end" and e["round"] == r)
        assert len(steps) > end["steps"] and len(set(steps)) == len(steps) and steps == sorted(steps)
        assert len(steps) <= 3 * cfg.reference.max_steps_per_episode
    assert [e["round"] for e in ev if e["kind"] == "episode_start"] == list(range(6))
    restores = [e for e in ev if e["kind"] == "payment" and e["payload"]["reason"] == "replay_restore"]
    deaths = [e for e in ev if e["kind"] == "death"]
    assert restores and deaths
    assert all(p["payload"]["total"] == 0 for p in ev if p["kind"] == "population")
    eco = _eco()
    a, b = _add(eco, "x", wealth=100), _add(eco, "y", wealth=200)
    eco.agents[b].novice, eco.agents[b].bid = False, 77
    snap = eco.balances()
    eco.grant(a, -300, "test")
    eco.grant(b, 50, "test")
    out = EpisodeEnd()
    eco.remove_bankrupt(0, "bankruptcy", lambda g, f, r: g, random.Random(0), out)
    eco.restore(snap)
    assert eco.wealth(b) == 200 and (eco.agents[b].bid, eco.agents[b].novice) == (77, False)
    assert eco.ledger.total() == 0


def test_preset_values_are_the_shipped_configs_and_given_values_win():
    """global_configs/train_research.json (engine: steps 10, trials 2, births 3/2, agents 2..20,
    fixed bids 0.1 + 0.1, wealth 0.5, rent 0.2 every 3; evolution 0.334/0.334/0.5),
    adapters/cloudcast/configs/train.json (22 steps, fixed_with_eps, eps 0.005, base 0.05,
    wealth 0.7, rent 0.02 every episode, p 0.4/0.4/0.6, unique-author path rewards,
    terminal mode in the last 2 steps), global_configs/train_arch_dse_world.json."""
    r = EconomyRunConfig(task="arithmetic", preset="eom-reference:research")
    assert (r.agents, r.reference.max_steps_per_episode, r.reference.max_trials_per_episode) == (5, 10, 2)
    assert (r.reference.base_bid, r.reference.novice_bid_epsilon, r.reference.initial_wealth) == (100, 100, 500)
    assert (r.reference.rent, r.reference.rent_interval, r.reference.p_a, r.reference.p_b) == (200, 3, 0.334, 0.334)
    c = EconomyRunConfig(task="arithmetic", preset="eom-reference:cloudcast", agents=4)
    assert c.agents == 4 and c.reference.bid_scheme == "fixed_with_eps" and c.reference.novice_bid_epsilon == 5
    assert c.reference.path_reward_per_unique_author and c.reference.start_on_step_from_end == 2
    assert (c.reference.p_a, c.reference.periodical_good_p, c.reference.max_steps_per_episode) == (0.4, 0.6, 22)
    bare = EconomyRunConfig(task="arithmetic", preset="eom-reference")
    assert bare.reference == ReferenceConfig() and bare.reference.p_b == 1.0  # the dataclass defaults
    assert not bare.reference.no_repeat_role and r.reference.no_repeat_role  # the research adapter's rule
    assert set(PRESETS) == {"eom-reference", "eom-reference:research", "eom-reference:cloudcast",
                            "eom-reference:arch_dse"}
    given = EconomyRunConfig(task="arithmetic", preset="eom-reference:research", reference={"rent": 7})
    assert given.reference.rent == 7 and given.reference.base_bid == 100
    assert "rent=7" in given.condition_label() and "base_bid" not in given.condition_label()
    for bad, match in (({"reference": {"rent": 1}}, "only with an eom-reference preset"),
                       ({"preset": "eom-reference", "economy": {"rent": 1}}, "economy"),
                       ({"preset": "eom-reference", "baseline": "full"}, "baseline"),
                       ({"task": "arithmetic", "sandbox": "docker"}, "task directories")):
        with pytest.raises(ValueError, match=match):
            EconomyRunConfig(**bad)


def test_cli_runs_the_research_preset_with_scripted_partial_agents(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    out = tmp_path / "ds"
    res = CliRunner().invoke(app, ["run", "economy", "--preset", "eom-reference:research", "--task", "arithmetic",
                                   "--model", "scripted/partial", "--episodes", "6", "--eval-episodes", "2",
                                   "--seed", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = list(out.iterdir())
    man = json.loads((run / "manifest.json").read_text())
    assert man["config"]["preset"] == "eom-reference:research" and man["config"]["reference"]["rent"] == 200
    ev = _events(run)
    reasons = {e["payload"]["reason"] for e in ev if e["kind"] == "payment"}
    assert {"bucket_brigade", "path_reward", "step_reward"} <= reasons


def test_dynamics_table_sets_the_default_and_the_preset_side_by_side(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app
    from scarce_lab.data.loaders import load_dataset
    from scarce_lab.environments.economy import tables as T
    from scarce_lab.environments.economy.analysis.compare import dynamics_table

    out = tmp_path / "ds"
    for preset in ("default", "eom-reference:research"):
        for seed in (0, 1):
            run_economy(EconomyRunConfig(task="arithmetic", model="scripted/partial", agents=5, episodes=8,
                                         eval_episodes=2, seed=seed, preset=preset), out)
    ds = load_dataset(out)
    tab = dynamics_table(T.episodes(ds), T.population(ds), T.births(ds), T.deaths(ds))
    assert tab.select("economy", "condition", "n_runs").rows() == [
        ("default", "none", 2), ("eom-reference:research", "none,preset=eom-reference:research", 2)]
    b = T.births(ds).filter(pl.col("origin") != "founder")
    runs = T.runs(ds).select("run_id", "settings")
    for economy in ("default", "eom-reference:research"):
        ids = [r for r, s in runs.rows() if (json.loads(s).get("preset") or "default") == economy]
        per_run = [10.0 * b.filter((pl.col("run_id") == r) & (pl.col("origin") == "child")).height / 8 for r in ids]
        row = tab.filter(pl.col("economy") == economy).row(0, named=True)
        assert len(ids) == 2 and row["children"] == pytest.approx(sum(per_run) / 2)  # mean over runs
    res = CliRunner().invoke(app, ["table", "economy", str(out), "--dynamics", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [r["economy"] for r in doc["table"]] == ["default", "eom-reference:research"]
    assert doc["reading"].startswith("The full economy at the end of training")
    assert "default:" in doc["reading"] and "eom-reference:research:" in doc["reading"]
    import scarce_lab as sl

    found = sl.economy.dynamics(ds)  # the face's finding is the CLI's table
    assert found.frame.equals(tab) and found.frame.equals(sl.table(ds, dynamics=True).frame)


@pytest.mark.slow
def test_llm_agents_run_under_the_preset(tmp_path):
    """The whole LLM path under the research preset (wake-up questions, actions) with a
    mocked model; the economy is checkpointed after each episode (it must hold no model
    client: that failed before)."""
    from scarce_lab.llm import LLMClient, LLMSettings

    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "What is 3 + 4?", "answer": 7}\n{"question": "What is 2 + 5?", "answer": 7}\n')
    cfg = EconomyRunConfig(task=f"jsonl:{path}", model="openai/gpt-4o-mini", preset="eom-reference:research",
                           episodes=4, eval_episodes=1, seed=0)
    kw = {"mock_response": '{"note": "add them \\\\boxed{yes}", "answer": "7"}'}
    run = run_economy(cfg, tmp_path / "a", client=LLMClient(LLMSettings(cache=False)), llm_kwargs=kw)
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    purposes = {c["purpose"] for c in calls}
    assert "wakeup" in purposes and any(p.startswith("act:") for p in purposes)
    ends = [e["payload"] for e in _events(run) if e["kind"] == "episode_end"]
    assert len(ends) == 5 and all(e["solved"] for e in ends)
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"


def test_rule_agents_run_blocksworld_under_the_preset(tmp_path):
    """Blocks World under the bare preset: a rule's role is its move (every founding move
    is kept, ``_ensure_necessary_roles_exist``), every rule is ``terminal``; the task
    pays nothing itself, the path rewards pay (solved: score 1, else the centred cost)."""
    cfg = EconomyRunConfig(task="blocksworld", preset="eom-reference", agents=8, episodes=6, eval_episodes=2,
                           seed=1)
    ev = _events(run_economy(cfg, tmp_path))
    assert all(e["payload"]["reward"] == 0 for e in ev if e["kind"] == "step")
    reasons = {e["payload"]["reason"] for e in ev if e["kind"] == "payment"}
    assert "path_reward" in reasons and "step_reward" not in reasons  # path_reward_only
    ends = [e["payload"] for e in ev if e["kind"] == "episode_end"]
    assert len(ends) == 8 and all(p["payload"]["total"] == 0 for p in ev if p["kind"] == "population")


def test_a_birth_keeps_its_parents_role():
    """hayekmas births are instances of the parent's class (researchworld
    ``birth_good_agent``/``birth_bad_agent``: ``parent.__class__(...)``), so a role never
    changes by birth; an agent layer whose mutation changes it is refused loudly."""
    eco = _eco(birth_interval=1, num_births_per_interval=1, periodical_good_p=1.0)
    _add(eco, "plan", wealth=900)
    with pytest.raises(ValueError, match="must keep a genome's role"):
        eco.end_episode(0, [], random.Random(0), lambda g, r: ("compute", ()), lambda g, f, r: g)


def test_repair_calls_carry_the_task_and_answer_in_a_summary_run(tmp_path):
    """mas.py ``_periodic_births`` -> ``birth_bad_agent`` of the poorest, with the task and
    correct answer of its last failed episode (recorded by ``_record_recent_failures``);
    also when the run records episode summaries only (``detail="episodes"``)."""
    from scarce_lab.llm import LLMClient, LLMSettings

    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "What is 3 + 4?", "answer": 7}\n{"question": "What is 2 + 5?", "answer": 7}\n')
    cfg = EconomyRunConfig(task=f"jsonl:{path}", model="openai/gpt-4o-mini", preset="eom-reference:research",
                           episodes=2, eval_episodes=0, seed=0, detail="episodes",
                           reference={"birth_interval": 1, "num_births_per_interval": 1, "periodical_good_p": 0.0})
    kw = {"mock_response": '{"note": "guess \\\\boxed{yes}", "answer": "8"}'}  # always wrong
    run = run_economy(cfg, tmp_path / "a", client=LLMClient(LLMSettings(cache=False)), llm_kwargs=kw)
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    repairs = [c for c in calls if c["purpose"] == "repair"]
    assert repairs
    text = json.dumps(repairs[0])
    assert "The correct answer: 7" in text and "What is" in text and ">>>" in text


@pytest.mark.parametrize("task", ["arithmetic", "dir"])
def test_a_preset_run_killed_mid_run_resumes_to_the_same_trajectory(tmp_path, monkeypatch, task):
    """An interrupted run resumes from its last committed episode (the reference economy,
    its founding roles and, for a task directory, the carried program are checkpointed)."""
    from pathlib import Path

    from scarce_lab.environments.economy.runner import play as R

    if task == "dir":
        from scarce_lab.sandbox.local import detect_capabilities

        caps = detect_capabilities()
        if caps.mode != "bwrap":
            pytest.skip(f"bubblewrap sandbox unavailable: {caps.reason}")
        task = f"dir:{Path(__file__).parents[1] / 'taskdirs' / 'tiny-target'}"
        cfg = EconomyRunConfig(task=task, preset="eom-reference:cloudcast", model="scripted/partial", episodes=5,
                               eval_episodes=1, seed=2, reference={"max_steps_per_episode": 5})
    else:
        cfg = EconomyRunConfig(task=task, preset="eom-reference:research", model="scripted/partial", episodes=8,
                               eval_episodes=2, seed=2, reference={"birth_interval": 1})
    full = R.run_economy(cfg, tmp_path / "full")
    real = R.make_policy
    n = {"calls": 0}

    class Killed(BaseException):
        pass

    def make_policy(*a, **k):
        policy = real(*a, **k)
        act = policy.act

        def dying(*args, **kw):
            n["calls"] += 1
            if n["calls"] == 12:
                raise Killed
            return act(*args, **kw)

        policy.act = dying
        return policy

    monkeypatch.setattr(R, "make_policy", make_policy)
    with pytest.raises(Killed):
        R.run_economy(cfg, tmp_path / "broken")
    monkeypatch.setattr(R, "make_policy", real)
    R.run_economy(cfg, tmp_path / "broken", resume=True)
    broken = tmp_path / "broken" / full.name

    def strip(run):
        return [{k: v for k, v in e.items() if k not in ("t",)} for e in _events(run)]

    assert strip(broken) == strip(full)


@pytest.mark.embedded
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_embedded_model_runs_the_research_preset(tmp_path):
    """The research preset with the embedded model: every wake-up question is a recorded
    call, the run completes whatever the model answers."""
    cfg = EconomyRunConfig(task="arithmetic", model="embedded/smollm2", preset="eom-reference:research", agents=2,
                           episodes=1, eval_episodes=0, seed=0, reference={"max_steps_per_episode": 2})
    run = run_economy(cfg, tmp_path)
    calls = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert calls and {c["purpose"] for c in calls} <= {"wakeup", "act:plan", "act:compute", "mutation", "repair"}
    assert sum(c["purpose"] == "wakeup" for c in calls) >= 1
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
