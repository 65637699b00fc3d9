"""SCARCE experiment metrics (scarce_lab.environments.scarce.analysis: base, dynamics, tactics) on hand-made tables."""

import json

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.layout import with_ci_text
from scarce_lab.analysis.readings import describe_extremes
from scarce_lab.environments.scarce.analysis.base import (
    MEMORY_BEHAVIOURS,
    RULE_INVOKING,
    RULE_MAKING,
    assign_stages,
    base_condition,
    cluster_bootstrap_median,
    mean_over_runs,
)
from scarce_lab.environments.scarce.analysis.dynamics import (
    budget_left,
    budget_phase_bids,
    collective_outcomes,
    compare_schedulers,
    language_drift,
    private_chat_use,
    requested_duration_by_subrun,
    richer_worker,
    stage_texts,
    task_outcomes,
    urgency_bids,
    win_continuity,
    win_rates,
    winning_bid_by_stage,
)
from scarce_lab.environments.scarce.analysis.tactics import (
    behaviour_shares,
    bid_revision_share,
    label_distribution,
    labelled_rounds,
    relational_by_half,
    rule_shares_by_stage,
    tactic_shares,
)
from scarce_lab.environments.scarce.tables import (
    CONTENTION_SCHEMA,
    MESSAGE_SCHEMA,
    SUBMISSION_SCHEMA,
    run_settings,
    with_settings,
)

LABEL_SCHEMA = {"run_id": pl.String, "round": pl.Int64, "agent": pl.String, "labels": pl.List(pl.String),
                "n_valid": pl.Int64, "status": pl.String}


def frame(schema, rows):
    base = dict.fromkeys(schema)
    return pl.DataFrame([{**base, **r} for r in rows], schema=schema, orient="row")


def C(run, k, w, **kw):
    return {"run_id": run, "model": "m", "condition": "c", "subrun": 0, "contention": k, "worker": w,
            "n_participants": 2, **kw}


def L(run, k, w, labels, n_valid=3, status="ok"):
    return {"run_id": run, "round": k, "agent": w, "labels": labels, "n_valid": n_valid, "status": status}


def one(df, **where):
    for k, v in where.items():
        df = df.filter(pl.col(k) == v)
    assert df.height == 1, df
    return df.row(0, named=True)


# -- stages, settings ------------------------------------------------------------------
def test_assign_stages_equal_blocks_per_run():
    df = pl.DataFrame({"run_id": ["a"] * 6 + ["b"] * 2, "contention": [0, 1, 2, 3, 4, 5, 10, 12]})
    out = assign_stages(df, 3).sort("run_id", "contention")
    assert out["stage"].to_list() == [1, 1, 2, 2, 3, 3, 1, 2]  # b: ranks 0,1 of 2 -> 0*3//2+1, 1*3//2+1
    halves = assign_stages(df, 2).sort("run_id", "contention")["stage"].to_list()
    assert halves == [1, 1, 1, 2, 2, 2, 1, 2]
    with pytest.raises(ValueError, match="n_stages"):
        assign_stages(df, 0)


def test_run_settings_from_manifest_config():
    runs = pl.DataFrame({"run_id": ["r1", "r2"], "environment": ["scarce", "scarce"], "seed": [3, 4],
                         "config": [json.dumps({"memory": "cross", "mechanism": "revisable", "scheduler": "ballots",
                                                "model": "scripted/fifo", "negotiator_model": "embedded/smollm2",
                                                "reasoning_effort": "low", "rich_worker_budget": 3000}),
                                    json.dumps({"memory": "none", "model": "scripted/edf", "mixed_deadlines": True})]})
    s = run_settings(runs)
    r1, r2 = s.row(0, named=True), s.row(1, named=True)
    assert (r1["memory"], r1["reasoning_effort"], r1["negotiator"], r1["rich_worker_budget"], r1["seed"]) == (
        "cross", "low", "embedded/smollm2", 3000, 3)
    assert (r2["reasoning_effort"], r2["mixed_deadlines"], r2["negotiator"]) == ("default", True, "scripted/edf")
    joined = with_settings(pl.DataFrame({"run_id": ["r2"], "x": [1]}), s, ["memory"])
    assert joined.columns == ["run_id", "x", "memory"] and joined["memory"][0] == "none"


