"""Economy tasks: Blocks World rules, the arithmetic generator's answers, QA grading,
rule agents."""

from __future__ import annotations

import random

import pytest

from scarce_lab.environments.economy.agents.partial import scripted_compute
from scarce_lab.environments.economy.agents.rules import (
    BlocksRule,
    expert_rules,
    mutate_rule,
    random_rule,
)
from scarce_lab.environments.economy.world import Economy, run_episode
from scarce_lab.environments.economy.world.arithmetic import make_problem, make_problems
from scarce_lab.environments.economy.world.blocksworld import (
    BlocksWorld,
    Move,
    features_of,
    make_instance,
    size_for_episode,
)
from scarce_lab.environments.economy.world.qa import (
    Contribution,
    QAItem,
    QATask,
    answers_match,
    normalize_answer,
)


# -- Blocks World ------------------------------------------------------------------
def test_move_moves_top_block_and_completion_pays_per_block():
    env = BlocksWorld((0, 1), [(0,), (), (1,)], reward_per_block=10)
    r = env.apply(Move(3, 1))
    assert env.stacks == [[0, 1], [], []]
    assert (r.reward, r.done, r.solved) == (20, True, True)
    with pytest.raises(RuntimeError, match="done"):
        env.apply(Move(1, 2))


def test_invalid_moves_change_nothing():
    env = BlocksWorld((0, 1), [(1,), (), (0,)])
    r = env.apply(Move(2, 1))  # empty source
    assert env.stacks == [[1], [], [0]] and r.info == {"invalid": True} and r.reward == 0
    r = env.apply(Move(1, 1))
    assert env.stacks == [[1], [], [0]] and r.info == {"invalid": True}


def test_move_and_instance_validation():
    with pytest.raises(ValueError, match="src"):
        Move(0, 1)
    with pytest.raises(ValueError, match="exactly the target"):
        BlocksWorld((0, 1), [(0,), (), (0,)])
    with pytest.raises(TypeError, match="Move"):
        BlocksWorld((0,), [(), (0,), ()]).apply("up")


def test_features_hand_case():
    # target 2,0,1; stack1 holds the correct prefix (2); next needed colour is 0.
    f = features_of((2, 0, 1), ((2,), (1, 0), (0,)))
    assert f == {"prefix_ok": True, "need_top2": True, "need_top3": True, "need_in2": True, "need_in3": True}
    f = features_of((2, 0, 1), ((1,), (2, 0), ()))
    assert f == {"prefix_ok": False, "need_top2": False, "need_top3": False, "need_in2": False, "need_in3": False}
    f = features_of((2, 0, 1), ((2,), (0, 1), ()))
    assert f["need_in2"] and not f["need_top2"]


def test_step_kinds():
    env = BlocksWorld((2, 0), [(0,), (2,), ()])
    assert env.step_kind(env.observe()) == "unstack"
    env = BlocksWorld((2, 0), [(), (2,), (0,)])
    assert env.step_kind(env.observe()) == "place"
    env = BlocksWorld((2, 0), [(), (2, 0), ()])
    assert env.step_kind(env.observe()) == "dig"


def test_instances_are_unsolved_permutations_and_seeded():
    for seed in range(50):
        rng = random.Random(seed)
        n = rng.randint(1, 7)
        target, stacks = make_instance(n, 3, rng)
        assert len(target) == n
        assert sorted(target) == sorted(b for s in stacks for b in s)
        assert n == 1 or tuple(stacks[0]) != target or len(set(target)) == 1
    assert make_instance(5, 3, random.Random(4)) == make_instance(5, 3, random.Random(4))


def test_curriculum_grows_after_streak_and_caps():
    rng = random.Random(0)
    kw = dict(min_blocks=2, max_blocks=4, schedule="curriculum", promote_after=3)
    assert size_for_episode(0, rng, current=None, streak=0, **kw) == 2
    assert size_for_episode(5, rng, current=2, streak=2, **kw) == 2
    assert size_for_episode(5, rng, current=2, streak=3, **kw) == 3
    assert size_for_episode(9, rng, current=4, streak=3, **kw) == 4
    assert 2 <= size_for_episode(0, rng, min_blocks=2, max_blocks=4) <= 4
    with pytest.raises(ValueError, match="schedule"):
        size_for_episode(0, rng, min_blocks=1, max_blocks=2, schedule="zigzag")


def test_expert_rules_solve_instances():
    eco = Economy()
    for r in expert_rules():
        eco.add_agent(r, episode=0, bid=5)
    solved = 0
    for i in range(60):
        rng = random.Random(i)
        t, s = make_instance(rng.randint(2, 6), 3, rng)
        res = run_episode(eco, BlocksWorld(t, s), trigger=lambda a, o: a.genome.fires(o),
                          act=lambda a, o: a.genome.act(o), training=False, rng=random.Random(i))
        solved += res.solved
    assert solved >= 57


def test_rules_random_and_mutation_stay_valid():
    rng = random.Random(0)
    r = random_rule(rng)
    for _ in range(200):
        r2 = mutate_rule(r, rng)
        assert isinstance(r2, BlocksRule) and 1 <= len(r2.literals) <= 2
        r = r2
    with pytest.raises(ValueError, match="move"):
        BlocksRule((("prefix_ok", True),), (1, 1))


# -- arithmetic ----------------------------------------------------------------------
def _recompute(p) -> int:
    v = p.start
    for op, arg, after in p.steps:
        if op == "add":
            v += arg
        elif op == "remove":
            v -= arg
        elif op == "groups":
            v += arg[0] * arg[1]
        else:
            assert v % arg == 0
            v //= arg
        assert v == after and v >= 0
    return v


def test_arithmetic_answers_are_verifiable():
    for p in make_problems(11, 100, n_steps=4):
        assert _recompute(p) == p.answer
        assert scripted_compute(p.question) == p.answer  # the text states the same operations
        assert len(p.steps) == 4 and p.question.endswith("now?")


def test_arithmetic_is_seeded():
    assert make_problem(3) == make_problem(3)
    assert make_problem(3) != make_problem(4)
    with pytest.raises(ValueError, match="n_steps"):
        make_problem(0, n_steps=9)


def test_arithmetic_hand_case():
    p = make_problem("1:1", 3)
    assert p.question.startswith("Eli has 12 books. Then Eli gives away 7 books.")
    assert p.answer == 21  # 12 - 7 = 5; 5 / 5 = 1; 1 + 4 * 5 = 21


# -- QA task -------------------------------------------------------------------------
def test_answer_normalisation():
    assert normalize_answer("The answer is 1,234.") == "1234"
    assert normalize_answer("42.0") == "42"
    assert normalize_answer(" Paris! ") == "paris"
    assert answers_match("x = 7", "7") and not answers_match("", "")
    assert not answers_match("8", "7")


def test_qa_task_grades_first_final_answer():
    env = QATask(QAItem("2+3?", "5"), reward=50, max_steps=4)
    assert env.step_kind(env.observe()) == "start"
    r = env.apply(Contribution("compute", "2+3=5"))
    assert (r.reward, r.done) == (0, False)
    assert env.step_kind(env.observe()) == "after_compute"
    r = env.apply(Contribution("answer", "so", "5"))
    assert (r.reward, r.done, r.solved) == (50, True, True)
    env = QATask(QAItem("2+3?", "5"))
    r = env.apply(Contribution("answer", "guess", "6"))
    assert (r.reward, r.done, r.solved) == (0, True, False)
