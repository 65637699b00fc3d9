"""``scarce-lab judge label`` / ``judge validate`` with a keyword-rule fake judge
(litellm mock responses through the real client)."""

import json
import re

import polars as pl
import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.llm import LLMClient, LLMSettings
from tests.judge.test_judge_units import make_scarce_run

RULES = {  # words in the speaker's text -> label
    "deadline": "earliest_deadline_first",
    "promised": "reciprocity",
    "next time": "reciprocity",
    "shortest": "shortest_job_first",
    "need": "self-need",
    "hi": "small-talk",
}


class RuleClient(LLMClient):
    """Answers with the labels whose keyword occurs in the unit's own text."""

    async def adecide(self, **kw):
        user = kw["messages"][1]["content"]
        own = user.split("Speaker:", 1)[1]
        allowed = set(
            kw["schema"].model_json_schema()["$defs"]["LabelEvidence"]["properties"]["label"][
                "enum"
            ]
        )
        labels = []
        for word, lab in RULES.items():
            if lab in allowed and lab not in labels and re.search(rf"\b{word}\b", own, re.I):
                labels.append(lab)
        kw["mock_response"] = json.dumps(
            {"labels": [{"label": lab, "evidence": ""} for lab in labels]}
        )
        return await super().adecide(**kw)


@pytest.fixture
def fake_client(monkeypatch):
    import scarce_lab.cli.judge as cli

    monkeypatch.setattr(
        cli, "_client", lambda *a, **k: RuleClient(LLMSettings(cache=False, max_retries=0))
    )


def test_label_command_writes_tables(tmp_path, fake_client):
    run = make_scarce_run(tmp_path / "data")
    out = tmp_path / "labels"
    r = CliRunner().invoke(
        app,
        [
            "judge",
            "label",
            str(run),
            "--judges",
            "openai/a,openai/b,openai/c",
            "--out",
            str(out),
            "--no-progress",
            "--n-boot",
            "20",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "4 units x 3 judges" in r.output and "3 different models" in r.output
    for f in (
        "judgements.jsonl",
        "llm_calls.jsonl",
        "panel.json",
        "units.parquet",
        "labels.parquet",
        "votes.parquet",
        "agreement.csv",
        "institutions.parquet",
        "drift.csv",
    ):
        assert (out / f).exists(), f
    labels = pl.read_parquet(out / "labels.parquet")
    got = dict(zip(labels["unit_id"], labels["labels"].to_list(), strict=True))
    assert got == {
        "tiny:1:w0": ["reciprocity", "earliest_deadline_first"],
        "tiny:1:w1": ["shortest_job_first"],
        "tiny:2:w0": ["reciprocity"],
        "tiny:2:w1": [],
    }
    inst = pl.read_parquet(out / "institutions.parquet")
    rec = inst.filter((pl.col("scope") == "agent") & (pl.col("label") == "reciprocity")).row(
        0, named=True
    )
    assert rec["who"] == "w0" and rec["rounds"] == [1, 2] and rec["institutional"]
    assert "institutional (relational, agent): 1 of 1" in r.output
    agree = pl.read_csv(out / "agreement.csv")
    assert agree.filter(pl.col("label") == "(pooled)")["n_units"].item() == 4 * 21
    # Identical rule-based judges: most labels never occur (single category), and the
    # macro row says over how many labels its mean runs.
    macro = agree.filter(pl.col("label") == "(macro)").row(0, named=True)
    per_label = agree.filter(~pl.col("label").str.starts_with("("))
    n_def = per_label.filter(pl.col("alpha").is_not_nan()).height
    assert macro["n_labels"] == 21 and macro["alpha_labels_defined"] == n_def >= 3
    assert macro["alpha"] == 1.0  # identical judges agree perfectly where defined
    # few units: values, but no bootstrap interval (fewer than MIN_UNITS_INTERVAL units)
    reasons = set(per_label["alpha_reason"].drop_nulls())
    assert all(r == "single category" or r.startswith("interval: fewer than 30 units (") for r in reasons)
    assert f"over {n_def} of 21 labels" in r.output


def test_validate_command_json(tmp_path, fake_client):
    data = tmp_path / "c.json"
    data.write_text(
        json.dumps(
            [
                {
                    "dialogue_id": 1,
                    "chat_logs": [
                        {"text": t, "id": s}
                        for t, s in [
                            ("hi there", "a"),
                            ("I need water", "b"),
                            ("hi, I need food", "a"),
                            ("fine", "b"),
                        ]
                    ],
                    "annotations": [
                        ["hi there", "small-talk"],
                        ["I need water", "self-need"],
                        ["hi, I need food", "self-need"],
                        ["fine", "non-strategic"],
                    ],
                }
            ]
        )
    )
    r = CliRunner().invoke(
        app,
        [
            "judge",
            "validate",
            "--data",
            str(data),
            "--judges",
            "openai/a",
            "--format",
            "json",
            "--no-progress",
            "--context-turns",
            "0",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["n_units"] == 4 and set(out["scores"]) == {"panel", "j1"}
    s = out["scores"]["panel"]["summary"]
    # predicted: {small-talk}, {self-need}, {self-need, small-talk}, {} -> tp 3, fp 1, fn 1
    assert s["micro_precision"] == pytest.approx(3 / 4) and s["micro_recall"] == pytest.approx(
        3 / 4
    )
    per = {x["label"]: x for x in out["scores"]["j1"]["per_label"]}
    assert per["self-need"]["f1"] == 1.0 and per["small-talk"]["precision"] == 0.5
    assert per["non-strategic"]["recall"] == 0.0


def test_validate_rejects_mismatched_taxonomy(tmp_path, fake_client):
    data = tmp_path / "c.json"
    data.write_text(
        json.dumps(
            [
                {
                    "dialogue_id": 1,
                    "chat_logs": [{"text": "hi", "id": "a"}],
                    "annotations": [["hi", "small-talk"]],
                }
            ]
        )
    )
    r = CliRunner().invoke(
        app,
        [
            "judge",
            "validate",
            "--data",
            str(data),
            "--taxonomy",
            "scarce",
            "--judges",
            "openai/a",
            "--no-progress",
        ],
        env={"COLUMNS": "300"},
    )
    assert r.exit_code == 2 and "not ids of taxonomy 'scarce'" in r.output


def test_validate_limit_on_a_scarce_dataset_spreads_over_runs_and_contentions():
    """`--limit N` on scripted ground truth takes evenly spaced units of every run, not the
    first run's first contentions."""
    from types import SimpleNamespace

    from scarce_lab.cli.judge import _round_robin

    units = [SimpleNamespace(run_id=r, unit_id=f"{r}:{i}") for r in ("b", "a") for i in range(9)]
    picked = [u.unit_id for u in _round_robin(units, 6)]
    assert picked == ["a:0", "b:0", "a:3", "b:3", "a:6", "b:6"]
    assert _round_robin(units, None) == units
    assert len(_round_robin(units, 100)) == 18