# -- labels ----------------------------------------------------------------------------
def _labels():
    return frame(LABEL_SCHEMA, [
        L("r1", 0, "a", ["reciprocity", "cheap_talk"]), L("r1", 0, "b", []),
        L("r1", 1, "a", ["cheap_talk"]), L("r1", 1, "b", ["explicit_coalition"]),
        L("r2", 5, "a", ["cheap_talk"]), L("r2", 6, "a", []),
        L("r2", 7, "b", ["reciprocity"], n_valid=0, status="insufficient"),  # dropped: no valid judge
    ])


def test_labelled_rounds_drops_unanswered_and_joins():
    ct = frame(CONTENTION_SCHEMA, [C("r1", 0, "a", won=True), C("r1", 0, "b", won=False)])
    r = labelled_rounds(_labels(), ct)
    assert r.height == 6
    assert one(r, run_id="r1", contention=0, worker="a")["won"] is True
    with pytest.raises(ValueError, match="lacks columns"):
        labelled_rounds(pl.DataFrame({"run_id": ["r"]}))


def test_tactic_shares_by_hand():
    r = labelled_rounds(_labels()).with_columns(pl.lit("m").alias("model"))
    out = tactic_shares(r, ["cheap_talk", "reciprocity", "explicit_coalition"],
                          {"reciprocity", "explicit_coalition"}, by=("model",), subrun=None)
    assert out["category"].to_list() == ["cheap_talk", "reciprocity", "explicit_coalition", "relational"]
    # mean over runs of each run's share (r1: 4 labelled rounds, r2: 2)
    ct = one(out, category="cheap_talk")
    assert ct["value"] == pytest.approx((2 / 4 + 1 / 2) / 2) and ct["n"] == 6 and ct["runs"] == 2
    # both runs give 0.5: no spread for a t interval, and a share's interval does not need one:
    # the maximum-variance score interval of a mean of 2 values in [0, 1] (Wilson's form at 1 of 2)
    from scarce_lab.analysis.stats import wilson_ci

    assert (ct["lo"], ct["hi"]) == pytest.approx(wilson_ci(1, 2)[1:])
    rec = one(out, category="reciprocity")
    assert rec["value"] == pytest.approx((1 / 4 + 0) / 2)
    assert 0.0 == rec["lo"] < rec["value"] < rec["hi"] <= 1.0  # hull of t and score over 2 run means, in [0, 1]
    assert one(out, category="relational")["value"] == pytest.approx((2 / 4 + 0) / 2)  # r1:0:a and r1:1:b
    single = tactic_shares(r.filter(pl.col("run_id") == "r1"), ["cheap_talk"], set(), by=("model",),
                             subrun=None)
    assert one(single, category="cheap_talk")["lo"] is None  # one run: no interval


def test_behaviour_shares_and_relational_halves():
    r = labelled_rounds(_labels()).with_columns(pl.lit("subrun").alias("memory"))
    b = behaviour_shares(r, by=("memory",))
    assert b["behaviour"].to_list() == list(MEMORY_BEHAVIOURS)
    assert one(b, behaviour="reciprocity")["value"] == pytest.approx((1 / 4 + 0) / 2)
    assert one(b, behaviour="alliance_formation")["value"] == pytest.approx((1 / 4 + 0) / 2)
    assert one(b, behaviour="alliance_loyalty")["value"] == 0.0
    h = relational_by_half(r, {"reciprocity", "explicit_coalition"}, by=("memory",))
    # r1: contention 0 first half (a: relational, b: not), contention 1 second (b: relational)
    # r2: contention 5 first (not), 6 second (not)
    assert one(h, half="first")["value"] == pytest.approx((1 / 2 + 0) / 2)
    assert one(h, half="second")["value"] == pytest.approx((1 / 2 + 0) / 2)


def test_rule_shares_by_stage():
    labels = frame(LABEL_SCHEMA, [
        L("r1", 0, "a", ["negotiation_neutrality"]), L("r1", 0, "b", ["earliest_deadline_first"]),
        L("r1", 1, "a", ["first_come_first_served", "iterative_bargaining"]), L("r1", 1, "b", []),
    ])
    r = labelled_rounds(labels).with_columns(pl.lit("fixed").alias("mechanism"))
    out = rule_shares_by_stage(r, n_stages=2)
    assert one(out, stage=1, kind="rule_making")["value"] == pytest.approx(0.5)
    assert one(out, stage=1, kind="rule_invoking")["value"] == pytest.approx(0.5)
    assert one(out, stage=2, kind="rule_making")["value"] == pytest.approx(0.5)
    assert one(out, stage=2, kind="rule_invoking")["value"] == pytest.approx(0.5)
    assert not set(RULE_MAKING) & set(RULE_INVOKING)


