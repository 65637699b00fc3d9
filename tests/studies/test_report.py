"""Replication reports (scarce_lab.studies.report) and the published-numbers files
(scarce_lab.analysis.paper_numbers): verdicts on data whose true value is known, arms never
pooled, a model other than the paper's called a pipeline check, files that do not
validate named with their entry and field."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import polars as pl
import pytest

from scarce_lab import registry
from scarce_lab.analysis.paper_numbers import PaperNumbersError, read_numbers
from scarce_lab.studies import Study, StudyError
from scarce_lab.studies import report as rep

NUMBERS = """
[defaults]
source = "Toy paper"
citation = "a test"
table = "Table 3"

[[number]]
id = "share-a"
model = "Model-X"
arm = "long"
metric = "share"
kind = "value"
value = {value}
unit = "%"

[[number]]
id = "range-a"
model = "Model-X"
arm = "long"
metric = "share"
kind = "range"
low = {low}
high = {high}
unit = "%"

[[number]]
id = "short-a"
model = "Model-X"
arm = "short"
metric = "share"
kind = "value"
value = 10
unit = "%"

[[number]]
id = "prose"
model = "several"
kind = "statement"
text = "the share rises with the horizon"
"""


def _study() -> Study:
    return Study(name="toy-horizon", environment="sovsim", title="a toy", notebook="x.ipynb", source="Toy paper",
                 replicates=["Table 3"], headline=["share"],
                 arms=[{"name": "short", "settings": {"horizon": 1}}, {"name": "long", "settings": {"horizon": 5}}])


def _known_share_rows(true_share: float, runs: int, model: str, seed: int = 7) -> pl.DataFrame:
    """Per-run shares of 40 binary rounds at ``true_share``, summarised with the project's
    t interval over run means (scarce's mean_over_runs): the metric rows an environment
    gives for the ``long`` arm (horizon 5). No ``short`` run at all."""
    from scarce_lab.environments.scarce.analysis.base import SHARE, mean_over_runs

    rng = np.random.default_rng(seed)
    per_run = rng.binomial(40, true_share, size=runs) / 40
    ci = mean_over_runs(per_run.tolist(), bounds=SHARE)
    return pl.DataFrame([{"metric": "share", "model": model, "condition": "h5",
                          "settings": json.dumps({"horizon": 5}), "estimate": ci["value"], "ci_low": ci["lo"],
                          "ci_high": ci["hi"], "n_runs": runs, "why": "", "interval": "bounded"}])


@pytest.fixture
def toy(monkeypatch):
    """The report over a fake environment hook (``frame``) and numbers (``text``)."""
    state: dict = {"frame": None, "text": NUMBERS.format(value=30, low=20, high=40)}

    def hook(ds, *, labels=None):
        return {"share": "bounded"} if ds is None else state["frame"]

    spec = dataclasses.replace(registry.get("sovsim"), study_metrics=hook)
    monkeypatch.setattr(registry, "get", lambda name: spec)
    monkeypatch.setattr(rep, "numbers_of", lambda env: tuple(read_numbers(state["text"], "toy/paper_numbers.toml")))
    return state


def _by_id(frame: pl.DataFrame) -> dict[str, dict]:
    return {(r["arm"], r["paper"]): r for r in frame.iter_rows(named=True)}


def test_known_share_is_inside_and_a_shifted_paper_value_is_outside(toy):
    toy["frame"] = _known_share_rows(0.30, runs=12, model="openrouter/lab/Model-X")
    got = _by_id(rep.report(_study(), object()).frame)
    inside = got[("long", "30%")]
    assert inside["verdict"] == "inside" and inside["ci_low"] <= 0.30 <= inside["ci_high"]
    assert "pipeline" not in inside["why"]  # the paper's model: a real comparison
    assert got[("long", "20-40%")]["verdict"] == "inside"
    toy["text"] = NUMBERS.format(value=75, low=80, high=95)
    got = _by_id(rep.report(_study(), object()).frame)
    assert got[("long", "75%")]["verdict"] == "outside"
    assert got[("long", "80-95%")]["verdict"] == "outside"


def test_other_model_is_a_pipeline_check_and_an_empty_arm_has_no_data(toy, tmp_path):
    toy["frame"] = _known_share_rows(0.30, runs=12, model="scripted/greedy")
    found = rep.report(_study(), object())
    got = _by_id(found.frame)
    assert "pipeline" in got[("long", "30%")]["why"] and got[("long", "30%")]["verdict"] == "inside"
    short = got[("short", "10%")]
    assert short["verdict"] == "no data" and short["n_runs"] == 0 and "short" in short["why"]
    prose = got[(None, "the share rises with the horizon")]
    assert prose["verdict"] == "statement" and prose["estimate"] is None
    assert rep.counts(found) == {"inside": 2, "outside": 0, "not comparable": 0, "no data": 1, "statement": 1}
    found.save(tmp_path)
    assert {p.suffix for p in tmp_path.glob("toy-horizon_replication.*")} >= {".csv", ".md", ".tex"}


def test_no_interval_is_not_comparable_and_two_conditions_are_two_rows(toy):
    one = _known_share_rows(0.30, runs=1, model="m").with_columns(ci_low=None, ci_high=None,
                                                                   why=pl.lit("no 95% interval from one run"))
    other = _known_share_rows(0.30, runs=12, model="m").with_columns(condition=pl.lit("h5-b"))
    toy["frame"] = pl.concat([one, other], how="vertical_relaxed")
    f = rep.report(_study(), object()).frame.filter(pl.col("paper") == "30%")
    assert f.height == 2 and sorted(f["verdict"]) == ["inside", "not comparable"]
    assert "one run" in f.filter(pl.col("verdict") == "not comparable")["why"][0]


def test_headline_widths_per_arm(toy):
    toy["frame"] = _known_share_rows(0.30, runs=12, model="m")
    widths = rep.headline_widths(_study(), object())
    assert widths["short"] == {"share": None} and 0 < widths["long"]["share"] < 1


def test_a_watched_row_of_another_kind_than_declared_is_refused(toy):
    toy["frame"] = _known_share_rows(0.40, runs=9, model="m").with_columns(interval=pl.lit("t"))
    assert rep.headline_widths(_study(), object())["long"]["share"] > 0  # status: widths only
    with pytest.raises(StudyError, match=r"share: arm 'long', condition 'h5' prints a 't' interval, not the 'bounded'"):
        rep.headline_widths(_study(), object(), watched=["share"])


def test_a_paper_number_naming_an_unknown_metric_is_refused(toy):
    toy["text"] = NUMBERS.format(value=30, low=20, high=40).replace('metric = "share"', 'metric = "shares"', 1)
    toy["frame"] = _known_share_rows(0.30, runs=4, model="m")
    with pytest.raises(StudyError, match=r"share-a.*shares"):
        rep.report(_study(), object())


@pytest.mark.parametrize(("edit", "where"), [
    (('kind = "value"\nvalue = {value}', 'kind = "value"'), r"number 0 \('share-a'\).*value"),
    (('low = {low}', 'low = 99'), r"number 1 \('range-a'\).*low <= high"),
    (('text = "the share rises with the horizon"', 'text = ""'), r"number 3 \('prose'\).*text"),
    (('unit = "%"', 'unit = "percent"'), r"number 0 \('share-a'\): unit"),
    (('id = "short-a"', 'id = "share-a"'), r"ids used twice: \['share-a'\]"),
])
def test_a_bad_numbers_file_names_file_entry_and_field(edit, where):
    text = NUMBERS.replace(*edit, 1).format(value=30, low=20, high=40)
    with pytest.raises(PaperNumbersError, match=where) as exc:
        read_numbers(text, "env/paper_numbers.toml")
    assert "env/paper_numbers.toml" in str(exc.value)


def test_shipped_numbers_validate_and_name_metrics_their_environment_computes():
    from scarce_lab.analysis.paper_numbers import numbers_of

    for env in ("scarce", "sovsim", "economy"):
        nums = numbers_of(env)
        names = registry.get(env).study_metrics(None)
        assert nums and all(n.metric in names for n in nums if n.metric), env


def test_sovsim_paper_claims_read_the_numbers_file():
    from scarce_lab.analysis.paper_numbers import numbers_of
    from scarce_lab.environments.sovsim.analysis.paper import PAPER_CLAIMS

    texts = {n.id: n.text for n in numbers_of("sovsim")}
    assert PAPER_CLAIMS["survival_drop_kcpr_m"] == texts["survival_drop_kcpr_m"] and "87.3%" in texts[
        "survival_drop_kcpr_m"]


def test_a_profile_counts_only_its_own_runs_and_its_departures():
    """The shipped scripted memory runs under their profile: each arm's runs found by
    their exact condition, the label metrics saying they need labels, the profile's
    settings listed as departures; under a profile of another model no run counts."""
    from scarce_lab.studies import get

    st = get("memory-horizon")
    found = rep.report(st, "data/scarce/scripted/memory", profile="shipped-scripted")
    rows = found.frame.filter(pl.col("verdict") != "statement")
    assert rows.height and set(rows["verdict"]) == {"no data"} and set(rows["arm"]) == {"none", "cross"}
    assert all("needs judge labels" in w and "pipeline" in w for w in rows["why"])
    assert {"workers", "deadline_min"} <= set(found.departures)
    other = st.model_copy(update={"profiles": {"p": st.profiles["shipped-scripted"].model_copy(
        update={"models": {"model": "scripted/skilled:0.9", "negotiator_model": "scripted/strategic"}})}})
    none = rep.report(other, "data/scarce/scripted/memory", profile="p").frame
    assert set(none.filter(pl.col("verdict") != "statement")["why"]) == {"no run of arm 'cross' in this data",
                                                                         "no run of arm 'none' in this data"}


def test_a_headline_metric_the_environment_does_not_compute_is_refused(toy):
    toy["frame"] = _known_share_rows(0.30, runs=4, model="m")
    with pytest.raises(StudyError, match=r"headline metrics \['win_share'\]"):
        rep.headline_widths(_study().model_copy(update={"headline": ["share", "win_share"]}), object())


def test_a_study_folder_with_labels_gives_table_2(tmp_path):
    """A study's OUT folder (runs, ``study.json``, ``labels/labels.parquet``) reports
    Table 2 from the folder alone: labels that mark every cross-memory round as
    reciprocity and no other round give a share of 1 (outside the paper's 18%) in the
    cross arm and 0 (the paper's 0) in the none arm."""
    import shutil

    import scarce_lab as sl

    out = tmp_path / "memory"
    shutil.copytree("data/scarce/scripted/memory", out)
    (out / "study.json").write_text(json.dumps({"study": "memory-horizon", "profile": "shipped-scripted",
                                                "overrides": {}}))
    c = sl.load(out).scarce.contentions
    (out / "labels").mkdir()
    c.select("run_id", pl.col("contention").alias("round"), pl.col("worker").alias("agent"), "memory").with_columns(
        labels=pl.when(pl.col("memory") == "cross").then(pl.lit(["reciprocity"]))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))), n_valid=pl.lit(3), status=pl.lit("ok"),
    ).drop("memory").write_parquet(out / "labels" / "labels.parquet")
    got = {(r["arm"], r["metric"]): r for r in rep.report("memory-horizon", out).frame.iter_rows(named=True)}
    cross, none = got[("cross", "reciprocity")], got[("none", "reciprocity")]
    assert cross["estimate"] == 1.0 and cross["verdict"] == "outside" and cross["n_runs"] == 2
    assert none["estimate"] == 0.0 and none["verdict"] == "inside"


