"""The SovSim face: ``load`` and findings, each computed from a Dataset and equal to the
module functions behind it (the numbers the notebook showed before it became one line
per finding), each saving itself under the file names the notebook wrote."""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import scarce_lab as sl
from scarce_lab.analysis.findings import Finding
from scarce_lab.environments.sovsim.analysis import conventions, cross, metrics
from scarce_lab.environments.sovsim.analysis.charts import correlation_table
from scarce_lab.environments.sovsim.analysis.dynamics import pool_band

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ds():
    return sl.sovsim.load(REPO / "data" / "sovsim")


@pytest.fixture(scope="module")
def per_sim(ds):
    df = ds.sovsim.agent_rounds
    return metrics.simulation_metrics(df, conventions.resolve_convention(df, "sovsim"))


def test_the_face_is_load_and_findings(ds):
    names = sl.sovsim.__all__
    assert len(names) <= 30 and "load" in names
    for helper in ("agent_rounds", "summarize", "simulation_metrics", "format_table", "format_cross", "convention",
                   "PRESETS", "pool_dynamics_chart", "survival_sentence", "crossplay_runs", "table1"):
        assert helper not in names and not hasattr(sl.sovsim, helper), helper
    findings = {n: getattr(sl.sovsim, n) for n in names if n != "load"}
    for name, fn in findings.items():  # a Dataset first, the rest by keyword; the docstring is the method
        params = list(__import__("inspect").signature(fn).parameters.values())
        assert params[0].name == "ds" and all(p.kind is p.KEYWORD_ONLY for p in params[1:]), name
        assert fn.__doc__ and len(fn.__doc__) > 200, name
    with pytest.raises(TypeError, match=r"sl\.load"):
        sl.sovsim.table(ds.sovsim.agent_rounds)  # the one door: a Dataset, not a frame or a path