def test_label_distribution():
    r = labelled_rounds(_labels()).with_columns(pl.lit("low").alias("reasoning_effort"))
    d = label_distribution(r, ["cheap_talk", "reciprocity", "explicit_coalition", "anchoring"])
    assert d["category"].to_list() == ["cheap_talk", "reciprocity", "explicit_coalition", "anchoring"]
    assert d["count"].to_list() == [3, 1, 1, 0]
    assert d["share"].to_list() == pytest.approx([0.6, 0.2, 0.2, 0.0])


# -- communication, outcomes -----------------------------------------------------------
def test_private_chat_use_first_subrun_contested_only():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "a", private_sent=2), C("r1", 0, "b", private_sent=0),
        C("r1", 1, "a", private_sent=1, n_participants=1),  # uncontested: out
        C("r1", 2, "a", private_sent=1, subrun=1),  # second subrun: out
        C("r2", 3, "a", private_sent=0), C("r2", 3, "b", private_sent=0),
    ])
    out = one(private_chat_use(ct))
    assert out["value"] == pytest.approx(1 / 4) and out["n"] == 4 and out["runs"] == 2
    assert one(private_chat_use(ct, subrun=None))["value"] == pytest.approx((2 / 3 + 0) / 2)


def test_task_outcomes():
    st = frame(SUBMISSION_SCHEMA, [
        {"run_id": "r1", "model": "m", "resolved": True, "score": 1.0, "deadline_missed": False},
        {"run_id": "r1", "model": "m", "resolved": False, "score": 0.0, "deadline_missed": True},
        {"run_id": "r2", "model": "m", "resolved": False, "score": 0.5, "deadline_missed": False},
    ])
    out = task_outcomes(st)
    # means over runs of each run's share (r1: 2 submissions, r2: 1)
    assert one(out, metric="full_resolution_rate")["value"] == pytest.approx((1 / 2 + 0) / 2)
    assert one(out, metric="mean_partial_score")["value"] == pytest.approx((0.5 + 0.5) / 2)
    assert one(out, metric="deadline_miss_rate")["value"] == pytest.approx((1 / 2 + 0) / 2)


def test_language_drift_over_stages():
    def M(run, k, w, reasoning, sent=()):
        return {"run_id": run, "model": "m", "contention": k, "worker": w, "reasoning": reasoning,
                "private_sent": json.dumps([{"round": 1, "to": "b", "text": t} for t in sent])}

    msgs = frame(MESSAGE_SCHEMA, [M("r1", 0, "a", "go first", ["please"]), M("r1", 1, "a", "go first"),
                                  M("r2", 0, "a", "x y"), M("r2", 1, "a", "z w")])
    st = stage_texts(msgs, 2)
    assert one(st, run_id="r1", contention=0)["text"] == "go first please"
    out = language_drift(msgs, n_stages=2)
    cos = one(out, stage=2, measure="cosine_prev")
    # r1: cos([go, first, please], [go, first]) = 2 / (sqrt3 * sqrt2); r2: 0
    assert cos["value"] == pytest.approx((2 / (3 ** 0.5 * 2 ** 0.5) + 0.0) / 2)
    assert cos["runs"] == 2
    new = one(out, stage=2, measure="new_word_share")
    assert new["value"] == pytest.approx((0.0 + 1.0) / 2)
    assert one(out, stage=1, measure="cosine_prev")["value"] is None


# -- budgets, deadlines ----------------------------------------------------------------
def test_budget_left_and_phases():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "w0", budget_initial=300, payment=50),
        C("r1", 1, "w0", budget_initial=300, payment=100),  # left 250 -> 0.83
        C("r1", 2, "w0", budget_initial=300, payment=60),   # left 150 -> 0.5
        C("r1", 3, "w0", budget_initial=300, payment=0),    # left 90 -> 0.3
        C("r1", 4, "w0", budget_initial=300, payment=0, subrun=1),  # new subrun: full budget
        C("r1", 0, "w1", budget_initial=0, payment=0),      # zero budget: no phase
    ])
    out = budget_left(ct).sort("worker", "contention")
    assert out["budget_left"].to_list()[:5] == [300, 250, 150, 90, 300]
    assert out["budget_phase"].to_list() == [">66%", ">66%", "33-66%", "<33%", ">66%", None]
    assert one(richer_worker(ct))["rich_worker"] == "w0"
    eq = frame(CONTENTION_SCHEMA, [C("r", 0, "a", budget_initial=5), C("r", 0, "b", budget_initial=5)])
    assert one(richer_worker(eq))["rich_worker"] is None


