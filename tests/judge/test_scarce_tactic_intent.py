"""Ground truth for the tactic judges: the strategic scripted negotiators record, as a
researcher-only event, the taxonomy categories their texts were written to express; the
judge units of such a dataset carry them as ``gold``, so a judge panel is scored against
them as against CaSiNo's expert labels."""

from __future__ import annotations

import json

import polars as pl
import pytest

from scarce_lab.environments.scarce.agents.scripted import (
    _ALLY,
    _ASK_RETURN,
    _OFFER_RETURN,
    INTENDED_TACTICS,
    _tag,
)
from scarce_lab.environments.scarce.judge_units import units_from_dataset
from scarce_lab.environments.scarce.tables import messages_table
from scarce_lab.judge.taxonomy import load_taxonomy
from scarce_lab.judge.validation import validate_panel
from tests.agents.test_scarce_scripted import _skilled_run
from tests.runners.test_scarce_run import events, of

TAX = load_taxonomy("scarce")


def test_every_intended_category_is_a_taxonomy_id():
    assert {c for cats in INTENDED_TACTICS.values() for c in cats} <= set(TAX.ids)
    # the message tags the recipients parse are the keys of the ground truth
    for template in (_OFFER_RETURN, _ASK_RETURN, _ALLY):
        assert _tag(template) in INTENDED_TACTICS


@pytest.fixture(scope="module")
def strategic_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("intent")
    run = _skilled_run(tmp, seed=3, subruns=1, workers=4, deadline_min=10.0)
    return tmp, run


def test_intents_follow_the_texts_they_annotate_and_no_agent_sees_them(strategic_run):
    _, run = strategic_run
    evs = events(run)
    intents = of(evs, "tactic_intent")
    assert intents, "a strategic run with replies records what its texts meant"
    by_seq = {e["seq"]: e for e in evs}
    for e in intents:
        assert e["visibility"] == "researcher" and e["visible_to"] == []
        assert set(e["payload"]["tactics"]) <= set(TAX.ids) and e["payload"]["tactics"]
        # the annotated text is the same worker's event just before it
        prev = by_seq[e["seq"] - 1]
        assert prev["agent"] == e["agent"] and prev["kind"] == e["payload"]["of_kind"]
        if prev["kind"] == "private_message":
            assert prev["payload"]["private_round"] == e["payload"]["private_round"]
            tag = _tag(prev["payload"]["text"])
            expected = set(INTENDED_TACTICS["ally-loyal" if "this time I rank you first" in prev["payload"]["text"]
                                            else tag])
            assert set(e["payload"]["tactics"]) == expected
    kinds = {e["payload"]["of_kind"] for e in intents}
    assert "private_message" in kinds


def test_units_carry_the_ground_truth_and_a_judge_is_scored_against_it(strategic_run):
    tmp, _ = strategic_run
    msgs = messages_table(tmp)
    assert msgs["intended_tactics"].null_count() == 0
    units = units_from_dataset(tmp, gold="intended")
    with_truth = [u for u in units if u.gold]
    assert with_truth and all(set(u.gold) <= set(TAX.ids) for u in units)
    # a unit's gold is the union of what its reasoning and its messages meant
    row = msgs.filter(pl.col("intended_tactics") != "[]").row(0, named=True)
    unit = next(u for u in units if u.run_id == row["run_id"] and u.round == row["contention"]
                and u.agent == row["worker"])
    assert unit.gold == json.loads(row["intended_tactics"])

    from scarce_lab.judge.judges import make_judges
    from scarce_lab.llm import LLMClient, LLMSettings

    client = LLMClient(LLMSettings(cache=False, max_retries=0))
    # judge a always says "reciprocity" (quoting a phrase every unit's reasoning has); judge b says nothing
    always = {"mock_response": json.dumps({"labels": [{"label": "reciprocity", "evidence": "I ask for position"}]})}
    silent = {"mock_response": json.dumps({"labels": []})}
    judges = make_judges(["openai/mock-a", "openai/mock-b"])
    report = validate_panel(units, TAX, judges, client=client, progress=False,
                            call_kwargs={judges[0].name: always, judges[1].name: silent})
    share = sum("reciprocity" in u.gold for u in units) / len(units)
    assert 0 < share < 1
    a = report.per_label[judges[0].name].filter(pl.col("label") == "reciprocity").row(0, named=True)
    assert a["recall"] == 1.0 and a["precision"] == pytest.approx(share)
    b = report.per_label[judges[1].name].filter(pl.col("label") == "reciprocity").row(0, named=True)
    assert b["recall"] == 0.0


