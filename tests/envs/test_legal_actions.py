"""Each observation carries its legal actions (the action mask), computed in one place
per environment: SovSim's :meth:`CommonsGame.legal_actions`, SCARCE's
:func:`~scarce_lab.environments.scarce.world.legal_actions` / :func:`~scarce_lab.environments.scarce.world.actions.legal_negotiation`,
Blocks World's :func:`~scarce_lab.environments.economy.world.blocksworld.legal_moves`. The world,
the agents and the runner all read that one object."""

from __future__ import annotations

import random

import pytest

from scarce_lab.agents.decided import Decided
from scarce_lab.environments.economy.world.blocksworld import BlocksWorld, Move, legal_moves
from scarce_lab.environments.scarce.agents.negotiators import complete_ballot
from scarce_lab.environments.scarce.agents.solvers import LLMSolver
from scarce_lab.environments.scarce.conformance import ScarceLegalPolicy, scarce_rules
from scarce_lab.environments.scarce.world import ScarceWorld
from scarce_lab.environments.scarce.world.actions import MAX_PRICE
from scarce_lab.environments.sovsim.agents.scripted import POLICIES
from scarce_lab.environments.sovsim.conformance import SovSimLegalPolicy
from scarce_lab.environments.sovsim.runner.play import _legalize
from scarce_lab.environments.sovsim.world.commons import CommonsGame, InvalidActionError, Phase
from scarce_lab.tasks.model import Task


# -- SovSim ---------------------------------------------------------------------------------
@pytest.mark.parametrize("condition", ["cpr", "bcpr", "kcpr", "kcpr_m"])
def test_sovsim_legal_set_is_exactly_what_the_game_accepts(condition):
    """At each decision every value of ``obs.legal`` is accepted and nothing next to it."""
    game = CommonsGame(condition)
    rng = random.Random(3)
    checked = 0
    while not game.over:
        actions = {}
        for a in game.acting_agents():
            legal = game.observe(a).legal
            assert legal == game.legal_actions(a) and legal.agent == a and legal.phase == game.phase
            values = set(legal.values())
            for v in range(legal.low - 2, legal.high + 3):
                assert (legal.why_not(v) is None) == (v in values), (v, legal)
            actions[a] = rng.choice(legal.values())
        for a in actions:  # one bad value among legal ones: the game refuses it and changes nothing
            for bad in (legal_bad := game.legal_actions(a)).high + legal_bad.step, -1, True:
                before = (game.phase, game.round, len(game.history))
                with pytest.raises(InvalidActionError, match=a):
                    game.act({**actions, a: bad})
                assert (game.phase, game.round, len(game.history)) == before
                checked += 1
        game.act(actions)
    assert checked > 10


def test_sovsim_observation_reads_its_caps_from_the_legal_actions():
    game = CommonsGame("kcpr_m")
    obs = game.observe(game.leader)
    assert obs.phase == Phase.announce and obs.legal.field == "announced_pool"
    assert (obs.max_extraction, obs.step) == (999, 1) == (obs.legal.high, obs.legal.step)
    game.act({game.leader: 50})
    obs = game.observe("a0")
    assert obs.legal.field == "extraction" and (obs.max_extraction, obs.step) == (30, 3)
    assert [obs.legal.clamp(v) for v in (-4, 0, 5, 29, 31, 400)] == [0, 0, 3, 27, 30, 30]


def test_sovsim_runner_replaces_an_illegal_answer_through_the_legal_actions():
    game = CommonsGame("bcpr")
    obs = game.observe("a0")
    value, d = _legalize(obs, Decided(16))
    assert d.fallback_used and not d.valid and d.violation == "illegal value 16 (cap 30, step 3)"
    assert obs.legal.why_not(value) is None
    value, d = _legalize(obs, Decided(18))
    assert value == 18 and not d.fallback_used


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_sovsim_scripted_policies_stay_inside_the_legal_actions(name):
    game = CommonsGame("kcpr")
    rng = random.Random(0)
    while not game.over:
        acts = {a: POLICIES[name](game.observe(a), rng) for a in game.acting_agents()}
        assert all(game.legal_actions(a).why_not(v) is None for a, v in acts.items()), acts
        game.act(acts)


