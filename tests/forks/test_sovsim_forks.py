"""Forks of SovSim runs (scarce_lab.forks): the prefix replays from the parent's record
(no model request: counted at a fake OpenAI server), seed 0 reproduces the parent, seed
j > 0 differs after the fork step only, each intervention applies or is refused by name,
an altered parent is refused, and a fork is never pooled with its parent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scarce_lab.data.recorder import read_events, read_manifest
from scarce_lab.environments.sovsim.config import SovSimConfig
from scarce_lab.forks import ForkDivergedError, ForkError
from scarce_lab.forks.launch import fork, fork_configs
from scarce_lab.forks.replay import Replay
from scarce_lab.registry import get
from tests.fake_server import FakeOpenAIServer

SHIPPED = Path(__file__).parents[2] / "data" / "sovsim"


def events(run: Path) -> list[tuple]:
    """(round, agent, kind, payload) of every event; ``call_ids`` (ids hash the run id)
    left out."""
    return [(e.round, e.agent, e.kind, e.payload.model_dump(exclude={"call_ids"})) for e in read_events(Path(run))]


def play(cfg: SovSimConfig, out: Path) -> Path:
    (run,) = get("sovsim").run(cfg, out)
    return run


def calls(run: Path) -> list[dict]:
    p = Path(run) / "llm_calls.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A 4-round kcpr_m game of ``openai/fake`` at a fake server (no response cache), the
    server and the requests the parent made."""
    out = tmp_path_factory.mktemp("parent")
    with pytest.MonkeyPatch.context() as mp, FakeOpenAIServer(latency_s=0.0) as srv:
        mp.setenv("OPENAI_API_KEY", "none")
        cfg = SovSimConfig(condition="kcpr_m", model="openai/fake", seed=3, game={"rounds": 4},
                           llm={"api_base": srv.url, "cache": False, "max_concurrency": 4})
        run = play(cfg, out)
        yield run, srv, srv.stats()["requests"]


def test_seed0_fork_reproduces_the_parent_with_no_request_for_the_prefix(served, tmp_path):
    run, srv, _ = served
    parent_calls = calls(run)
    live = sum(c["round"] >= 2 for c in parent_calls)
    before = srv.stats()["requests"]
    (f,) = fork(run, at=2, intervene="none", seeds=0, out=tmp_path)
    assert srv.stats()["requests"] - before == live > 0  # the continuation's calls only
    assert events(f) == events(run)
    fc = calls(f)
    replayed = [c for c in fc if c["round"] < 2]
    assert replayed and all(c["cache_hit"] and c["cost_usd"] == 0 for c in replayed)
    assert [c["raw_response"] for c in fc] == [c["raw_response"] for c in parent_calls]
    m = read_manifest(f)
    assert m.notes["fork"]["replayed_calls"] == len(replayed)
    assert m.notes["fork"]["parent"] == read_manifest(run).run_id and m.config["fork"]["at"] == 2
    assert m.condition.endswith("fork@2:none") and m.run_id.endswith("-fork0")


def test_seed_j_reseeds_the_calls_after_the_fork_step_only(served, tmp_path):
    run, srv, _ = served
    before = srv.stats()["requests"]
    f1, f2 = fork(run, at=2, seeds="1..2", out=tmp_path)
    assert srv.stats()["requests"] - before == 2 * sum(c["round"] >= 2 for c in calls(run))
    seeds = {(c["round"], c["agent"], c["purpose"]): c["params"]["seed"] for c in calls(run)}
    for f in (f1, f2):
        assert [e for e in events(f) if e[0] < 2] == [e for e in events(run) if e[0] < 2]
        mine = {(c["round"], c["agent"], c["purpose"]): c["params"]["seed"] for c in calls(f)}
        assert {k: v for k, v in mine.items() if k[0] < 2} == {k: v for k, v in seeds.items() if k[0] < 2}
        assert all(v != seeds[k] for k, v in mine.items() if k[0] >= 2)
    assert read_manifest(f1).condition == read_manifest(f2).condition  # seeds are replicates of one condition


def test_a_prefix_call_the_parent_never_made_is_diverged_and_never_sent(served, tmp_path):
    run, srv, _ = served
    bad = tmp_path / "parent" / run.name
    shutil.copytree(run, bad)
    lines = (bad / "llm_calls.jsonl").read_text().splitlines(keepends=True)
    (bad / "llm_calls.jsonl").write_text("".join(lines[1:]))  # the first answer is gone
    before = srv.stats()["requests"]
    with pytest.raises(ForkDivergedError, match=r"never asked \(step 1, agent 'a3'"):
        fork(bad, at=2, out=tmp_path / "forks")
    assert srv.stats()["requests"] == before
    (failed,) = (tmp_path / "forks").iterdir()
    assert read_manifest(failed).status.value == "failed"