def test_budget_phase_bids_richer_vs_others():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "w0", budget_initial=3000, payment=0, declared_bid=100, won=True),
        C("r1", 0, "w1", budget_initial=1000, payment=0, declared_bid=20, won=False),
        C("r1", 1, "w0", budget_initial=3000, payment=0, declared_bid=300, won=False),
        C("r1", 1, "w1", budget_initial=1000, payment=0, declared_bid=40, won=True),
        C("r2", 0, "a", budget_initial=1000, declared_bid=7, won=True),  # no richer worker: out
        C("r2", 0, "b", budget_initial=1000, declared_bid=7, won=False),
    ])
    out = budget_phase_bids(ct)
    assert set(out["who"]) == {"richer", "others"} and set(out["budget_phase"]) == {">66%", "all"}
    assert one(out, who="richer", metric="mean_bid", budget_phase=">66%")["value"] == pytest.approx(200)
    assert one(out, who="richer", metric="win_rate", budget_phase=">66%")["value"] == pytest.approx(0.5)
    assert one(out, who="others", metric="mean_bid", budget_phase=">66%")["value"] == pytest.approx(30)
    assert one(out, who="others", metric="win_rate", budget_phase=">66%")["runs"] == 1
    # one phase only: the overall rows equal it
    assert one(out, who="richer", metric="win_rate", budget_phase="all")["value"] == pytest.approx(0.5)


def test_urgency_bids_median_split_and_threshold():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "a", deadline_s=600.0, declared_bid=90), C("r1", 0, "b", deadline_s=1500.0, declared_bid=10),
        C("r1", 1, "a", deadline_s=600.0, declared_bid=70), C("r1", 1, "c", deadline_s=1200.0, declared_bid=30),
        C("r2", 0, "a", deadline_s=900.0, declared_bid=5), C("r2", 0, "b", deadline_s=900.0, declared_bid=5),
    ])  # r2 has one deadline for all: left out
    out = urgency_bids(ct, n_stages=2)
    assert one(out, stage=1, urgent=True)["value"] == 90  # median 1200: only a (600) is urgent
    assert one(out, stage=1, urgent=False)["value"] == 10
    assert one(out, stage=2, urgent=False)["value"] == 30
    thr = urgency_bids(ct, n_stages=1, urgent_below_s=1300)
    assert one(thr, urgent=True)["value"] == pytest.approx((90 + 70 + 30) / 3)


# -- auction dynamics ------------------------------------------------------------------
def test_win_continuity_pairs():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "a", won=True), C("r1", 1, "a", won=True), C("r1", 2, "a", won=False),
        C("r1", 3, "a", won=True, n_participants=1),  # uncontested: not a pair member
        C("r1", 4, "a", won=True, subrun=1),  # other subrun: no pair across subruns
        C("r2", 0, "b", won=False), C("r2", 1, "b", won=True),
    ])
    out = win_continuity(ct)
    won, lost = one(out, given="won"), one(out, given="lost")
    assert (won["value"], won["n"]) == (pytest.approx(0.5), 2)  # a: 0->1 win, 1->2 loss
    assert (lost["value"], lost["n"], lost["runs"]) == (pytest.approx(1.0), 1, 1)  # b: 0 -> 1 win


def test_winning_bid_by_stage_median():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "a", won=True, final_bid=10), C("r1", 0, "b", won=False, final_bid=99),
        C("r1", 1, "a", won=True, final_bid=30), C("r2", 0, "a", won=True, final_bid=20),
        C("r2", 1, "a", won=True, final_bid=50, n_participants=1),  # uncontested: out
        C("r2", 2, "b", won=True, final_bid=40),
    ])
    out = winning_bid_by_stage(ct, n_stages=2)
    s1 = one(out, stage=1)
    assert s1["value"] == 15 and s1["runs"] == 2  # r1 c0 (10), r2 c0 (20)
    assert s1["lo"] is None  # a median's cluster bootstrap is printed from stats.MIN_RUNS_MEDIAN runs on
    assert one(out, stage=2)["value"] == 35  # r1 c1 (30), r2 c2 (40)
    assert cluster_bootstrap_median(pl.DataFrame({"run_id": ["x", "x"], "v": [1, 3]}), "v")["lo"] is None