def test_the_paper_number_is_also_a_number_in_the_estimates_scale():
    from scarce_lab.analysis.paper_numbers import PaperNumber
    from scarce_lab.studies.report import _paper_bounds

    common = {"id": "x", "source": "SCARCE", "citation": "summary", "table": "Table 2", "model": "GLM-5.3",
              "arm": "cross", "metric": "reciprocity"}
    pct = PaperNumber.model_validate(common | {"kind": "value", "value": 23, "unit": "%"})
    assert _paper_bounds(pct) == {"paper_low": 0.23, "paper_high": 0.23}  # a share, as the estimate is
    span = PaperNumber.model_validate(common | {"kind": "range", "low": 32, "high": 84, "unit": "%"})
    assert _paper_bounds(span) == {"paper_low": 0.32, "paper_high": 0.84}
    words = PaperNumber.model_validate(common | {"kind": "statement", "text": "declines later"})
    assert _paper_bounds(words) == {"paper_low": None, "paper_high": None}


@pytest.mark.slow  # plays 4 short scripted games through a study run (about 10 s on 2 busy cores)
def test_a_profile_run_counts_each_run_in_its_own_arm_when_arms_differ_by_settings_off_by_default(tmp_path):
    """sovsim-institutions under its mixed-seat profile: an arm with sanctions off states no
    ``sanctions`` (off by default, left out of its condition settings), so the runs of the
    arm with them on matched it too and, in two arms, counted in none; and the rows of a
    mixed composition name their model as "a+b+c", which no profile names. Each arm now
    gets its own runs and so an interval width."""
    from scarce_lab.studies import get as get_study

    st = get_study("sovsim-institutions")
    st.run(out=tmp_path, profile="shipped-scripted", seeds=[6, 7], arms=["cpr-none", "cpr-sanctions"],
           overrides={"game.rounds": 2}, progress=False)
    widths = rep.headline_widths(st, tmp_path)
    for arm in ("cpr-none", "cpr-sanctions"):
        assert all(w is not None and w > 0 for w in widths[arm].values()), (arm, widths[arm])
    assert all(w is None for w in widths["bcpr-all"].values())  # no run there
