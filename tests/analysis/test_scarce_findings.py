"""The SCARCE face (``sl.scarce``): ``load`` and findings only, each a Finding made from a
loaded dataset whose numbers are the frame metrics' (recomputed here from the modules the
helpers stay in), with the paper's layout, a reading, a chart, its parameters in the
convention and its docstring as the method."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.analysis.findings import Finding
from scarce_lab.analysis.layout import group_labels, wide_table
from scarce_lab.environments.scarce.analysis import dynamics, tactics
from scarce_lab.environments.scarce.analysis.base import base_condition
from scarce_lab.environments.scarce.analysis.findings import STATISTICS

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = REPO / "data" / "scarce" / "scripted"
LABELS = REPO / "data" / "scarce" / "labels" / "embedded" / "labels.parquet"


@pytest.fixture(scope="module")
def ds():
    return sl.load([SCRIPTED / "budget", SCRIPTED / "deadlines"])


def test_the_face_is_load_and_findings():
    names = sl.scarce.__all__
    assert len(names) <= 31 and "load" in names and "table" in names  # 31: crossplay_ratings (two readings, one name)
    helpers = {"load_scarce", "paper_result", "group_labels", "base_condition", "ci_chart", "wide_table",
               "with_ci_text", "describe_extremes", "Finding", "ScarceTables", "summary", "PoolingError"}
    assert not helpers & set(names)
    assert not [n for n in names if n.isupper()], "constants stay in their modules"
    for n in names:
        assert callable(getattr(sl.scarce, n)), n


def test_win_rates_are_the_frame_metric_in_the_paper_layout(ds, tmp_path):
    f = sl.scarce.win_rates(ds)
    res = group_labels(dynamics.win_rates(ds.scarce.contentions, by=("model", "condition")))
    assert f.frame.drop("estimate").equals(res)
    assert f.layout.equals(wide_table(res, ["group"], "metric"))
    assert f.chart and "win rate" in f.reading
    assert f.convention["parameters"] == {"by": ["model", "condition"], "base_only": False, "except_": []}
    assert f.method.startswith("Win rate per negotiator model") and f.method.endswith(STATISTICS[-30:])
    assert "Raises:" not in f.method
    f.save(tmp_path)
    assert {p.name for p in tmp_path.glob("*.csv")} == {"scarce_win_rates.csv", "scarce_win_rates_values.csv"}
    assert (tmp_path / "scarce_win_rates.png").exists()


def test_base_only_and_except_select_the_reference_condition(ds):
    c = ds.scarce.contentions
    only = sl.scarce.bid_drift(ds, except_=("rich_worker_budget",))
    res = group_labels(dynamics.winning_bid_by_stage(base_condition(c, except_=("rich_worker_budget",)), n_stages=4,
                                                     by=("model", "condition")))
    assert only.frame.drop("estimate").equals(res)
    shown = set(only.frame["condition"])
    assert shown and shown <= set(base_condition(c, except_=("rich_worker_budget",))["condition"])
    assert not shown & set(c.filter(pl.col("mixed_deadlines"))["condition"])  # the deadline runs are left out
    base = sl.scarce.budget_phases(ds, base_only=True)  # the richer worker's runs are not the reference
    assert base.frame is None and "No table" in base.markdown()


def test_budget_phases_and_durations_keep_their_numbers(ds):
    f = sl.scarce.budget_phases(ds)
    res = group_labels(dynamics.budget_phase_bids(ds.scarce.contentions, by=("model", "condition")))
    assert f.frame.drop("estimate").equals(res) and f.name == "scarce_tables5_7_budget_phases"
    assert "Table 5's question" in f.reading
    d = sl.scarce.durations(ds, col="desired_duration_s")
    per, growth = dynamics.requested_duration_by_subrun(ds.scarce.contentions, by=("model", "condition"),
                                                        col="desired_duration_s")
    assert d.frame.drop("estimate").equals(group_labels(per))
    g = d.extra["scarce_desired_duration_s_growth"]
    assert g.drop("estimate").equals(group_labels(growth)) and "Growth factor" in d.markdown()
    with pytest.raises(ValueError, match="col must be one of"):
        sl.scarce.durations(ds, col="wait_s")


def test_label_findings_need_labels_and_say_so(ds, tmp_path):
    none = sl.scarce.tactic_shares(ds, None)
    assert none.frame is None and "No judge labels" in none.markdown()
    none.save(tmp_path)  # nothing written, an older table of that name removed
    assert not list(tmp_path.iterdir())
    with pytest.raises(FileNotFoundError, match="no judge label table"):
        sl.scarce.memory_behaviours(ds, tmp_path / "missing.parquet")


def test_tactic_shares_from_scripted_intent_are_the_frame_metric(ds):
    if not LABELS.exists():
        pytest.skip("shipped labels absent")
    f = sl.scarce.tactic_shares(ds, "intent")
    from scarce_lab.judge.taxonomy import load_taxonomy

    tax = load_taxonomy("scarce")
    rounds = tactics.labelled_rounds(tactics.labels_from_intent(ds.scarce.messages), ds.scarce.contentions)
    res = tactics.tactic_shares(rounds.filter(pl.col("model").is_not_null()), tax.ids, tax.relational_ids,
                                by=("model", "condition"), subrun=0)
    assert f.frame.select(res.columns).equals(res) and f.name == "scarce_table1_scripted_intent"
    assert set(f.frame["kind"]) == {"relational", "non-relational", "any relational"}
    assert f.convention["labels"].startswith("scripted intent")


def test_scheduler_comparison_and_alliances_refuse_what_they_cannot_do(ds):
    f = sl.scarce.scheduler_comparison(ds)
    assert isinstance(f, Finding) and "scarce_scheduler_outcomes_per_run" in f.extra
    with pytest.raises(ValueError, match="via must be"):
        sl.scarce.alliances(ds, via="letters")


def test_bid_drift_caption_names_the_interval_it_draws_and_none_when_none(ds):
    f = sl.scarce.bid_drift(ds)
    caption = " ".join(f.chart.to_dict()["title"]["subtitle"])  # the caption, wrapped into lines
    assert "t interval over run means" not in caption  # medians get a cluster bootstrap, never a t interval
    if f.frame.filter(pl.col("lo").is_not_null()).height == 0:
        assert "none drawn" in caption and "cluster-bootstrap interval of the median" in caption
    else:
        assert "95% cluster-bootstrap interval of the median" in caption


def test_urgency_bids_reading_answers_urgent_vs_not_per_model(ds):
    f = sl.scarce.urgency_bids(ds)
    assert f.reading.startswith("Do urgent workers bid more?")
    assert "highest for" not in f.reading  # no extremes over models x stages x urgency
    for m in f.frame["group"].unique().to_list():
        assert f"{m}: " in f.reading


def test_language_drift_panels_share_one_0_to_1_scale():
    # every measure is a share: panels with independent scales made 0.10 look like 0.9
    res = pl.DataFrame({"group": [f"g{i}" for i in range(12)], "stage": [1] * 12,
                        "value": [0.1] + [0.9] * 11, "lo": [0.05] + [0.8] * 11, "hi": [0.15] + [1.0] * 11,
                        "runs": [3] * 12})
    from scarce_lab.analysis.charts import ci_chart

    spec = str(ci_chart(res, "stage", color="group", kind="line", y_domain=(0.0, 1.0)).to_dict())
    assert "'independent'" not in spec and "'domain': [0.0, 1.0]" in spec
    drift = sl.scarce.language_drift(sl.load([SCRIPTED / "models"]))
    d = str(drift.chart.to_dict())
    assert "'independent'" not in d and "'domain': [0.0, 1.0]" in d
