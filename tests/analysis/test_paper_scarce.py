"""The SCARCE paper's definitions, one test for each place where this toolkit departed
from them.

The paper's own text was not within reach when these were written (it is in none of
the stored corpora this project can search). Each docstring therefore quotes the
paper's rule as the project's record states it: the specification written from the
paper, and the list of departures checked against it.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.pooling import PoolingError, check_no_pooling
from scarce_lab.environments.scarce.analysis.base import (
    MEMORY_BEHAVIOURS,
    RULE_INVOKING,
    RULE_MAKING,
)
from scarce_lab.environments.scarce.analysis.dynamics import (
    budget_phase_bids,
    private_chat_use,
    winning_bid_by_stage,
)
from scarce_lab.environments.scarce.analysis.metrics import summary
from scarce_lab.environments.scarce.analysis.tactics import rule_shares_by_stage, tactic_shares
from scarce_lab.environments.scarce.config import (
    PAPER_RICH_WORKER_BUDGET,
    ScarceConfig,
    supported_reasoning_efforts,
)
from scarce_lab.environments.scarce.efforts import REASONING_EFFORTS, strongest_efforts
from scarce_lab.environments.scarce.tables import CONTENTION_SCHEMA, SUBMISSION_SCHEMA
from scarce_lab.environments.scarce.world import (
    MEMORY_HORIZONS,
    PAPER_MEMORY,
    ClockConfig,
    Contention,
    MechanismConfig,
    Phase,
    Request,
    ScarceWorld,
    WorldRules,
)
from scarce_lab.judge import load_taxonomy
from tests.runners.test_scarce_run import FakeSandbox, events, fake_grade, of, toy_task


def frame(schema, rows):
    base = dict.fromkeys(schema)
    return pl.DataFrame([{**base, **r} for r in rows], schema=schema, orient="row")


def C(run, k, w, **kw):
    return {"run_id": run, "model": "m", "condition": "c", "settings": "{}", "subrun": 0, "contention": k,
            "worker": w, "n_participants": 2, **kw}


def one(df, **where):
    for k, v in where.items():
        df = df.filter(pl.col(k) == v)
    assert df.height == 1, df
    return df.row(0, named=True)


def _through_reasoning(c: Contention) -> None:
    from scarce_lab.environments.scarce.world import Declaration

    for w in c.participants:
        c.declare(w, Declaration(desired_position=1, desired_duration_seconds=30, bid_price=0))
    c.advance()
    for w in c.participants:
        c.reason(w, "why")
    assert c.advance() == Phase.private


# -- the rules ---------------------------------------------------------------------------
def test_private_messages_let_the_recipient_reply_within_r_rounds():
    """Paper: "Optional private messages: directed, seen only by sender
    and recipient; a recipient may reply; at most R rounds (configurable)." Departures:
    "the default lets a recipient answer (today R=1, so no reply is possible)"."""
    assert MechanismConfig().private_rounds == 2
    assert WorldRules(workers=("a",), budgets={"a": 1}, deadlines_s={"a": 60}).private_rounds == 2
    assert ScarceConfig().private_rounds == 2
    reqs = [Request(worker=w, time_s=0.0, duration_s=30) for w in ("a", "b", "c")]
    c = Contention(0, reqs, MechanismConfig())
    _through_reasoning(c)
    c.send("a", "b", "may I go first?")
    assert c.advance() == Phase.private and c.private_round == 2  # round 2: b can answer
    c.send("b", "a", "yes, go ahead")
    assert [m["text"] for m in c.private_view("a")["private_messages"]] == ["may I go first?", "yes, go ahead"]
    assert c.private_view("c")["private_messages"] == []  # seen only by sender and recipient
    assert c.advance() == Phase.ballots  # at most R = 2 rounds
    # a round in which nobody writes leaves nothing to answer: the phase ends
    c3 = Contention(1, reqs, MechanismConfig(private_rounds=3))
    _through_reasoning(c3)
    c3.send("a", "b", "hello")
    assert c3.advance() == Phase.private
    assert c3.advance() == Phase.ballots and c3.private_round == 2  # round 2 silent: no round 3


def test_save_persistent_memory_costs_no_deadline_time(tmp_path):
    """Paper: "save_persistent_memory(text) (free, costs no deadline
    time)"."""
    w = ScarceWorld(WorldRules(workers=("a",), budgets={"a": 10}, deadlines_s={"a": 100},
                               clock=ClockConfig(model_call_s=20, scripted_call_s=2)))
    assert w.decision_cost(scripted=False, tool="save_persistent_memory") == 0.0
    assert w.decision_cost(scripted=True, tool="read_file") == 2.0
    assert w.decision_cost(scripted=False, tool="run_command") == 20.0
    # in a run: the step after a memory save starts when the save started
    from scarce_lab.environments.scarce.runner import run_scarce

    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/fifo", seed=1)
    run = run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "s"))
    steps = [e for e in of(events(run), "solver_action")]
    saves = [i for i, e in enumerate(steps) if e["payload"]["tool"] == "save_persistent_memory"]
    assert saves
    for i in saves:
        nxt = next(e for e in steps[i + 1:] if e["agent"] == steps[i]["agent"])
        assert nxt["t"] == steps[i]["t"]