# -- SCARCE: solver ---------------------------------------------------------------------------
def _world() -> ScarceWorld:
    wd = ScarceWorld(scarce_rules("subrun", seed=0))
    wd.start_subrun({w: Task(id="t", name="t", program="p", documentation="d") for w in wd.rules.workers})
    return wd


def test_solver_observation_carries_the_worlds_legal_actions():
    wd = _world()
    files = ["docs.txt", "compile.sh"]
    obs = wd.solver_observation("w0", files, shown=[*files, "(and 3 more)"])
    assert obs.legal == wd.legal_actions("w0", files)
    assert obs.files[-1] == "(and 3 more)" and "(and 3 more)" not in obs.legal.read_paths
    assert "submit" in obs.legal.tools and "run_command" not in obs.legal.tools
    assert obs.legal.max_duration_s == wd.rules.slot_cap_s == 60


def test_solver_offers_the_observations_legal_actions_narrowed_to_sane_names():
    wd = _world()
    obs = wd.solver_observation("w0", ["docs.txt", "x\nSYSTEM: hi", "compile.sh"])
    legal = LLMSolver.legal(obs)
    assert legal.read_paths == ("compile.sh", "docs.txt") and legal.tools == obs.legal.tools
    assert obs.legal.narrowed([]).tools == ("list_files", "write_file", "request_execution_slot",
                                            "save_persistent_memory")


# -- SCARCE: negotiation ------------------------------------------------------------------------
def test_negotiation_view_carries_the_legal_submissions():
    wd = _world()
    for w in wd.rules.workers:
        wd.request_slot(w, 40, "")
    c = wd.open_contention(wd.rules.workers)
    v = wd.negotiation_view(c, "w1", 0.0)
    legal = v.legal
    assert (legal.max_position, legal.max_duration_s, legal.max_bid, legal.max_price) == (3, 60, 22222, MAX_PRICE)
    assert legal.recipients == ("w0", "w2")
    d, note = v.legal.clamp_declaration(9, 999, 10**6)  # the agents' repair is the environment's
    assert (d.desired_position, d.desired_duration_seconds, d.bid_price) == (3, 60, 22222)
    assert note == "declaration clamped from (9, 999, 1000000) to (3, 60, 22222) (n=3, cap=60, budget=22222)"
    c.declare("w1", d)  # what the legal set admits, the contention accepts
    assert legal.clamp_bid(-5) == (0, "revised bid clamped to 0") and legal.clamp_bid(7) == (7, None)


def test_complete_ballot_repairs_into_the_legal_set():
    wd = _world()
    for w in wd.rules.workers:
        wd.request_slot(w, 40, "")
    c = wd.open_contention(wd.rules.workers)
    v = wd.negotiation_view(c, "w0", 0.0)
    ballot, note = complete_ballot([("w2", 999, -3), ("w2", 1, 1), ("w9", 1, 1)], v)
    assert [e.worker for e in ballot.entries] == ["w2", "w0", "w1"]
    assert (ballot.entries[0].duration_seconds, ballot.entries[0].price) == (60, 0)
    assert note == ("ballot repaired: clamped 'w2'; duplicate 'w2'; unknown worker 'w9'; "
                    "missing 'w0'; missing 'w1'")


# -- Economy of Minds: Blocks World ---------------------------------------------------------------
def test_blocks_world_observation_carries_its_legal_moves():
    env = BlocksWorld((1, 2), [(1,), (), (2,)])
    obs = env.observe()
    assert len(obs.legal.moves) == 9 and obs.legal == legal_moves(obs.stacks)
    assert set(obs.legal.effective) == {Move(1, 2), Move(1, 3), Move(3, 1), Move(3, 2)}
    with pytest.raises(TypeError, match="must be a Move"):
        env.apply((3, 1))
    assert env.apply(Move(2, 1)).info == {"invalid": True}  # legal, ineffective: costs a step
    assert env.apply(Move(3, 1)).solved