def test_paper_findings_are_the_numbers_behind_them(ds, per_sim, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = {f.__name__: f(ds) for f in (sl.sovsim.table, sl.sovsim.pool_dynamics, sl.sovsim.trajectories,
                                              sl.sovsim.leader_rate_vs_survival, sl.sovsim.misreport_distribution,
                                              sl.sovsim.cross_model_results, sl.sovsim.paper_claims)}
    for name, res in found.items():
        assert isinstance(res, Finding) and res.method and res.method.split("\n")[0] in getattr(
            sl.sovsim, name).__doc__, name
        assert "Raises:" not in res.method and "Args:" not in res.method
        res.save(tmp_path)
    assert_frame_equal(found["table"].frame, metrics.summarize(per_sim, conv=conventions.resolve_convention(
        ds.sovsim.agent_rounds, "sovsim")))
    assert_frame_equal(found["pool_dynamics"].frame, pool_band(ds.sovsim.agent_rounds))
    assert_frame_equal(found["leader_rate_vs_survival"].layout, correlation_table(per_sim))
    r = metrics.leader_rate_vs_survival(per_sim)
    assert found["leader_rate_vs_survival"].frame["value"].to_list() == r["r"].to_list()
    frames = cross.cross_model_results(per_sim)
    res = found["cross_model_results"]
    assert_frame_equal(res.frame, frames["relative_drop"])
    assert_frame_equal(res.extra["sovsim_overuse_by_role"], frames["overuse_by_role"])
    assert_frame_equal(res.extra["sovsim_overuse_by_role_per_model"], frames["overuse_by_role_per_model"])
    assert_frame_equal(res.extra["sovsim_leader_rate_across_models"], frames["leader_rate_vs_survival"])
    assert res.text == cross.format_cross(frames)
    km = frames["relative_drop"].filter((pl.col("metric") == "survival_rate") & (pl.col("condition") == "kcpr_m"))
    claims = found["paper_claims"].frame
    assert claims["this_data"][0].startswith(f"{100 * km['mean'][0]:.1f}%") and claims["models"][0] == 1
    assert claims.height == 3 and "87.3%" in claims["paper"][0]
    saved = {p.name for p in tmp_path.iterdir()}
    for stem in ("sovsim_table1", "sovsim_table1_values", "sovsim_leader_rate_vs_survival", "sovsim_cross_model_drop",
                 "sovsim_overuse_by_role", "sovsim_overuse_by_role_per_model", "sovsim_leader_rate_across_models",
                 "sovsim_pool_dynamics"):
        assert f"{stem}.csv" in saved and f"{stem}.convention.json" in saved, stem
    for chart in ("sovsim_pool_dynamics", "sovsim_trajectories", "sovsim_leader_rate_vs_survival",
                  "sovsim_misreports"):
        assert f"{chart}.png" in saved and f"{chart}.svg" in saved, chart


def test_a_model_filter_is_a_finding_parameter(ds):
    res = sl.sovsim.table(ds, models=["scripted/greedy"], strict=True)
    assert set(res.frame["model"]) == {"scripted/greedy"} and res.convention["models"] == ["scripted/greedy"]
    assert res.convention["survival"].startswith("strict")
    assert set(sl.sovsim.leader_rate_vs_survival(ds, models=["embedded/smollm2"]).frame["model"]) == {
        "embedded/smollm2"}
    with pytest.raises(ValueError, match=r"models: \['no/such'\] not in the data; its models: \["):
        sl.sovsim.pool_dynamics(ds, models=["no/such"])


def test_sl_table_is_table_one_with_the_cross_model_results(ds):
    res, face = sl.table(ds), sl.sovsim.table(ds, cross=True)
    assert_frame_equal(res.frame, face.frame)
    assert res.text == face.text and set(res.extra) == set(face.extra)
    assert res.markdown().count("Every run departs") <= 1  # the departures line once, not twice


def test_every_sovsim_finding_counts_finished_simulations_only(tmp_path):
    """A run cut off after round 3 (a failed run, neither collapsed nor at round 12) is
    left out of the pool dynamics as of Table 1, with the warning that names it (it
    counted in rounds 1-3 of the band before, so n changed from round to round)."""
    import json
    import shutil

    import polars as pl

    from scarce_lab.environments.sovsim.analysis.metrics import UnfinishedRunsWarning

    src = sorted((REPO / "data" / "sovsim").glob("sovsim-bcpr-scripted-sustainable-s0-*"))[:3]
    for d in src:
        shutil.copytree(d, tmp_path / d.name)
    cut = tmp_path / src[0].name
    lines = (cut / "events.jsonl").read_text().splitlines(keepends=True)
    commits = [i for i, line in enumerate(lines) if '"round_committed"' in line]
    (cut / "events.jsonl").write_text("".join(lines[: commits[3] + 1]))  # setup + rounds 1-3
    manifest = json.loads((cut / "manifest.json").read_text())
    (cut / "manifest.json").write_text(json.dumps(manifest | {"status": "failed", "n_events": None,
                                                              "error": "killed"}))
    ds = sl.sovsim.load(tmp_path)
    with pytest.warns(UnfinishedRunsWarning, match=rf"left out 1 unfinished simulation\(s\) of 3 .*{src[0].name}"):
        band = sl.sovsim.pool_dynamics(ds).frame
    assert set(band["n"].to_list()) == {2}, band  # two finished games in every round
    with pytest.warns(UnfinishedRunsWarning):
        assert sl.sovsim.table(ds).frame.filter(pl.col("condition") == "bcpr")["n"].to_list() == [2]


def test_condition_tests_warn_nothing_when_a_condition_has_no_spread():
    """A condition whose simulations all survive the same rounds beside one that varies:
    the Welch p is computed without scipy's "catastrophic cancellation" warning."""
    from scarce_lab.environments.sovsim.analysis.charts import _condition_tests

    per_sim = pl.DataFrame({"model": ["m"] * 6, "condition": ["cpr"] * 3 + ["kcpr"] * 3,
                            "survival_time": [12.0, 12.0, 12.0, 3.0, 7.0, 9.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = _condition_tests(per_sim, "survival_time", "holm")
    assert p[("m", "cpr", "kcpr")] == pytest.approx(0.0848, abs=1e-3)  # scipy ttest_ind(equal_var=False)