def test_memory_horizon_default_is_the_papers_cross_subrun_memory():
    """Paper: "the paper's cross-subrun memory is what the
    memory-horizon experiment varies (keep none, subrun, cross, and say which is the
    paper's baseline)"; the specification: "cross-subrun (history and saved memories
    carried over)"."""
    assert MEMORY_HORIZONS == ("none", "subrun", "cross")
    assert PAPER_MEMORY == "cross" == ScarceConfig().memory
    assert WorldRules(workers=("a",), budgets={"a": 1}, deadlines_s={"a": 60}).memory == "cross"
    assert ScarceConfig().base_condition == "ballots_fixed_mem-cross"


def test_budget_asymmetry_gives_one_worker_500_extra_credits():
    """Paper: "the budget-asymmetry experiment gives one worker 500
    extra credits (1,500 vs 1,000) as in the paper"."""
    assert PAPER_RICH_WORKER_BUDGET == 1500
    cfg = ScarceConfig(workers=4, rich_worker_budget=PAPER_RICH_WORKER_BUDGET)
    assert cfg.budgets_for() == {"w0": 1500, "w1": 1000, "w2": 1000, "w3": 1000}


def test_table_9_takes_the_highest_effort_levels_litellm_accepts_for_a_model():
    """Paper: "Table 9 compares the highest reasoning-effort levels
    litellm accepts for a model (for example high vs xhigh or max), not low vs high"."""
    assert {"xhigh", "max"} <= set(REASONING_EFFORTS)
    assert ScarceConfig(llm={"reasoning_effort": "max"}).llm.reasoning_effort == "max"
    assert strongest_efforts(("minimal", "low", "medium", "high", "xhigh")) == ("high", "xhigh")
    assert strongest_efforts(("none", "low", "medium", "high", "xhigh", "max")) == ("xhigh", "max")
    with pytest.raises(ValueError, match="ultra"):
        strongest_efforts(("high", "ultra"))
    # per model, where litellm knows the model's levels (litellm is pinned)
    gpt5 = supported_reasoning_efforts("gpt-5")
    assert gpt5 is not None and "high" in gpt5 and "xhigh" not in gpt5
    with pytest.raises(ValueError, match=r"reasoning_effort.*'xhigh'.*(is not accepted by|would not be sent to) model 'gpt-5'"):
        ScarceConfig(model="gpt-5", llm={"reasoning_effort": "xhigh"})
    assert ScarceConfig(model="gpt-5", llm={"reasoning_effort": "high"}).llm.reasoning_effort == "high"
    assert supported_reasoning_efforts("embedded/smollm2") is None  # ignored there: nothing to check
    assert supported_reasoning_efforts("no-such-provider/no-such-model") is None


# -- the metrics -----------------------------------------------------------------------
def test_win_rate_is_the_share_of_all_rounds_first_in_the_queue():
    """Paper: "Win rate is the share of rounds an agent is first in
    the queue (all rounds, not only contested ones; report the contested variant beside
    it if useful)"."""
    ct = frame(CONTENTION_SCHEMA, [
        C("r", 0, "a", won=True, n_participants=1, declared_bid=0, desired_duration_s=30, private_sent=0),
        C("r", 1, "a", won=False, n_participants=2, declared_bid=0, desired_duration_s=30, private_sent=0),
        C("r", 1, "b", won=True, n_participants=2, declared_bid=0, desired_duration_s=30, private_sent=0),
        C("r", 2, "a", won=True, n_participants=2, declared_bid=0, desired_duration_s=30, private_sent=0),
        C("r", 2, "b", won=False, n_participants=2, declared_bid=0, desired_duration_s=30, private_sent=0),
    ]).with_columns(pl.when(pl.col("worker") == "a").then(pl.lit("A")).otherwise(pl.lit("B")).alias("model"))
    st = frame(SUBMISSION_SCHEMA, [{"run_id": "r", "model": "A", "condition": "c", "settings": "{}", "score": 1.0,
                                    "deadline_missed": False}])
    a = one(summary(ct, st), model="A")
    assert a["win_rate"] == pytest.approx(2 / 3)  # first in 2 of its 3 rounds, the uncontested one included
    assert a["win_rate_contested"] == pytest.approx(1 / 2)