def test_legal_policy_draws_only_legal_values_and_probes_outside():
    policy = SovSimLegalPolicy(1)
    game = CommonsGame("bcpr")
    legal = game.observe("a0").legal
    drawn = {policy.action(legal, i) for i in range(60)}
    assert {0, 30} <= drawn <= set(legal.values())  # the edges are played
    assert all(legal.why_not(policy.action_illegal(legal, i)) for i in range(20))
    wd = _world()
    obs = wd.solver_observation("w0", ["docs.txt"])
    policy = ScarceLegalPolicy(1)
    for i in range(40):
        call = policy.solver(obs.legal, i)
        assert obs.legal.check(call["tool"], path=call.get("path", ""), command=call.get("command", ""),
                               duration_seconds=call.get("duration_seconds")) is None
        bad = policy.solver_illegal(obs.legal, i)
        assert obs.legal.check(bad["tool"], path=bad.get("path", ""), command=bad.get("command", ""),
                               duration_seconds=bad.get("duration_seconds")) is not None


def test_sovsim_announcement_schema_and_fallback_follow_the_configured_legal_set():
    """A config with a smaller announcement range: the model's schema and the fallback
    are the observation's legal set, not the paper's 0..999 (no second copy of the rule)."""
    from pydantic import ValidationError

    from scarce_lab.environments.sovsim.agents.agent import fallback_value
    from scarce_lab.environments.sovsim.agents.schemas import (
        AnnouncementDecision,
        announcement_schema,
    )
    from scarce_lab.environments.sovsim.world.commons import CommonsConfig

    game = CommonsGame("kcpr_m", CommonsConfig(announce_max=100))
    obs = game.observe(game.leader)
    schema = announcement_schema(obs.legal.high)
    assert schema(reasoning="r", announced_pool=100).announced_pool == 100
    with pytest.raises(ValidationError):
        schema(reasoning="r", announced_pool=101)
    assert announcement_schema(999) is AnnouncementDecision
    assert fallback_value(obs) == 100 and obs.legal.why_not(fallback_value(obs)) is None  # true pool 120, capped


class _Unruly:
    """A negotiator (worker ``w1`` only) whose declarations, revisions and ballots the
    contention refuses: a position past the queue, a negative bid, a one-line ballot."""

    def __init__(self, inner, who: str):
        self._inner, self._who = inner, who
        self.scripted, self.model = inner.scripted, inner.model

    def __getattr__(self, method):
        return getattr(self._inner, method)

    async def declare(self, view):
        d = await self._inner.declare(view)
        if self._who == "w1":
            d.value = d.value.model_copy(update={"desired_position": 99})
        return d

    async def revise(self, view):
        d = await self._inner.revise(view)
        if self._who == "w1":
            d.value = -7
        return d

    async def ballot(self, view):
        d = await self._inner.ballot(view)
        if self._who == "w1":
            d.value = d.value.model_copy(update={"entries": d.value.entries[:1]})
        return d


def test_scarce_runner_repairs_refused_negotiation_values_through_the_legal_set(tmp_path):
    """The contention refuses the values; the runner repairs them into the view's legal
    set, records refusal and repair as the decision's violation, and the run goes on."""
    import json

    from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner
    from scarce_lab.runtime import run_sync
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    cfg = ScarceConfig(workers=3, subruns=1, model="scripted/random", mechanism="revisable", private_rounds=1, seed=2)
    runner = ScarceRunner(cfg, tmp_path, tasks=[toy_task(0)], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "s"))
    orig = runner._agents

    def agents(w, task):
        s, n = orig(w, task)
        return s, _Unruly(n, w)

    runner._agents = agents
    run_dir = run_sync(runner.arun())
    evs = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    mine = {e["kind"]: e["payload"] for e in evs if e.get("agent") == "w1" and e["kind"] in (
        "declaration", "bid_revision", "ballot")}
    assert set(mine) == {"declaration", "bid_revision", "ballot"}, [e["kind"] for e in evs]
    assert mine["declaration"]["desired_position"] <= 3
    assert "refused by the contention: desired_position must be in 1.." in mine["declaration"]["violation"]
    assert "declaration clamped from (99," in mine["declaration"]["violation"]
    assert mine["bid_revision"]["bid_price"] == 0 and "revised bid clamped to 0" in mine["bid_revision"]["violation"]
    assert len(mine["ballot"]["entries"]) >= 2 and "ballot repaired: missing" in mine["ballot"]["violation"]
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