def test_datasets_without_ground_truth_are_refused_for_validation(tmp_path):
    from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    cfg = ScarceConfig(workers=2, subruns=1, model="scripted/skilled:0.5", negotiator_model="scripted/fifo", seed=0)
    run_scarce(cfg, tmp_path, tasks=[toy_task(0), toy_task(1)], grade_fn=fake_grade,
               sandbox=FakeSandbox(tmp_path / "sbx"))
    assert messages_table(tmp_path)["intended_tactics"].null_count() == messages_table(tmp_path).height
    with pytest.raises(ValueError, match="record no intended tactics"):
        units_from_dataset(tmp_path, gold="intended")
    with pytest.raises(ValueError, match="gold must be"):
        units_from_dataset(tmp_path, gold="expert")


def test_tactic_tables_run_on_the_scripted_ground_truth(strategic_run):
    from scarce_lab.environments.scarce.analysis.tactics import (
        labelled_rounds,
        labels_from_intent,
        tactic_shares,
    )
    from scarce_lab.environments.scarce.tables import contentions_table

    tmp, _ = strategic_run
    labels = labels_from_intent(messages_table(tmp))
    assert set(labels["source"]) == {"scripted intent"}
    rounds = labelled_rounds(labels, contentions_table(tmp))
    shares = tactic_shares(rounds, TAX.ids, TAX.relational_ids, by=("model",))
    reci = shares.filter(pl.col("category") == "reciprocity").row(0, named=True)
    truth = units_from_dataset(tmp, gold="intended", keep_empty=True)
    first = [u for u in truth if u.run_id and rounds.filter((pl.col("contention") == u.round)
                                                            & (pl.col("worker") == u.agent)
                                                            & (pl.col("subrun") == 0)).height]
    assert reci["model"] == "scripted/strategic"
    assert reci["value"] == pytest.approx(sum("reciprocity" in u.gold for u in first) / len(first))
    with pytest.raises(ValueError, match="no run records intended tactics"):
        labels_from_intent(messages_table(tmp).with_columns(intended_tactics=pl.lit(None, pl.String)))


def test_judge_validate_scores_a_judge_against_a_scripted_dataset(strategic_run, monkeypatch):
    """``scarce-lab judge validate --data DATASET --taxonomy scarce``: a keyword judge
    that labels "deadline" as earliest-deadline-first recovers that category of the
    ground truth (every scripted text meaning it says "deadline") and no other."""
    from typer.testing import CliRunner

    import scarce_lab.cli.judge as cli
    from scarce_lab.cli import app
    from scarce_lab.llm import LLMSettings
    from tests.cli.test_judge_cli import RuleClient

    monkeypatch.setattr(cli, "_client", lambda *a, **k: RuleClient(LLMSettings(cache=False, max_retries=0)))
    tmp, _ = strategic_run
    r = CliRunner().invoke(app, ["judge", "validate", "--data", str(tmp), "--taxonomy", "scarce", "--judges",
                                 "openai/a", "--format", "json", "--no-progress"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    per = {x["label"]: x for x in out["scores"]["j1"]["per_label"]}
    edf = per["earliest_deadline_first"]
    assert edf["support"] > 0 and edf["recall"] == 1.0 and edf["precision"] == 1.0
    assert per["reciprocity"]["support"] > 0 and per["reciprocity"]["recall"] < 1.0
    r = CliRunner().invoke(app, ["judge", "validate", "--data", str(tmp / "nothing"), "--taxonomy", "scarce",
                                 "--judges", "openai/a", "--no-progress"])
    assert r.exit_code == 2


@pytest.mark.slow
def test_reasoning_and_message_name_the_same_worker_whatever_the_hash_seed():
    """Two workers waited behind w0 in the same contention: the public reasoning and the
    private offer name the same one (ties by name, as in ``message``), and the choice
    does not depend on the order of a set (which changes with PYTHONHASHSEED)."""
    import os
    import subprocess
    import sys

    code = (
        "import asyncio\n"
        "from tests.agents.test_scarce_scripted import contention, declared, view, past\n"
        "from scarce_lab.environments.scarce.agents import StrategicNegotiator\n"
        "n = StrategicNegotiator('reciprocal')\n"
        "c = declared(contention())\n"
        "v = view(c, 'w0', history=[past(1, ['w0', 'w2', 'w1'])])\n"
        "r = asyncio.run(n.reason(v)).value\n"
        "m = asyncio.run(n.message(v)).value\n"
        "print(r.split(' waited')[0].split()[-1], m[0])\n"
    )
    seen = set()
    for seed in ("0", "1", "2", "3"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.getcwd()}).stdout.split()
        assert out[0] == out[1], out  # the reasoning names the worker the offer goes to
        seen.add(out[0])
    assert seen == {"w2"}  # ties by name, the largest, whatever the hash seed