def test_table_1_and_figure_14_are_computed_on_the_first_subrun():
    """Paper: "Table 1 and Figure 14 are computed on a single subrun
    (the first) as in the paper"."""
    rounds = pl.DataFrame({"run_id": ["r"] * 4, "contention": [0, 1, 2, 3], "worker": ["a"] * 4,
                           "subrun": [0, 0, 1, 1], "model": ["m"] * 4,
                           "labels": [["reciprocity"], [], ["reciprocity"], ["reciprocity"]]})
    t1 = tactic_shares(rounds, ["reciprocity"], {"reciprocity"})
    assert one(t1, category="reciprocity")["value"] == pytest.approx(1 / 2) and one(t1, category="reciprocity")["n"] == 2
    assert one(tactic_shares(rounds, ["reciprocity"], set(), subrun=None), category="reciprocity")["value"] == 0.75
    ct = frame(CONTENTION_SCHEMA, [C("r", 0, "a", subrun=0, private_sent=1), C("r", 0, "b", subrun=0, private_sent=0),
                                   C("r", 1, "a", subrun=1, private_sent=1), C("r", 1, "b", subrun=1, private_sent=1)])
    assert private_chat_use(ct)["value"].item() == pytest.approx(1 / 2)  # Figure 14: subrun 0 only


def test_table_10_reports_the_combined_rule_share_by_stage():
    """Paper: "Table 10 reports the combined rule-making plus
    rule-invoking share by stage (keep the split beside it)"."""
    make, inv = RULE_MAKING[0], RULE_INVOKING[0]
    rounds = pl.DataFrame({"run_id": ["r"] * 4, "contention": [0, 0, 0, 0], "worker": list("abcd"),
                           "mechanism": ["fixed"] * 4, "labels": [[make], [inv], [make, inv], []]})
    out = rule_shares_by_stage(rounds, n_stages=1)
    assert one(out, kind="rules")["value"] == pytest.approx(3 / 4)
    assert one(out, kind="rule_making")["value"] == pytest.approx(2 / 4)
    assert one(out, kind="rule_invoking")["value"] == pytest.approx(2 / 4)


def test_table_8_bid_drift_has_stages_1_to_4():
    """Paper: "Table 8's bid drift uses stages 1 to 4"."""
    ct = frame(CONTENTION_SCHEMA, [C("r", k, "a", won=True, final_bid=10 * k) for k in range(8)])
    out = winning_bid_by_stage(ct)
    assert out["stage"].to_list() == [1, 2, 3, 4]
    assert out["value"].to_list() == [5, 25, 45, 65]  # the median of each pair of contentions


def test_table_7_reports_the_richer_workers_overall_win_rate():
    """Paper: "Table 7's overall win rate of the richer worker is
    reported" (beside the rate per budget phase)."""
    ct = frame(CONTENTION_SCHEMA, [
        C("r", 0, "w0", budget_initial=1500, payment=1200, declared_bid=1200, won=True),
        C("r", 0, "w1", budget_initial=1000, payment=0, declared_bid=0, won=False),
        C("r", 1, "w0", budget_initial=1500, payment=0, declared_bid=0, won=False),  # 20% left: < 33%
        C("r", 1, "w1", budget_initial=1000, payment=0, declared_bid=0, won=True),
        C("r", 2, "w0", budget_initial=1500, payment=0, declared_bid=0, won=False, n_participants=1),
    ])
    out = budget_phase_bids(ct)
    assert one(out, who="richer", metric="win_rate", budget_phase=">66%")["value"] == 1.0
    assert one(out, who="richer", metric="win_rate", budget_phase="<33%")["value"] == 0.0
    overall = one(out, who="richer", metric="win_rate", budget_phase="all")
    assert overall["value"] == pytest.approx(1 / 3) and overall["n"] == 3
    assert one(out, who="richer", metric="win_rate_contested", budget_phase="all")["value"] == pytest.approx(1 / 2)


def test_relational_group_is_the_papers_four_tactics():
    """Paper: "The relational group of tactics matches the paper's
    (reciprocity, alliance formation, alliance loyalty, reputation)"."""
    tax = load_taxonomy("scarce")
    assert tax.relational_ids == {"reciprocity", "explicit_coalition", "exclusive_coalition",
                                  "coalition_loyalty", "reputation_maintenance"}
    assert set(MEMORY_BEHAVIOURS) == {"reciprocity", "alliance_formation", "alliance_loyalty", "reputation"}
    assert {i for ids in MEMORY_BEHAVIOURS.values() for i in ids} == tax.relational_ids


