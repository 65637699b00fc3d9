"""SCARCE trajectories pinned byte for byte (except timestamps) across refactors.

The golden files under ``tests/golden_scarce_refactor/`` were first written by the
runner as it was BEFORE its world rules moved into :mod:`scarce_lab.environments.scarce.world.auction`
(commit 8098de0, ``scarce_lab/environments/scarce/runner/__init__.py`` at 742 lines), then rewritten in
trajectory format 2 after checking that every old event, migrated by
:func:`scarce_lab.data.events.migrations.migrate_event`, equals the new runner's event
(all 7 configurations identical). Each holds, per
scripted configuration below, every event (``seq, round, phase, agent, kind, t,
payload`` in the order written, the run id once; only the wall-clock
``timestamp`` is dropped) and, for some, every observation shown to a solver and every view shown
to a negotiator (the solver's task pinned by a hash), as JSON lines. A test fails
when any of these changes.

Regenerate (only when a behaviour change is intended, and say so in the commit);
``PYTHONPATH`` names the tree whose runner writes them::

    PYTHONPATH=$PWD python tests/runners/test_scarce_golden.py
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: PYTHONPATH (e.g. a frozen older tree) comes first
    sys.path.append(str(REPO))

from scarce_lab.environments.scarce.runner import ScarceConfig, ScarceRunner  # noqa: E402
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task  # noqa: E402

GOLDEN = Path(__file__).parents[1] / "golden_scarce_refactor"

#: name -> (config kwargs, number of toy tasks, agent wrapper: "" | "tap" | "overbid")
CONFIGS: dict[str, tuple[dict, int, str]] = {
    # Borda ballots, revisable bids, 2 private rounds, a rich worker, a tight deadline: misses
    # while requested, while queued (its paid slot stays idle) and after a slot; w1 overbids
    # its budget, so its payments are capped
    "ballots_revisable_tight": (dict(workers=4, subruns=1, model="scripted/random", mechanism="revisable",
                                     private_rounds=2, budget=150, rich_worker_budget=900, deadline_min=2.0,
                                     seed=2), 2, "overbid"),
    # FIFO, no memory, mixed deadlines with two tight ones, decisions cost 0 s
    "fifo_mixed_none": (dict(workers=4, subruns=1, model="scripted/fifo", scheduler="fifo", memory="none",
                             mixed_deadlines=True, worker_deadlines_min={"w2": 1.5, "w3": 1.0},
                             scripted_call_s=0, seed=3), 2, ""),
    # EDF, cross-subrun memory, a step limit and a short deadline
    "edf_cross_steps": (dict(workers=3, subruns=2, model="scripted/edf", scheduler="edf", memory="cross",
                             max_solver_steps=9, worker_deadlines_min={"w1": 2.0}, seed=4), 2, ""),
    # first-price highest bid with overbids (capped payments)
    "highest_bid_capped": (dict(workers=3, subruns=1, model="scripted/bid-first", scheduler="highest-bid",
                                budget=40, worker_budgets={"w1": 5}, seed=6), 1, "overbid"),
    # what agents are shown under each memory horizon (history_k=2, transcript_k=3)
    **{f"views_{m}": (dict(workers=2, subruns=2, model="scripted/random", memory=m, history_k=2,
                           transcript_k=3, private_rounds=1, seed=11), 2, "tap")
       for m in ("none", "subrun", "cross")},
}
#: the scripted agents ignore what differs between these horizons: their events are
#: those of views_cross but for the solver's notes; only their inputs are pinned
INPUTS_ONLY = {"views_none", "views_subrun"}


def _canon(obj) -> str:
    """JSON in the key order given (the order the runner wrote is part of the pin)."""
    return json.dumps(obj, ensure_ascii=False, default=str)


class _Tap:
    """Wraps an agent and logs every input it is given (canonical JSON)."""

    def __init__(self, inner, log: list, who: str, role: str):
        self._inner, self._log, self._who, self._role = inner, log, who, role
        self.scripted, self.model = inner.scripted, inner.model

    def __getattr__(self, method):
        fn = getattr(self._inner, method)

        async def call(view):
            seen = dataclasses.asdict(view)
            # the legal actions are derived from the other fields (the world's rule,
            # scarce_lab.environments.scarce.world.actions): pinned through them, not twice
            seen.pop("legal", None)
            if "task" in seen:  # the task's agent view is constant per subrun: pin it by hash
                seen["task"] = {"id": seen["task"]["id"], "sha256": hashlib.sha256(
                    _canon(seen["task"]).encode()).hexdigest()[:16]}
            self._log.append(_canon({"agent": self._who, "role": self._role, "method": method, "input": seen}))
            return await fn(view)

        return call


class _Overbid:
    """A negotiator that declares a bid above its budget (worker ``w1`` only)."""

    def __init__(self, inner, who: str):
        self._inner, self._who = inner, who
        self.scripted, self.model = inner.scripted, inner.model

    def __getattr__(self, method):
        return getattr(self._inner, method)

    async def declare(self, view):
        d = await self._inner.declare(view)
        if self._who == "w1":
            d.value = d.value.model_copy(update={"bid_price": view.own_budget + 50})
        return d


def capture(name: str, tmp: Path) -> dict[str, list[str]]:
    """Run configuration ``name`` with a fake sandbox and stub grader; return its
    events (and agent inputs) as canonical JSON lines."""
    kw, n_tasks, mode = CONFIGS[name]
    cfg = ScarceConfig(**kw)
    inputs: list[str] = []
    runner = ScarceRunner(cfg, tmp, tasks=[toy_task(i) for i in range(n_tasks)], grade_fn=fake_grade,
                          sandbox=FakeSandbox(tmp / "sbx"))
    orig = runner._agents
    if mode == "tap":
        def agents(w, task):
            s, n = orig(w, task)
            return _Tap(s, inputs, w, "solver"), _Tap(n, inputs, w, "negotiator")

        runner._agents = agents
    elif mode == "overbid":
        def agents(w, task):
            s, n = orig(w, task)
            return s, _Overbid(n, w)

        runner._agents = agents
    from scarce_lab.llm.client import run_sync

    run_dir = run_sync(runner.arun())
    evs = [_canon({"run_id": run_dir.name})]  # once, not on every line
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        assert e["run_id"] == run_dir.name, e
        evs.append(_canon({k: v for k, v in e.items() if k not in ("timestamp", "run_id")}))
    out = {} if name in INPUTS_ONLY else {"events": evs}
    if mode == "tap":
        out["inputs"] = inputs
    return out


def _path(name: str, part: str) -> Path:
    return GOLDEN / f"{name}.{part}.jsonl"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_trajectory_unchanged(tmp_path, name):
    got = capture(name, tmp_path)
    for part, lines in got.items():
        want = _path(name, part).read_text().splitlines()
        assert len(lines) == len(want), f"{name}.{part}: {len(lines)} lines, golden has {len(want)}"
        for i, (a, b) in enumerate(zip(lines, want, strict=True)):
            assert a == b, f"{name}.{part} line {i + 1} differs:\n got  {a[:600]}\n want {b[:600]}"


def test_golden_covers_the_rules():
    """The pinned runs exercise the paths they are meant to pin (a positive control)."""
    kinds: dict[str, int] = {}
    reasons: set[tuple[str, bool]] = set()
    capped = idle_queue_miss = 0
    for name in set(CONFIGS) - INPUTS_ONLY:
        evs = [json.loads(x) for x in _path(name, "events").read_text().splitlines()[1:]]
        starts = {(e["payload"]["subrun"], e["agent"]) for e in evs if e["kind"] == "slot_start"}
        pays = {(e["payload"]["subrun"], e["agent"]) for e in evs if e["kind"] == "payment"}
        for e in evs:
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
            p = e["payload"]
            if e["kind"] == "submission":
                reasons.add((p["reason"], p["deadline_missed"]))
                key = (p["subrun"], e["agent"])
                idle_queue_miss += p["deadline_missed"] and key in pays and key not in starts
            capped += e["kind"] == "payment" and p["capped"]
    assert {("submit", False), ("step_limit", False), ("deadline", True)} <= reasons
    assert capped > 0 and idle_queue_miss > 0
    for k in ("private_message", "bid_revision", "ballot", "memory_save", "slot_end", "execution", "schedule"):
        assert kinds.get(k, 0) > 0, k


if __name__ == "__main__":
    import tempfile

    import scarce_lab

    print("runner from", Path(scarce_lab.__file__).parent)
    GOLDEN.mkdir(exist_ok=True)
    for nm in CONFIGS:
        with tempfile.TemporaryDirectory() as d:
            for part, lines in capture(nm, Path(d)).items():
                _path(nm, part).write_text("".join(x + "\n" for x in lines))
                print(nm, part, len(lines), "lines", _path(nm, part).stat().st_size, "bytes")