def test_requested_duration_growth():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "a", subrun=0, requested_duration_s=60), C("r1", 1, "a", subrun=0, requested_duration_s=100),
        C("r1", 2, "a", subrun=1, requested_duration_s=160),
        C("r2", 0, "a", subrun=0, requested_duration_s=50), C("r2", 1, "a", subrun=1, requested_duration_s=50),
        C("r3", 0, "a", subrun=0, requested_duration_s=70),  # one subrun: no growth factor
    ])
    per, growth = requested_duration_by_subrun(ct)
    assert one(per, subrun=0)["value"] == pytest.approx((80 + 50 + 70) / 3)  # mean of the runs' means
    assert one(per, subrun=1)["value"] == pytest.approx((160 + 50) / 2)
    g = one(growth)
    assert g["value"] == pytest.approx((2.0 + 1.0) / 2) and g["runs"] == 2  # r1: 160/80, r2: 50/50
    assert g["lo"] < 1.5 < g["hi"]


# -- schedulers ------------------------------------------------------------------------
def test_collective_outcomes_and_paired_comparison():
    ct = frame(CONTENTION_SCHEMA, [
        C("b0", 0, "a", wait_s=0.0), C("b0", 0, "b", wait_s=30.0),
        C("f0", 0, "a", wait_s=0.0), C("f0", 0, "b", wait_s=50.0), C("f0", 1, "a", wait_s=None),
        C("b1", 0, "a", wait_s=10.0), C("f1", 0, "a", wait_s=10.0),
    ])
    st = frame(SUBMISSION_SCHEMA, [
        {"run_id": r, "deadline_missed": m, "score": s}
        for r, m, s in [("b0", False, 1.0), ("b0", True, 0.0), ("f0", True, 0.0), ("f0", True, 0.0),
                        ("b1", False, 1.0), ("f1", False, 0.5)]])
    out = collective_outcomes(ct, st)
    f0 = one(out, run_id="f0")
    assert (f0["deadline_misses"], f0["total_queue_wait_s"], f0["unstarted_slots"]) == (2, 50.0, 1)
    assert one(out, run_id="b0")["mean_partial_score"] == 0.5
    settings = pl.DataFrame({"run_id": ["b0", "f0", "b1", "f1"], "scheduler": ["ballots", "fifo"] * 2,
                             "seed": [0, 0, 1, 1]})
    cmp = compare_schedulers(with_settings(out, settings))
    fifo_miss = one(cmp, scheduler="fifo", metric="deadline_misses")
    assert fifo_miss["value"] == pytest.approx(1.0)  # runs: 2, 0
    assert fifo_miss["diff"] == pytest.approx(((2 - 1) + (0 - 0)) / 2) and fifo_miss["pairs"] == 2
    wait = one(cmp, scheduler="fifo", metric="total_queue_wait_s")
    assert wait["diff"] == pytest.approx(((50 - 30) + (10 - 10)) / 2)
    assert one(cmp, scheduler="ballots", metric="mean_partial_score")["diff"] == 0.0


