"""The notebook face of the institution metrics (``sl.scarce.institution_behaviour`` and
``sl.scarce.collective_output``) on scripted SCARCE runs: the numbers equal the ones
recomputed from the events and per-run outcomes, differences are paired on the seed
against the chosen reference arm, and wrong inputs are refused by name."""

from __future__ import annotations

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.environments.scarce.analysis import institutions
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task

ARMS = {
    "none": dict(),
    "mech": dict(institutions=dict(sanctions="mechanism", contracts=True)),
    "fifo": dict(scheduler="fifo"),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("inst_face")
    for arm, kw in ARMS.items():
        for seed in (1, 2):
            cfg = ScarceConfig(workers=4, subruns=1, model="scripted/fifo", negotiator_model="scripted/institution-mix",
                               seed=seed, deadline_min=3.0, **kw)
            run_scarce(cfg, out, tasks=[toy_task(0), toy_task(1)], grade_fn=fake_grade,
                       sandbox=FakeSandbox(out / f"sbx-{arm}-{seed}"))
    return out


def test_face_exports_the_institution_findings_and_the_module_its_helpers():
    for name in ("institution_behaviour", "collective_output"):
        assert callable(getattr(sl.scarce, name)), name
        assert name in sl.scarce.__all__
    for name in ("institution_settings", "institution_frames", "institution_run_rates", "institution_behaviour",
                 "collective_by_arm", "relational_share"):
        assert callable(getattr(institutions, name)), name
    for gone in ("institution_table", "collective_table", "institution_settings"):  # helpers left the face
        assert not hasattr(sl.scarce, gone) and gone not in sl.scarce.__all__, gone


def test_institution_behaviour_per_arm(data):
    ds = sl.load(data)
    r = sl.scarce.institution_behaviour(ds)
    f = r.frame
    mech = "ballots|sanctions=mechanism,contracts"
    assert set(f["arm"]) == {"ballots|none", mech, "fifo"}
    # recomputed from the events: kept / judged promises, per run, then the mean over runs
    judged = ds.payloads("promise_judged", "scarce").collect()
    assert judged.height > 0
    per_run = judged.group_by("run_id").agg(pl.col("kept").cast(pl.Float64).mean())
    row = f.filter((pl.col("arm") == mech) & (pl.col("metric") == "promise_keeping"))
    assert row["value"][0] == pytest.approx(per_run["kept"].mean()) and row["runs"][0] == 2
    assert row["estimate"][0].startswith(f"{row['value'][0]:.2f}")
    # a module that is off rates nothing (no value), never 0
    off = f.filter((pl.col("arm") == "ballots|none") & (pl.col("metric") == "fined_share"))
    assert off["runs"][0] == 0 and off["value"][0] is None
    counts = r.extra["institution_counts"]
    c = counts.filter(pl.col("arm") == mech)
    assert c["promises_judged"][0] == judged.height and c["runs"][0] == 2
    assert c["breaches"][0] == ds.payloads("breach", "scarce").collect().height
    assert counts.filter(pl.col("arm") == "fifo")["promises_judged"][0] == 0
    # the reading names each rated arm's promise keeping, and the chart draws the rated arms
    assert f"{mech}: promise keeping {row['estimate'][0]}" in r.reading and r.chart


def test_collective_output_against_fifo(data):
    ds = sl.load(data)
    r = sl.scarce.collective_output(ds)
    f, per_run = r.frame, r.extra["collective_outcomes_per_run"]
    assert r.convention["reference"] == "fifo"
    s = institutions.institution_settings(ds.runs)
    j = per_run.join(s, on="run_id")
    for arm in s["arm"].unique():
        got = f.filter((pl.col("arm") == arm) & (pl.col("metric") == "total_queue_wait_s"))
        assert got["value"][0] == pytest.approx(j.filter(pl.col("arm") == arm)["total_queue_wait_s"].mean())
        assert got["pairs"][0] == 2
    # the paired difference: per seed, arm minus fifo
    a = j.filter(pl.col("arm") == "ballots|none").sort("seed")["total_queue_wait_s"].to_numpy()
    b = j.filter(pl.col("arm") == "fifo").sort("seed")["total_queue_wait_s"].to_numpy()
    got = f.filter((pl.col("arm") == "ballots|none") & (pl.col("metric") == "total_queue_wait_s"))
    assert got["diff"][0] == pytest.approx(float((a - b).mean()))
    ref = f.filter(pl.col("arm") == "fifo")
    assert (ref["diff"].fill_null(0) == 0).all() and set(ref["diff_ci"]) == {"reference"}
    assert r.reading.startswith("FIFO: deadline-miss rate ") and r.chart


def test_collective_output_refuses_an_unknown_reference_and_a_run_without_play(data):
    ds = sl.load(data)
    with pytest.raises(ValueError, match="reference arm 'sjf'.*arms"):
        sl.scarce.collective_output(ds, reference="sjf")
    ds2 = sl.load(data)
    one = ds2.scarce.submissions["run_id"][0]
    # the tables of all runs but one (a run with a manifest but no contention or submission)
    ds2.scarce.submissions = ds2.scarce.submissions.filter(pl.col("run_id") != one)
    ds2.scarce.contentions = ds2.scarce.contentions.filter(pl.col("run_id") != one)
    with pytest.raises(ValueError, match="1 run.s. without a contention or a submission"):
        sl.scarce.collective_output(ds2)
