"""SCARCE forks (scarce_lab/environments/scarce/runner/fork.py): the prefix replayed
exactly, re-seeding only from the fork contention, each intervention applied at its
contention, each impossible one refused by name, and no model request in the prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scarce_lab.data.recorder import read_events, read_manifest
from scarce_lab.environments.scarce.config import ScarceConfig
from scarce_lab.environments.scarce.runner import run_scarce
from scarce_lab.environments.scarce.runner.fork import fork_check, fork_steps
from scarce_lab.forks import ForkError, ForkSpec, as_intervention
from scarce_lab.forks.replay import Replay, parent_digest

SMALL = {"workers": 2, "subruns": 1, "deadline_min": 5, "output_limit": 100}


def _parent(out: Path, negotiator: str, seed: int = 4, **extra) -> Path:
    cfg = ScarceConfig(model="scripted/skilled:0.5", negotiator_model=negotiator, seed=seed, **{**SMALL, **extra})
    return run_scarce(cfg, out)


def _fork(parent: Path, out: Path, at: int, intervention="none", seed: int = 0, resume: bool = False,
          **options) -> Path:
    m = read_manifest(parent)
    spec = ForkSpec(parent=m.run_id, parent_digest=parent_digest(parent), at=at, seed=seed,
                    intervention=as_intervention(intervention))
    cfg = ScarceConfig.model_validate({**m.config, "fork": spec.model_dump(), **options})
    return run_scarce(cfg, out, replay=Replay.from_run(parent, at=at, digest=spec.parent_digest), resume=resume)


def _play(run: Path) -> list[dict]:
    """Events as played: without the run id, the call ids made of it and a command's
    measured wall seconds."""
    out = []
    for line in (run / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        e.pop("run_id")
        e["payload"].pop("duration_s", None)
        e["payload"].pop("call_ids", None)
        out.append(e)
    return out


def _start(events: list[dict], at: int) -> int:
    return next(i for i, e in enumerate(events) if e["kind"] == "contention_start" and e["round"] == at)


@pytest.fixture(scope="module")
def strategic(tmp_path_factory) -> Path:
    return _parent(tmp_path_factory.mktemp("parent"), "scripted/strategic")


def test_none_seed_0_is_the_parent_and_names_it(strategic, tmp_path):
    steps = fork_steps(strategic)
    at = steps[len(steps) // 2]
    run = _fork(strategic, tmp_path, at)
    assert _play(run) == _play(strategic)
    m = read_manifest(run)
    assert m.config["fork"]["parent"] == read_manifest(strategic).run_id and m.config["fork"]["at"] == at
    assert m.run_id.endswith("-fork0") and m.condition.endswith(f"fork@{at}:none") and m.run_id != strategic.name
    assert m.notes["fork"]["at"] == at and m.notes["fork"]["replayed_calls"] == 0  # scripted: nothing to replay


def test_a_reseeded_fork_differs_only_from_its_contention(strategic, tmp_path):
    at = fork_steps(strategic)[1]
    parent = _play(strategic)
    cut = _start(parent, at)
    runs = [_play(_fork(strategic, tmp_path / str(j), at, seed=j)) for j in (1, 2)]
    for events in runs:
        assert events[:cut] == parent[:cut]  # the prefix is the parent's, event for event
    assert any(events[cut:] != parent[cut:] for events in runs)  # the continuation is re-drawn


def test_one_negotiators_first_private_message_replaced(strategic, tmp_path):
    parent = _play(strategic)
    first = next(e for e in parent if e["kind"] == "private_message")
    w, at = first["agent"], first["round"]
    text = "Nothing to offer this time."
    events = _play(_fork(strategic, tmp_path, at, f"replace_message:agent={w},text={text}"))
    cut = _start(parent, at)
    assert events[:cut] == parent[:cut]
    mine = [e for e in events if e["kind"] == "private_message" and e["agent"] == w and e["round"] == at]
    assert mine[0]["payload"]["text"] == text and mine[0]["payload"]["outcome"] == "fork"
    assert mine[0]["payload"]["recipient"] == first["payload"]["recipient"]  # only the text changes
    assert mine[0]["visible_to"] == first["visible_to"] == [w, first["payload"]["recipient"]]  # still private
    assert [e["payload"]["text"] for e in events if e["kind"] == "private_message"].count(text) == 1


def test_a_replaced_declaration_and_a_refused_one(strategic, tmp_path):
    at = fork_steps(strategic)[0]
    events = _play(_fork(strategic, tmp_path / "ok", at, "replace_decision:agent=w1,decision={bid_price: 7}"))
    decl = next(e for e in events if e["kind"] == "declaration" and e["agent"] == "w1" and e["round"] == at)
    assert decl["payload"]["bid_price"] == 7 and decl["payload"]["outcome"] == "fork"
    with pytest.raises(ForkError, match="desired_position"):  # never repaired into the legal set
        _fork(strategic, tmp_path / "bad", at, "replace_decision:agent=w1,decision={desired_position: 9}")


@pytest.mark.parametrize(("intervention", "at", "match"), [
    ("none", 99, r"contention 99: run .* has contentions"),
    ("replace_message:agent=w7,text=hi", 0, r"agent w7: run .* has workers \['w0', 'w1'\]"),
    ("rule:setting=workers,value=5", 0, r"rule workers: SCARCE cannot change it mid-run"),
    ("rule:setting=institutions.sanctions,value=sometimes", 0, r"rule institutions.sanctions='sometimes'"),
    ("seat_model:seat=w1.judge,model=scripted/fifo", 0, r"seat w1.judge: run .* has seats"),
    ("remove_agent:agent=w1", 0, r"remove_agent: SCARCE cannot remove a worker mid-run"),
    ("add_agent:model=scripted/fifo", 0, r"add_agent: SCARCE cannot add a worker mid-run"),
    ("replace_decision:agent=w1,decision={ranking: [w1]}", 0, r"ranks its participants"),
    ("replace_decision:agent=w1,decision={tip: 3}", 0, r"a declaration takes keys of"),
])
def test_each_impossible_fork_is_refused_by_name(strategic, intervention, at, match):
    m = read_manifest(strategic)
    cfg = ScarceConfig.model_validate(m.config)
    with pytest.raises(ForkError, match=match):
        fork_check(cfg, m, as_intervention(intervention), at, run_dir=strategic)


def test_a_message_the_parent_never_sent_is_refused(strategic):
    m = read_manifest(strategic)
    events = read_events(strategic)
    silent = next((e.round, e.agent) for e in events if e.kind == "private_silence"
                  and not any(x.kind == "private_message" and x.agent == e.agent and x.round == e.round for x in events))
    with pytest.raises(ForkError, match="sent no private message in contention"):
        fork_check(ScarceConfig.model_validate(m.config), m,
                   as_intervention(f"replace_message:agent={silent[1]},text=x"), silent[0], run_dir=strategic)


@pytest.fixture(scope="module")
def institutional(tmp_path_factory) -> Path:
    return _parent(tmp_path_factory.mktemp("inst"), "scripted/institution-mix", seed=2, workers=3)


def test_sanctions_switched_on_mid_run_change_the_rules_from_that_contention(institutional, tmp_path):
    parent = institutional
    at = fork_steps(parent)[1]
    run = _fork(parent, tmp_path, at, "rule:setting=institutions.sanctions,value=mechanism")
    events = _play(run)
    cut = _start(events, at)
    assert events[:cut] == _play(parent)[:cut]
    rounds = {e["round"] for e in events if e["kind"] in ("promise", "promise_judged", "breach", "sanction")}
    assert rounds and min(rounds) == at  # none before the fork, asked from its contention on
    assert not any(e["kind"] == "promise" for e in _play(parent))
    m = read_manifest(run)
    assert "fork@1:rule:institutions.sanctions=mechanism" in m.condition
    assert m.condition_settings["fork.intervention.setting"] == "institutions.sanctions"


def test_a_diverged_prefix_is_refused_with_the_event(strategic, tmp_path):
    from scarce_lab.forks import ForkDivergedError

    # the parent's config with another deadline plays another prefix: caught at the fork contention
    with pytest.raises(ForkDivergedError, match=r"differs from the parent at event seq \d+"):
        _fork(strategic, tmp_path, fork_steps(strategic)[1], deadline_min=6)


@pytest.mark.slow  # a server process, a parent and a fork: 5-8 s on a shared 2-core machine
def test_an_openai_negotiator_fork_asks_nothing_for_its_prefix(tmp_path, monkeypatch):
    from tests.fake_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "none")
    with FakeOpenAIServer(latency_s=0.0) as srv:
        llm = {"api_base": srv.url, "cache": False, "max_retries": 0}
        cfg = ScarceConfig(model="scripted/skilled:0.5", negotiator_model="openai/fake-negotiator", seed=1,
                           workers=2, subruns=1, deadline_min=3, output_limit=100, llm=llm)
        parent = run_scarce(cfg, tmp_path / "p")
        asked = srv.stats()["requests"]
        calls = [json.loads(x) for x in (parent / "llm_calls.jsonl").read_text().splitlines()]
        at = fork_steps(parent)[-1]
        after = sum(1 for c in calls if c["round"] is not None and c["round"] >= at)
        assert asked == len(calls) and 0 < after < asked
        run = _fork(parent, tmp_path / "f", at)
        assert srv.stats()["requests"] - asked == after  # the prefix's calls came from the records
    assert _play(run) == _play(parent)
    replayed = [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert sum(c["cache_hit"] and c["cost_usd"] == 0 for c in replayed) == len(calls) - after
    assert read_manifest(run).notes["fork"]["replayed_calls"] == len(calls) - after


@pytest.mark.slow
def test_a_fork_resumed_past_its_contention_plays_on_as_the_fork(tmp_path, monkeypatch):
    import scarce_lab.environments.scarce.runner.play as play

    parent = _parent(tmp_path / "p", "scripted/strategic", seed=6, subruns=2)
    at = fork_steps(parent)[1]
    iv = "rule:setting=institutions.sanctions,value=mechanism"
    whole = _play(_fork(parent, tmp_path / "whole", at, iv, seed=2))
    real = play.ScarceRunner._commit

    def stop_after(self, k, t, *, subrun_done):
        real(self, k, t, subrun_done=subrun_done)
        if k == at + 1 and not subrun_done:
            raise KeyboardInterrupt("stopped after the fork contention")

    monkeypatch.setattr(play.ScarceRunner, "_commit", stop_after)
    with pytest.raises(KeyboardInterrupt):
        _fork(parent, tmp_path / "cut", at, iv, seed=2)
    monkeypatch.setattr(play.ScarceRunner, "_commit", real)
    assert _play(_fork(parent, tmp_path / "cut", at, iv, seed=2, resume=True)) == whole


def test_a_seat_model_and_revisable_bids_from_the_fork_contention(strategic, tmp_path):
    at = fork_steps(strategic)[1]
    parent = _play(strategic)
    cut = _start(parent, at)
    seat = _fork(strategic, tmp_path / "seat", at, "seat_model:seat=w1.negotiator,model=scripted/spend-down")
    events = _play(seat)
    assert events[:cut] == parent[:cut]
    bids = {e["round"]: e["payload"]["bid_price"] for e in events if e["kind"] == "declaration" and e["agent"] == "w1"}
    was = {e["round"]: e["payload"]["bid_price"] for e in parent if e["kind"] == "declaration" and e["agent"] == "w1"}
    assert {k: v for k, v in bids.items() if k < at} == {k: v for k, v in was.items() if k < at}
    assert bids[at] != was[at]  # spend-down bids 35% of its balance, strategic 10%
    assert read_manifest(seat).notes["fork"]["models"] == {"w1.negotiator": "scripted/spend-down"}
    events = _play(_fork(strategic, tmp_path / "rev", at, "rule:setting=mechanism,value=revisable"))
    assert {e["round"] for e in events if e["kind"] == "bid_revision"} == set(fork_steps(strategic)[1:])


def test_a_replacement_never_made_fails_the_fork(strategic, tmp_path, monkeypatch):
    from scarce_lab.environments.scarce.runner.fork import ForkPlay

    first = next(e for e in _play(strategic) if e["kind"] == "private_message")
    # as if the (re-seeded) negotiator stayed silent: the fork contention replaces nothing
    monkeypatch.setattr(ForkPlay, "replace", lambda self, k, w, phase, d: d)
    with pytest.raises(ForkError, match=rf"{first['agent']} made no such move in contention {first['round']}"):
        _fork(strategic, tmp_path, first["round"], f"replace_message:agent={first['agent']},text=hi")
    assert read_manifest(next(tmp_path.iterdir())).status.value == "failed"


def test_a_hostile_replaced_message_is_recorded_exactly_and_bounded_like_an_answer(strategic, tmp_path):
    """A fork's message is agent text: recorded byte for byte (the prompts quote it, see
    tests/test_prompt_quoting.py) and bounded as the answer schema bounds a negotiator's."""
    from tests.test_prompt_quoting import HOSTILE

    first = next(e for e in _play(strategic) if e["kind"] == "private_message")
    text = next(t for t in HOSTILE if 100 < len(t) <= 200 and "\n" in t)
    m = read_manifest(strategic)
    spec = ForkSpec(parent=m.run_id, parent_digest=parent_digest(strategic), at=first["round"], seed=0,
                 intervention=as_intervention({"kind": "replace_message", "agent": first["agent"], "text": text}))
    run = run_scarce(ScarceConfig.model_validate({**m.config, "fork": spec.model_dump()}), tmp_path,
                     replay=Replay.from_run(strategic, at=first["round"], digest=spec.parent_digest))
    got = [e["payload"]["text"] for e in _play(run) if e["kind"] == "private_message" and e["payload"].get("outcome") == "fork"]
    assert got == [text]
    with pytest.raises(ForkError, match=r"at most 200 characters .* got 201"):
        fork_check(ScarceConfig.model_validate(m.config), m, as_intervention(
            {"kind": "replace_message", "agent": first["agent"], "text": "x" * 201}), first["round"],
            run_dir=strategic)