def test_ci_text():
    df = pl.DataFrame({"value": [0.5, 0.25, None], "lo": [0.1, None, None], "hi": [0.9, None, None]},
                      schema={"value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64})
    assert with_ci_text(df)["estimate"].to_list() == ["0.50 [0.10, 0.90]", "0.25", "n/a"]


def test_base_condition_filter():
    df = pl.DataFrame({"run_id": ["a", "b", "c"], "scheduler": ["ballots", "fifo", "ballots"],
                       "mechanism": ["fixed"] * 3, "memory": ["subrun", "subrun", "none"],
                       "rich_worker_budget": [None, None, None], "mixed_deadlines": [False] * 3,
                       "reasoning_effort": ["default"] * 3}, schema_overrides={"rich_worker_budget": pl.Int64})
    assert base_condition(df)["run_id"].to_list() == []  # the reference memory is the paper's cross
    assert base_condition(df, memory="subrun")["run_id"].to_list() == ["a"]
    assert base_condition(df, except_=("memory",))["run_id"].to_list() == ["a", "c"]
    assert base_condition(df, except_=("scheduler",), memory="subrun")["run_id"].to_list() == ["a", "b"]


def test_describe_extremes_sentences():
    df = pl.DataFrame({"g": ["a", "b", "c"], "value": [0.2, 0.8, 0.2], "lo": [0.1, 0.7, 0.1],
                       "hi": [0.3, 0.9, 0.3], "runs": [3, 3, 3], "se": [0.02, 0.02, 0.02]})
    s = describe_extremes(df, ["g"], "the share")
    assert s.startswith("In this dataset, the share is highest for g=b (0.80 [0.70, 0.90]) and lowest for g=a "
                        "(0.20 [0.10, 0.30], tied with 1 other group(s)); Welch t-tests over run means for 3 of "
                        "the 3 pairs of groups, Holm-adjusted (3 comparisons): 2 differ at the 5% level "
                        "(highest vs lowest: adjusted p = ")
    assert s.endswith(", a difference at the 5% level).")
    wide = df.with_columns(pl.Series("se", [0.3, 0.3, 0.3]))
    assert describe_extremes(wide, ["g"], "the share").endswith(", not a difference at the 5% level).")
    bh = describe_extremes(df, ["g"], "the share", correction="fdr_bh")
    assert "Benjamini-Hochberg-adjusted (3 comparisons)" in bh
    with pytest.raises(ValueError, match="correction"):
        describe_extremes(df, ["g"], "x", correction="bonferonni")
    same = df.with_columns(pl.lit(0.5).alias("value"))
    assert "in every group (3 groups)" in describe_extremes(same, ["g"], "x")
    assert "cannot tell the groups apart" in describe_extremes(same, ["g"], "x")
    assert "no data" in describe_extremes(df.filter(pl.col("g") == "z"), ["g"], "x")
    assert "no test was run" in describe_extremes(df.drop("se"), ["g"], "x")


def test_the_scarce_view_on_shipped_scripted_data():
    from pathlib import Path

    path = Path(__file__).parents[2] / "data" / "scarce" / "scripted" / "models"
    if not path.exists():
        pytest.skip(f"shipped dataset {path} absent")
    t = sl.load([path]).scarce
    assert t.settings["run_id"].n_unique() == t.settings.height > 0
    assert {"memory", "seed", "negotiator"} <= set(t.contentions.columns)
    assert t.submissions["run_id"].n_unique() <= t.settings.height


def test_bid_revision_share():
    ct = frame(CONTENTION_SCHEMA, [
        C("r1", 0, "a", mechanism="revisable", declared_bid=10, final_bid=15),
        C("r1", 0, "b", mechanism="revisable", declared_bid=10, final_bid=10),
        C("r2", 0, "a", mechanism="fixed", declared_bid=5, final_bid=5),
        C("r2", 1, "a", mechanism="fixed", declared_bid=None, final_bid=None),  # no declaration: out
    ])
    out = bid_revision_share(ct)
    assert one(out, mechanism="revisable")["value"] == pytest.approx(0.5)
    assert (one(out, mechanism="fixed")["value"], one(out, mechanism="fixed")["n"]) == (0.0, 1)


def test_mean_over_runs_t_interval_and_clipping():
    r = mean_over_runs([0.2, 0.4, None, float("nan")])
    assert (r["value"], r["runs"]) == (pytest.approx(0.3), 2)
    # t(0.975, 1) = 12.706; se = 0.1 -> 0.3 +- 1.2706
    assert r["lo"] == pytest.approx(0.3 - 1.2706, abs=1e-3)
    clipped = mean_over_runs([0.2, 0.4], bounds=(0.0, 1.0))
    assert (clipped["lo"], clipped["hi"]) == (0.0, 1.0)
    assert mean_over_runs([0.5])["lo"] is None


def test_describe_extremes_single_run_groups():
    df = pl.DataFrame({"g": ["a", "b"], "value": [0.2, 0.8], "lo": [None, 0.7], "hi": [None, 0.9], "runs": [1, 3],
                       "se": [None, 0.05]}, schema_overrides={"lo": pl.Float64, "hi": pl.Float64, "se": pl.Float64})
    assert describe_extremes(df, ["g"], "x").endswith("no pair of groups can be tested (a group from a single run, "
                                                        "or whose runs all give the same value, has no standard "
                                                        "error), so the data cannot separate them.")
    one_group = df.filter(pl.col("g") == "a")
    assert describe_extremes(one_group, ["g"], "x") == (
        "In this dataset, x is 0.20 for g=a (at most 1 run(s) per group; no interval from a single run).")


def test_win_rate_of_one_policy_per_run_is_named_mechanical():
    """Every contender of these runs is the same model: the win rate is contentions /
    participations by construction, and the sentence says so."""
    ct = frame(CONTENTION_SCHEMA, [C(r, k, w, won=(w == "a")) for r in ("r1", "r2") for k in (0, 1) for w in "ab"])
    out = win_rates(ct)
    assert out["by_construction"].to_list() == [True, True]
    assert one(out, metric="win_rate_contested")["value"] == pytest.approx(0.5)
    s = describe_extremes(out.filter(pl.col("metric") == "win_rate"), ["model"], "the win rate")
    assert "by construction" in s and "Not a finding; no comparison is made." in s
    part = ct.filter(pl.col("worker") == "a")  # a group that is not every contender
    assert win_rates(part)["by_construction"].to_list() == [False, False]


def test_win_rates_all_rounds_and_contested():
    ct = frame(CONTENTION_SCHEMA, [C("r1", 0, "a", won=True, n_participants=1), C("r1", 1, "a", won=False),
                                   C("r2", 0, "a", won=True), C("r2", 1, "a", won=True)])
    out = win_rates(ct)
    assert one(out, metric="win_rate")["value"] == pytest.approx((1 / 2 + 2 / 2) / 2)
    assert one(out, metric="win_rate_contested")["value"] == pytest.approx((0 / 1 + 2 / 2) / 2)
    assert one(out, metric="win_rate_contested")["n"] == 3


def test_group_labels_are_short_distinct_and_never_merge_conditions():
    """Chart labels were 'model | <full condition>' cut by the renderer to the same
    text for different conditions; now: the model, then what differs between its
    conditions; one label per (model, condition), never one label for two."""
    import polars as pl

    from scarce_lab.analysis.labels import condition_parts
    from scarce_lab.analysis.layout import group_labels

    assert condition_parts('ballots_fixed_mem-cross,tasks=["rev","tac"],workers=2') == [
        "ballots_fixed_mem-cross", 'tasks=["rev","tac"]', "workers=2"]
    ref = 'ballots_fixed_mem-cross,rich_worker_budget=None,tasks=["rev","tac"],workers=2'
    df = pl.DataFrame({
        "model": ["emb", "emb", "emb", "emb", "scr", "scr", "one"],
        "condition": [ref, ref.replace("workers=2", "workers=3"),
                      ref.replace("fixed", "revisable"), ref, "a,x=None", "a,x=1500", "c,y=2"],
        "v": range(7),
    })
    g = group_labels(df)
    got = dict(zip(zip(g["model"], g["condition"], strict=True), g["group"], strict=True))
    assert got[("emb", ref)] == "emb | ballots_fixed_mem-cross"
    assert got[("emb", ref.replace("workers=2", "workers=3"))] == "emb | workers=3"
    assert got[("emb", ref.replace("fixed", "revisable"))] == "emb | ballots_revisable_mem-cross"
    assert got[("scr", "a,x=1500")] == "scr | x=1500" and got[("scr", "a,x=None")] == "scr | a"
    assert got[("one", "c,y=2")] == "one"
    assert g.height == df.height and g["v"].to_list() == list(range(7))
    pairs = g.select("model", "condition").unique().height
    assert g.select("model", "condition", "group").unique()["group"].n_unique() == pairs


def test_sentences_name_one_group_not_a_model_of_several_conditions():
    """'win rate is highest for model=embedded/smollm2' was said of one of that model's
    three conditions (2- and 3-worker runs)."""
    import polars as pl

    from scarce_lab.analysis.layout import group_labels
    from scarce_lab.analysis.readings import describe_extremes

    df = group_labels(pl.DataFrame({
        "model": ["emb", "emb", "scr"], "condition": ["a,workers=2", "a,workers=3", "a,workers=4"],
        "value": [0.5, 0.33, 0.25], "lo": [0.4, 0.2, 0.2], "hi": [0.6, 0.4, 0.3], "n": [4, 6, 8], "runs": [2, 2, 2],
    }))
    s = describe_extremes(df, ["model"], "the win rate")
    assert "highest for group=emb | a (" in s and "lowest for group=scr" in s  # emb | workers=3 is the other
    with pytest.raises(ValueError, match="name several rows"):
        describe_extremes(df.drop("group", "condition"), ["model"], "the win rate")
