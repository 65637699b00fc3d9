"""Institution metrics on scripted SCARCE runs: conditions from the manifests, the
institutional rates per arm, collective output against the centralised schedulers,
the relational share, and the refusal to pool conditions."""

from __future__ import annotations

import json

import polars as pl
import pytest

from scarce_lab.analysis.pooling import PoolingError
from scarce_lab.data.loaders import load_dataset
from scarce_lab.environments.scarce.analysis.dynamics import collective_outcomes
from scarce_lab.environments.scarce.analysis.institutions import (
    INSTITUTION_SETTINGS_SCHEMA,
    collective_by_arm,
    institution_behaviour,
    institution_frames,
    institution_run_rates,
    institution_settings,
    institutions_label,
    relational_share,
)
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from scarce_lab.environments.scarce.tables import contentions_table, submissions_table
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

KINDS = ("contention_start", "promise_judged", "breach", "sanction", "contract_offer", "contract_answer",
         "contract_settlement")
ARMS = {
    "none": dict(),
    "mech": dict(institutions=dict(sanctions="mechanism", reputation=True, contracts=True)),
    "fifo": dict(scheduler="fifo"),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("inst")
    for arm, kw in ARMS.items():
        for seed in (1, 2):
            cfg = ScarceConfig(workers=4, subruns=1, model="scripted/fifo", negotiator_model="scripted/institution-mix",
                               seed=seed, deadline_min=3.0, **kw)
            run_scarce(cfg, out, tasks=[toy_task(0), toy_task(1)], grade_fn=fake_grade,
                       sandbox=FakeSandbox(out / f"sbx-{arm}-{seed}"))
    return out


def test_labels_and_settings(data):
    assert institutions_label(None) == "none"
    assert institutions_label({"sanctions": "vote", "fine": 50, "contracts": True}) == "sanctions=vote,fine=50,contracts"
    ds = load_dataset(data)
    s = institution_settings(ds.runs)
    assert s.schema == pl.Schema(INSTITUTION_SETTINGS_SCHEMA)
    assert sorted(s["arm"].unique().to_list()) == [
        "ballots|none", "ballots|sanctions=mechanism,reputation,contracts", "fifo"]
    assert s.height == 6


def test_behaviour_rates_per_arm(data):
    ds = load_dataset(data)
    s = institution_settings(ds.runs)
    frames = institution_frames(ds)
    assert set(frames) == set(KINDS)
    rates = institution_run_rates(frames, s)
    off = rates.join(s, on="run_id").filter(pl.col("arm") == "ballots|none")
    for m in ("promise_keeping", "breaches_per_contention", "fined_share", "signed_share"):
        assert off[m].null_count() == off.height, m  # module off: no rate, not 0
    on = rates.join(s, on="run_id").filter(pl.col("arm").str.contains("mechanism"))
    assert on["promise_keeping"].drop_nulls().len() == 2
    assert all(0 < v < 1 for v in on["promise_keeping"])  # breakers and keepers both play
    assert on["fined_share"].to_list() == [1.0, 1.0]  # the mechanism fines every breach
    # recomputed by hand from the events of one run
    rid = on["run_id"][0]
    judged = frames["promise_judged"].filter(pl.col("run_id") == rid)
    assert on["promise_keeping"][0] == pytest.approx(judged["kept"].mean())
    beh = institution_behaviour(rates, s.drop("seed"))
    row = beh.filter(pl.col("arm").str.contains("mechanism") & (pl.col("metric") == "promise_keeping"))
    assert row["runs"][0] == 2 and row["lo"][0] <= row["value"][0] <= row["hi"][0]
    assert beh.filter((pl.col("arm") == "fifo") & (pl.col("metric") == "promise_keeping"))["runs"][0] == 0


def test_collective_output_against_centralised_schedulers(data):
    ds = load_dataset(data)
    s = institution_settings(ds.runs)
    out = collective_outcomes(contentions_table(data), submissions_table(data)).join(s, on="run_id")
    res = collective_by_arm(out)
    assert set(res["arm"]) == set(s["arm"]) and set(res["metric"]) == {
        "deadline_miss_rate", "mean_partial_score", "total_queue_wait_s"}
    ref = res.filter(pl.col("arm") == "ballots|none")
    assert (ref["diff"].fill_null(0) == 0).all() and (ref["pairs"] == 2).all()
    fifo = res.filter((pl.col("arm") == "fifo") & (pl.col("metric") == "mean_partial_score"))
    want = out.filter(pl.col("arm") == "fifo")["mean_partial_score"].mean()
    assert fifo["value"][0] == pytest.approx(want) and fifo["runs"][0] == 2


def test_notebook_09_findings_show_their_layout_not_the_raw_frame(data):
    """The findings save every column but show the layout (no value/lo/hi beside the
    estimate, no full condition label in the summary's rows: they are folded)."""
    import scarce_lab as sl

    ds = sl.scarce.load(data)
    for found, hidden in ((sl.scarce.institution_behaviour(ds), "| value |"),
                          (sl.scarce.collective_output(ds, reference="fifo"), "| diff_lo |")):
        assert hidden in sl.figures.markdown_table(found.frame) and hidden not in found.text, found.name
    summary = sl.scarce.table(ds)
    rows, folded = summary.text.split("<details>")
    assert "| group |" in rows and "| condition |" not in rows and "| condition |" in folded
    assert all(c in folded for c in summary.layout["condition"])


def test_refuses_to_pool_arms(data):
    ds = load_dataset(data)
    s = institution_settings(ds.runs).with_columns(pl.lit("all").alias("arm"))
    out = collective_outcomes(contentions_table(data), submissions_table(data)).join(s, on="run_id")
    with pytest.raises(PoolingError):
        collective_by_arm(out, reference=None)


def test_relational_share_by_arm():
    rounds = pl.DataFrame({"run_id": ["a", "a", "b", "c"], "labels": [["reciprocity"], ["bid"], [], ["alliance"]],
                           "arm": ["x", "x", "x", "y"]})
    r = relational_share(rounds, {"reciprocity", "alliance"})
    x = r.filter(pl.col("arm") == "x")
    assert x["value"][0] == pytest.approx((0.5 + 0.0) / 2) and x["runs"][0] == 2
    assert r.filter(pl.col("arm") == "y")["value"][0] == 1.0
    json.dumps(r.to_dicts())