def test_a_parent_altered_after_the_fork_was_planned_is_refused(tmp_path):
    run = tmp_path / "p"
    shutil.copytree(SHIPPED / "sovsim-kcpr-embedded-smollm2-s0-1", run)  # the replay is read, the model never run
    _, (cfg,) = fork_configs(run, at=2)
    with (run / "events.jsonl").open("a") as fh:
        fh.write("\n")
    with pytest.raises(ForkError, match="changed since the fork was planned"):
        get("sovsim").run(cfg, tmp_path / "out", replay=Replay.from_run(run, at=2, digest=cfg.fork.parent_digest))
    with pytest.raises(ForkError, match="replay"):  # a fork is never run without its parent's answers
        get("sovsim").run(cfg, tmp_path / "out")


def test_a_replaced_decision_is_played_and_its_agent_not_asked(served, tmp_path):
    run, srv, _ = served
    before = srv.stats()["requests"]
    (f,) = fork(run, at=2, seeds=0, out=tmp_path, intervene="replace_decision:agent=a1,decision={value: 0}")
    fe, pe = events(f), events(run)
    assert [e for e in fe if e[0] < 2] == [e for e in pe if e[0] < 2]
    (mine,) = [e for e in fe if e[0] == 2 and e[1] == "a1" and e[2] == "extraction"]
    assert mine[3]["extraction"] == 0 and not [c for c in calls(f) if c["round"] == 2 and c["agent"] == "a1"]
    assert srv.stats()["requests"] - before == sum(c["round"] >= 2 for c in calls(f))  # the prefix: none


@pytest.mark.slow
@pytest.mark.embedded
def test_a_fork_of_another_parent_with_the_same_run_id_is_not_taken_for_this_one(tmp_path):
    a, b = tmp_path / "a" / "r", tmp_path / "b" / "r"
    shutil.copytree(SHIPPED / "sovsim-cpr-scripted-random-s0-4", a)
    shutil.copytree(a, b)
    lines = (b / "events.jsonl").read_text().splitlines(keepends=True)
    (b / "events.jsonl").write_text("".join(lines) + "\n")  # the same run, other bytes: another digest
    fork(a, at=1, out=tmp_path / "f")
    with pytest.raises(ForkError, match="holds a fork of another parent"):
        fork(b, at=1, out=tmp_path / "f")


def test_a_fork_never_opens_the_parents_checkpoint(tmp_path):
    import pickle

    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('the checkpoint was unpickled')",))

    run = tmp_path / "p"
    shutil.copytree(SHIPPED / "sovsim-bcpr-scripted-random-s0-0", run)
    (run / ".checkpoint.pkl").write_bytes(pickle.dumps(Boom()))
    (f,) = fork(run, at=1, out=tmp_path / "f")
    assert events(f) == events(run)


@pytest.mark.slow
@pytest.mark.embedded
def test_a_shipped_embedded_run_forked_at_its_last_round_is_the_parent(tmp_path):
    run = SHIPPED / "sovsim-cpr-embedded-smollm2-s0-2"
    last = max(e.round for e in read_events(run) if e.kind == "round")
    (f,) = fork(run, at=last, seeds=0, out=tmp_path)
    old = [(e[0], e[1], e[2], {k: v for k, v in e[3].items() if k != "outcome"}) for e in events(run)]
    assert [(e[0], e[1], e[2], {k: v for k, v in e[3].items() if k != "outcome"}) for e in events(f)] == old
    assert all(c["cache_hit"] for c in calls(f) if c["round"] < last)


def test_shipped_scripted_forks_reproduce_and_reseed(tmp_path):
    run = SHIPPED / "sovsim-bcpr-scripted-random-s0-3"
    f0, f1 = fork(run, at=3, seeds=[0, 1], out=tmp_path)
    assert events(f0) == events(run)
    assert [e for e in events(f1) if e[0] < 3] == [e for e in events(run) if e[0] < 3]
    assert events(f1) != events(run)


def test_misreport_off_makes_the_kings_announcement_the_true_pool(tmp_path):
    run = SHIPPED / "sovsim-kcpr_m-scripted-random-s0-0"
    (f,) = fork(run, at=2, intervene="rule:setting=misreport,value=false", out=tmp_path)
    ann = [e[3] for e in events(f) if e[2] == "announcement" and e[0] >= 2]
    assert ann and all(a["announced_pool"] == a["true_pool"] for a in ann)
    assert any(e[3]["announced_pool"] != e[3]["true_pool"] for e in events(run) if e[2] == "announcement")


def test_talk_on_and_a_seat_model_from_the_fork_round(tmp_path):
    parent = play(SovSimConfig(condition="kcpr", model="scripted/sustainable", game={"rounds": 4}), tmp_path)
    (talk,) = fork(parent, at=3, intervene="rule:setting=talk,value=public", out=tmp_path / "t")
    assert {e[0] for e in events(talk) if e[2] == "talk"} == {3, 4}
    (king,) = fork(parent, at=2, intervene="seat_model:seat=king,model=scripted/greedy", out=tmp_path / "k")
    took = {e[0]: e[3]["extraction"] for e in events(king) if e[2] == "extraction" and e[1] == "a3"}
    was = {e[0]: e[3]["extraction"] for e in events(parent) if e[2] == "extraction" and e[1] == "a3"}
    assert took[1] == was[1] and took[2] > was[2]
    assert read_manifest(king).notes["fork"]["models"] == {"a3": "scripted/greedy"}


