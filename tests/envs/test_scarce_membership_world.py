"""The SCARCE world with a changing set of workers and per-worker memory horizons
(WorldRules.joins / leaves / worker_memory)."""

from __future__ import annotations

import pytest

from scarce_lab.environments.scarce.world import ScarceWorld, WorldRules
from scarce_lab.tasks.model import Task

TASK = Task(id="t", name="t", program="t", documentation="d", examples=[])
NAMES = ("w0", "w1", "w2")


def rules(**kw) -> WorldRules:
    return WorldRules(workers=NAMES, budgets={"w0": 100, "w1": 200, "w2": 300},
                      deadlines_s={w: 600.0 for w in NAMES}, subruns=3, **kw)


def finish_all(world: ScarceWorld) -> None:
    for w in world.workers:
        world.finish(w, missed=False, at=1.0)


def test_only_present_workers_play_a_subrun():
    world = ScarceWorld(rules(joins={"w2": 1}, leaves={"w0": 1}))
    seen = []
    for _ in range(3):
        world.start_subrun({w: TASK for w in NAMES})  # the whole plan; absent workers dropped
        seen.append((tuple(world.workers), dict(world.ledger.balances)))
        finish_all(world)
    assert seen == [(("w0", "w1"), {"w0": 100, "w1": 200}),
                    (("w0", "w1", "w2"), {"w0": 100, "w1": 200, "w2": 300}),  # the newcomer's budget from its first subrun
                    (("w1", "w2"), {"w1": 200, "w2": 300})]
    with pytest.raises(KeyError, match="unknown worker 'w0'"):
        world.worker("w0")


def test_a_contention_and_its_recipients_hold_present_workers_only():
    world = ScarceWorld(rules(joins={"w2": 1}))
    world.start_subrun({w: TASK for w in NAMES})
    for w in ("w0", "w1"):
        world.request_slot(w, 20, "run")
    nxt = world.next_event()
    assert nxt.participants == ("w0", "w1")
    c = world.open_contention(nxt.participants)
    view = world.negotiation_view(c, "w0", nxt.t)
    assert list(view.legal.recipients) == ["w1"] and view.participants == ["w0", "w1"]


def _view_rows(world: ScarceWorld, who: str):
    for w in world.workers:
        world.request_slot(w, 20, "run")
    nxt = world.next_event()
    c = world.open_contention(nxt.participants)
    v = world.negotiation_view(c, who, nxt.t)
    return sorted({r["subrun"] for r in v.history}), v


def test_a_newcomer_sees_no_history_from_before_it_joined_even_under_cross():
    world = ScarceWorld(rules(joins={"w2": 1}))  # memory: cross (the paper's)
    world.start_subrun({w: TASK for w in NAMES})
    world.history.rows.append({"contention": 0, "subrun": 0, "allocations": [], "bids": {}, "winner": "w0",
                               "winning_bid": 3})
    finish_all(world)
    world.start_subrun({w: TASK for w in NAMES})
    world.history.rows.append({"contention": 1, "subrun": 1, "allocations": [], "bids": {}, "winner": "w1",
                               "winning_bid": 4})
    assert _view_rows(world, "w2")[0] == [1]  # the newcomer: its own subrun on
    world2 = ScarceWorld(rules(joins={"w2": 1}))
    world2.start_subrun({w: TASK for w in NAMES})
    world2.history.rows.append({"contention": 0, "subrun": 0, "allocations": [], "bids": {}, "winner": "w0",
                                "winning_bid": 3})
    finish_all(world2)
    world2.start_subrun({w: TASK for w in NAMES})
    assert _view_rows(world2, "w0")[0] == [0]  # an incumbent keeps the earlier subrun


def test_per_worker_memory_horizon():
    world = ScarceWorld(rules(worker_memory={"w1": "none", "w2": "subrun"}))
    world.start_subrun({w: TASK for w in NAMES})
    for w in NAMES:
        world.save_memory(w, f"note of {w}")
    world.history.rows.append({"contention": 0, "subrun": 0, "allocations": [], "bids": {}, "winner": "w0",
                               "winning_bid": 3})
    finish_all(world)
    world.start_subrun({w: TASK for w in NAMES})
    rows0, v0 = _view_rows(world, "w0")
    assert rows0 == [0] and v0.memories == ["note of w0"]  # cross: carried over
    c = world.open_contention(tuple(world.workers))
    v1, v2 = world.negotiation_view(c, "w1", 0.0), world.negotiation_view(c, "w2", 0.0)
    assert v1.history == [] and v1.memories == []  # none
    assert v2.history == [] and v2.memories == []  # subrun: nothing of subrun 0


@pytest.mark.parametrize("kw, match", [
    (dict(joins={"w9": 1}), "unknown worker"),
    (dict(worker_memory={"w0": "forever"}), "worker_memory"),
    (dict(leaves={"w0": 5}), "leaves"),
    (dict(joins={"w0": 1, "w1": 1, "w2": 1}), "without a worker"),
])
def test_bad_membership_rules(kw, match):
    with pytest.raises(ValueError, match=match):
        rules(**kw)