# -- never pool ------------------------------------------------------
def test_metrics_refuse_to_pool_runs_whose_settings_differ():
    """Never pool: "a table groups by all of them, shows the differing settings in
    the condition label, and refuses (or warns loudly, with the settings that differ) when
    asked to pool runs whose settings differ"."""
    s4 = json.dumps({"workers": 4, "memory": "cross"}, sort_keys=True, separators=(",", ":"))
    s3 = json.dumps({"workers": 3, "memory": "cross"}, sort_keys=True, separators=(",", ":"))
    s3n = json.dumps({"workers": 3, "memory": "none"}, sort_keys=True, separators=(",", ":"))
    ct = frame(CONTENTION_SCHEMA, [C("r1", 0, "a", settings=s4, condition="x,workers=4", won=True, final_bid=1),
                                   C("r2", 0, "a", settings=s3, condition="x,workers=3", won=True, final_bid=2)])
    with pytest.raises(PoolingError, match=r"group model=m.*workers: 3, 4"):
        winning_bid_by_stage(ct)
    assert winning_bid_by_stage(ct, by=("model", "condition")).height == 2
    # a comparison may vary what its columns name, and nothing else
    mem = pl.DataFrame({"memory": ["cross", "none"], "settings": [s3, s3n], "model": ["m", "m"]})
    check_no_pooling(mem, ["memory"])
    check_no_pooling(mem.with_columns(pl.lit("m").alias("model")), [], allow=("memory",))
    with pytest.raises(PoolingError, match="memory"):
        check_no_pooling(mem, [])
    # one negotiator model with two solver models is two conditions, too
    two = pl.DataFrame({"model": ["m", "m"], "solver_model": ["scripted/fifo", "scripted/skilled:0.5"],
                        "settings": [s3, s3]})
    with pytest.raises(PoolingError, match="solver_model"):
        check_no_pooling(two, ["model"])
    # labels that collide across separately labelled tables are caught as well
    clash = ct.with_columns(pl.lit("same").alias("condition"))
    st = frame(SUBMISSION_SCHEMA, [{"run_id": "r1", "model": "m", "condition": "same", "settings": s4},
                                   {"run_id": "r2", "model": "m", "condition": "same", "settings": s3}])
    with pytest.raises(PoolingError, match="workers"):
        summary(clash.with_columns(pl.lit(0).alias("declared_bid"), pl.lit(1).alias("desired_duration_s"),
                                   pl.lit(0).alias("private_sent")), st)


def test_a_model_negotiators_client_settings_define_the_condition():
    """Never pool: "a condition is every setting that defines it". With a scripted
    solver and a model negotiator, the negotiator's reasoning effort and sampling are
    condition settings (they were dropped, so effort-low, effort-high and the reference run
    of the embedded dataset shared one condition)."""
    lo = ScarceConfig(negotiator_model="embedded/smollm2", llm={"reasoning_effort": "low"})
    hi = ScarceConfig(negotiator_model="embedded/smollm2", llm={"reasoning_effort": "high"})
    assert lo.condition_settings()["llm.reasoning_effort"] == "low" and lo.run_id != hi.run_id
    assert not any(k.startswith("llm.") for k in ScarceConfig().condition_settings())  # all scripted
    # manifests written before: the tables read the settings back from the config
    from pathlib import Path

    from scarce_lab.environments.scarce.tables import contentions_table

    ct = contentions_table(Path(__file__).resolve().parents[2] / "data" / "scarce" / "embedded")
    effort = ct.filter(pl.col("condition").str.contains("reasoning_effort=(low|high)"))
    assert effort["settings"].n_unique() == 2 == effort["condition"].n_unique()


def test_datasets_loaded_together_get_labels_unique_per_settings():
    """Conditions are told apart by every setting. Two datasets that
    each vary nothing (all richer-worker runs; all mixed-deadline runs) would both be
    labelled by their base condition alone; loaded together they must not share a label."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "data" / "scarce" / "scripted"
    T = sl.load([data / "budget", data / "deadlines"]).scarce
    pairs = T.contentions.select("condition", "settings").unique()
    assert pairs["condition"].n_unique() == pairs["settings"].n_unique() == 2
    out = budget_phase_bids(T.contentions, by=("model", "condition"))
    assert out.height and out["condition"].str.contains("rich_worker_budget=1500").all()
