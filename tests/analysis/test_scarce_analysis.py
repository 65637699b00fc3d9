"""SCARCE analysis on hand-made tables, and the `table scarce` command on a scripted run."""

import math

import polars as pl
import pytest
from typer.testing import CliRunner

from scarce_lab.environments.scarce.analysis.metrics import format_summary, summary
from scarce_lab.environments.scarce.tables import CONTENTION_SCHEMA, SUBMISSION_SCHEMA


def _contentions(rows):
    base = dict.fromkeys(CONTENTION_SCHEMA)
    return pl.DataFrame([{**base, **r} for r in rows], schema=CONTENTION_SCHEMA, orient="row")


def _submissions(rows):
    base = dict.fromkeys(SUBMISSION_SCHEMA)
    return pl.DataFrame([{**base, **r} for r in rows], schema=SUBMISSION_SCHEMA, orient="row")


def C(run, k, w, n, won, bid, dur, sent):
    return {"run_id": run, "model": "m", "condition": "c", "contention": k, "worker": w, "n_participants": n,
            "won": won, "declared_bid": bid, "desired_duration_s": dur, "private_sent": sent}


def test_summary_by_hand():
    ct = _contentions([
        C("r1", 0, "a", 2, True, 10, 60, 1), C("r1", 0, "b", 2, False, 30, 120, 0),
        C("r1", 1, "a", 1, True, 0, 30, 0),  # uncontested: in the win rate, not in the contested one
        C("r2", 2, "a", 2, False, 20, 60, 0), C("r2", 2, "b", 2, True, 40, 90, 2),
    ])
    st = _submissions([
        {"run_id": "r1", "model": "m", "condition": "c", "score": 1.0, "deadline_missed": False},
        {"run_id": "r1", "model": "m", "condition": "c", "score": 0.0, "deadline_missed": True},
        {"run_id": "r2", "model": "m", "condition": "c", "score": 0.5, "deadline_missed": False},
        {"run_id": "r2", "model": "m", "condition": "c", "score": 0.5, "deadline_missed": False},
    ])
    s = summary(ct, st).row(0, named=True)
    assert (s["runs"], s["contentions"], s["submissions"]) == (2, 3, 4)
    # means over runs of each run's mean (r1: 3 participations, r2: 2)
    assert s["win_rate"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert s["win_rate_contested"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert s["mean_bid"] == pytest.approx((40 / 3 + 60 / 2) / 2)
    assert s["mean_requested_duration_s"] == pytest.approx((210 / 3 + 150 / 2) / 2)
    assert s["private_chat_use"] == pytest.approx(2 / 4)
    assert s["deadline_miss_rate"] == pytest.approx(1 / 4)
    assert s["mean_partial_score"] == pytest.approx(2.0 / 4)
    # two runs -> a t interval over the run means around the estimate
    assert s["mean_bid_lo"] <= s["mean_bid"] <= s["mean_bid_hi"]
    # with one run there is no interval
    one = summary(ct.filter(pl.col("run_id") == "r1"), st.filter(pl.col("run_id") == "r1")).row(0, named=True)
    assert one["win_rate"] == pytest.approx(2 / 3) and one["win_rate_lo"] is None
    assert one["win_rate_contested"] == pytest.approx(0.5)
    txt = format_summary(summary(ct, st))
    assert txt["mean_bid"][0].startswith("21.67 [")


def test_summary_missing_column():
    with pytest.raises(ValueError, match="lacks columns"):
        summary(pl.DataFrame({"run_id": ["r"]}), _submissions([]))


def test_table_cli_on_scripted_runs(tmp_path):
    from scarce_lab.cli import app
    from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
    from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

    for seed in (1, 2):
        cfg = ScarceConfig(workers=3, subruns=1, model="scripted/bid-first", seed=seed)
        run_scarce(cfg, tmp_path, tasks=[toy_task()], grade_fn=fake_grade,
                   sandbox=FakeSandbox(tmp_path / f"sbx{seed}"))
    res = CliRunner().invoke(app, ["table", "scarce", str(tmp_path), "--format", "csv"])
    assert res.exit_code == 0, res.output
    df = pl.read_csv(res.output.encode())
    assert df.height == 1 and df["runs"][0] == 2 and df["model"][0] == "scripted/bid-first"
    # bid-first bids a fifth of its 1000-credit budget while it has it
    assert 0 < df["mean_bid"][0] <= 200 and not math.isnan(df["win_rate"][0])
    md = CliRunner().invoke(app, ["table", "scarce", str(tmp_path)])
    assert md.exit_code == 0 and "win_rate" in md.output