def test_a_replaced_message_is_what_the_others_are_shown(tmp_path):
    parent = play(SovSimConfig(condition="cpr", model="scripted/random", game={"rounds": 3}, talk="public"), tmp_path)
    (f,) = fork(parent, at=2, intervene="replace_message:agent=a2,text=Take nothing this round", out=tmp_path / "f")
    (msg,) = [e for e in read_events(f) if e.kind == "talk" and e.round == 2 and e.agent == "a2"]
    assert msg.payload.text == "Take nothing this round" and msg.visibility.value == "public"


@pytest.mark.parametrize("at, intervene, match", [
    (99, "none", r"no step 99; its steps: 1\.\.12"),
    (0, "none", r"no step 0;"),
    (2, "seat_model:seat=a7,model=scripted/greedy", r"no seat 'a7'; seats: .*king"),
    (2, "seat_model:seat=king,model=scripted/nosuch", r"names no scripted policy"),
    (2, "rule:setting=sanctions,value=true", r"no rule 'sanctions'.*rules: talk .*misreport"),
    (2, "rule:setting=misreport,value=false", r"is kcpr, where no king announces"),
    (2, "rule:setting=talk,value=loud", r"'loud' is not one of"),
    (2, "replace_message:agent=a1,text=hi", r"has no talk"),
    (2, "replace_decision:agent=a9,decision={value: 3}", r"agent 'a9' is not in .*agents: a0, a1, a2, a3"),
    (2, "replace_decision:agent=a1,decision={take: 3}", r"a SovSim decision is"),
    (2, "remove_agent:agent=a1", r"not 'remove_agent'"),
    (2, "add_agent:model=scripted/greedy", r"not 'add_agent'"),
    (2, "swap:agent=a1", r"unknown kind 'swap'"),
])
def test_each_intervention_is_refused_where_it_cannot_apply(tmp_path, at, intervene, match):
    with pytest.raises(ForkError, match=match):
        fork(SHIPPED / "sovsim-kcpr-scripted-sustainable-s0-0", at=at, intervene=intervene, out=tmp_path)
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # refused before anything ran


def test_an_illegal_replaced_decision_fails_the_fork_by_name(tmp_path):
    with pytest.raises(ForkError, match=r"a1's extract in round 2 cannot be 31"):
        fork(SHIPPED / "sovsim-cpr-scripted-sustainable-s0-1", at=2, out=tmp_path,
             intervene="replace_decision:agent=a1,decision={value: 31}")


def test_a_fork_of_a_fork_and_an_unfinished_parent_are_refused(tmp_path):
    (f,) = fork(SHIPPED / "sovsim-cpr-scripted-sustainable-s0-2", at=2, seeds=1, out=tmp_path)
    with pytest.raises(ForkError, match="is itself a fork"):
        fork(f, at=3, out=tmp_path / "again")


def test_a_fork_is_its_own_condition_in_the_tables(tmp_path):
    import scarce_lab as sl

    run = SHIPPED / "sovsim-kcpr-scripted-random-s0-2"
    shutil.copytree(run, tmp_path / run.name)
    fork(run, at=2, seeds="0..1", out=tmp_path)
    ds = sl.load(tmp_path)
    conds = set(ds.runs.collect()["condition"].to_list())
    assert conds == {"kcpr", "kcpr,fork@2:none"}
    t = ds.sovsim.agent_rounds
    assert t.filter(t["condition"] == "kcpr,fork@2:none")["run_id"].n_unique() == 2
    table = sl.table(ds).frame  # Table 1: the parent and its forks on rows of their own
    assert sorted(table["condition"].to_list()) == ["kcpr", "kcpr,fork@2:none"]


def test_a_replacement_for_an_agent_who_does_not_act_at_the_step_fails_by_name(tmp_path):
    parent = play(SovSimConfig(condition="cpr", model="scripted/sustainable", game={"rounds": 4},
                               newcomer={"round": 3, "mode": "extra"}), tmp_path)
    with pytest.raises(ForkError, match=r"a4 made no decision in round 2"):
        fork(parent, at=2, out=tmp_path / "f", intervene="replace_decision:agent=a4,decision={value: 3}")


def test_a_parent_with_a_human_seat_is_refused_as_a_fork_error_naming_the_seat(tmp_path):
    """A person's answers are no model calls to replay: the refusal is a ForkError (the CLI
    prints it as one line), not a raw validation error."""
    import io

    import scarce_lab as sl
    from scarce_lab.agents.human import TerminalDesk

    cfg = SovSimConfig(condition="bcpr", model="scripted/greedy", seats={"a2": "human/lin"}, game={"rounds": 2})
    (parent,) = sl.run(cfg, tmp_path / "p", human=TerminalDesk(io.StringIO("mine\n6\nmine\n3\n"), io.StringIO()))
    assert read_manifest(parent).status.value == "complete"
    with pytest.raises(ForkError, match=r"seats\.a2 is 'human/lin'.*no model calls to replay"):
        fork(parent, at=2, seeds="0", out=tmp_path / "f")
    assert not (tmp_path / "f").exists()
