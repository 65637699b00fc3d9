"""Tenure metrics on scripted SCARCE runs with a newcomer (analysis/scarce/tenure.py),
and tables that never pool two compositions."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.pooling import PoolingError
from scarce_lab.environments.scarce.analysis.dynamics import task_outcomes
from scarce_lab.environments.scarce.analysis.tenure import TENURE_INTERVALS, tenure_metrics
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task


def _runs(out: Path, seeds=range(3), **kw) -> None:
    for seed in seeds:
        cfg = ScarceConfig(workers=3, subruns=3, model="scripted/random", seed=seed, deadline_min=3, **kw)
        run_scarce(cfg, out, tasks=[toy_task(i) for i in range(3)], grade_fn=fake_grade,
                   sandbox=FakeSandbox(out / f".sbx{seed}"))


@pytest.fixture(scope="module")
def joined(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tenure")
    _runs(out, joins={"w2": 1})
    return out


def test_tenure_metrics_match_the_submissions_by_hand(joined):
    T = sl.load([joined]).scarce
    res = tenure_metrics(T.submissions, T.contentions)
    assert set(res["tenure"]) == {"incumbent", "newcomer"}
    assert set(res.filter(pl.col("tenure") == "newcomer")["period"]) == {"after_join"}
    assert set(res.filter(pl.col("tenure") == "incumbent")["period"]) == {"before_join", "after_join"}
    s = T.submissions
    for tenure, period, sel in (
        ("newcomer", "after_join", (pl.col("worker") == "w2")),
        ("incumbent", "before_join", (pl.col("worker") != "w2") & (pl.col("subrun") == 0)),
        ("incumbent", "after_join", (pl.col("worker") != "w2") & (pl.col("subrun") >= 1)),
    ):
        part = s.filter(sel)
        per_run = part.group_by("run_id").agg(pl.col("deadline_missed").cast(pl.Float64).mean())
        row = res.filter((pl.col("tenure") == tenure) & (pl.col("period") == period)
                         & (pl.col("metric") == "deadline_miss_rate")).row(0, named=True)
        assert row["n"] == part.height and row["runs"] == 3
        assert row["value"] == pytest.approx(per_run["deadline_missed"].mean())
        score = res.filter((pl.col("tenure") == tenure) & (pl.col("period") == period)
                           & (pl.col("metric") == "mean_partial_score")).row(0, named=True)
        per_run_score = part.group_by("run_id").agg(pl.col("score").mean())["score"].mean()
        assert score["value"] == pytest.approx(per_run_score)
    assert set(res["metric"]) == {"deadline_miss_rate", "mean_partial_score", "mean_wait_s", "payment_per_subrun"}
    assert (res["ci_method"] == TENURE_INTERVALS).all()
    # payments per worker-subrun add up to the payments of the contentions table
    pay = res.filter(pl.col("metric") == "payment_per_subrun")
    assert pay["n"].sum() == s.height
    wait = res.filter(pl.col("metric") == "mean_wait_s")
    assert wait["n"].sum() == T.contentions.filter(pl.col("wait_s").is_not_null()).height


def test_per_worker_rows_and_a_run_without_joins(joined, tmp_path):
    T = sl.load([joined]).scarce
    res = tenure_metrics(T.submissions, T.contentions, per_worker=True)
    assert set(res.filter(pl.col("tenure") == "newcomer")["worker"]) == {"w2"}
    _runs(tmp_path, seeds=[0])
    plain = sl.load([tmp_path]).scarce
    res2 = tenure_metrics(plain.submissions, plain.contentions)
    assert set(res2["period"]) == {"no_join"} and set(res2["tenure"]) == {"incumbent"}


def test_two_compositions_are_never_pooled(joined, tmp_path):
    _runs(tmp_path, seeds=[0], joins={"w2": 1}, seats={"w0": "scripted/fifo"})
    both = sl.load([joined, tmp_path]).scarce
    assert both.submissions["condition"].n_unique() == 2  # labelled apart
    assert sorted(set(both.settings["negotiator"])) == ["mixed", "scripted/random"]  # the seat run's negotiators differ
    fifo = both.submissions.filter(pl.col("model") == "scripted/fifo")
    assert set(fifo["worker"]) == {"w0"}  # each row names its worker's own model
    with pytest.raises(PoolingError, match="seats"):
        tenure_metrics(both.submissions.filter(pl.col("model") == "scripted/random"),
                                 both.contentions.filter(pl.col("model") == "scripted/random"), by=("model",))
    res = tenure_metrics(both.submissions, both.contentions, by=("model", "condition"))
    assert res["condition"].n_unique() == 2
    with pytest.raises(PoolingError):
        task_outcomes(both.submissions, by=["model"])


def test_the_tenure_finding_is_the_metrics_with_a_reading_and_a_chart(joined, tmp_path):
    ds = sl.load([joined])
    f = sl.scarce.tenure_outcomes(ds)
    res = tenure_metrics(ds.scarce.submissions, ds.scarce.contentions)
    assert f.frame.drop("group", "estimate").equals(res)
    assert f.name == "scarce_tenure" and f.chart and "deadline miss rate" in f.reading
    assert f.convention["parameters"] == {"by": ["model", "condition"], "per_worker": False,
                                          "metric": "deadline_miss_rate"}
    f.save(tmp_path)
    assert (tmp_path / "scarce_tenure.csv").exists() and (tmp_path / "scarce_tenure_values.csv").exists()
