"""Chart plumbing and the figure standard: strict-JSON specs (no NaN), a static PNG
beside the interactive widget, NoFigure instead of empty charts, readable names,
deterministic sentences, and the SovSim figure choices (threshold, surviving runs)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import altair as alt
import nbformat
import polars as pl
import pytest

from scarce_lab.analysis import figures as F
from scarce_lab.analysis.charts import ci_chart, pretty
from scarce_lab.environments.sovsim.analysis import charts, conventions, metrics

REPO = Path(__file__).resolve().parents[2]


def _strict(spec: dict) -> None:
    json.loads(json.dumps(spec, allow_nan=False))


@pytest.fixture(scope="module")
def sovsim():
    from scarce_lab.environments.sovsim.tables import load_agent_rounds

    df = load_agent_rounds(REPO / "data" / "sovsim")
    conv = conventions.convention("sovsim")
    return df, metrics.simulation_metrics(df, conv), conv


def test_nan_in_polars_data_becomes_null_and_unclean_specs_are_refused():
    raw = pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1.0, float("nan"), float("inf")]})
    with pytest.raises(ValueError, match="NaN"):
        F.strict_spec(alt.Chart(raw).mark_point().encode(x="x", y="y"))
    clean = F.chart_data(raw)
    assert clean["y"].to_list() == [1.0, None, None]
    _strict(F.strict_spec(alt.Chart(clean).mark_point().encode(x="x", y="y")))


def test_ci_chart_with_nan_bounds_is_strict_json():
    df = pl.DataFrame({"model": ["a", "b"], "value": [0.5, 0.2], "lo": [float("nan"), 0.1],
                       "hi": [float("nan"), 0.3], "n": [3, 4], "runs": [1, 2]})
    _strict(F.strict_spec(ci_chart(df, "model", title="t", y_title="share")))


@pytest.mark.slow
def test_offline_renderer_gives_a_png_sized_in_css_pixels_and_a_widget():
    chart = alt.Chart(pl.DataFrame({"a": [1, 2]})).mark_point().encode(x="a:Q").properties(width=200, height=100)
    data, meta = F.offline_renderer(chart.to_dict())
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = F._png_size(png)
    assert meta["image/png"]["width"] == round(w / 2) and 200 <= meta["image/png"]["width"] < 320
    assert F.WIDGET_MIME in data  # anywidget is installed in the dev environment


def test_static_outputs_keeps_only_the_image():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("chart")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={
        "image/png": "iVBOR", "text/plain": "<altair.jupyter.jupyter_chart.JupyterChart object>",
        F.WIDGET_MIME: {"model_id": "x", "version_major": 2, "version_minor": 1}}, execution_count=1)]
    nb.cells = [cell]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    assert F.static_outputs(nb) == 1
    assert set(nb.cells[0].outputs[0]["data"]) == {"image/png", "text/plain"}
    assert "widgets" not in nb.metadata


def test_no_figure_writes_nothing_and_removes_a_stale_figure(tmp_path):
    (tmp_path / "f.png").write_bytes(b"old")
    nf = F.NoFigure("no KCPR-M announcements in this dataset")
    assert F.save_chart(nf, "f", tmp_path) == []
    assert not (tmp_path / "f.png").exists()
    assert "No figure: no KCPR-M" in nf._repr_markdown_() and not nf


def test_empty_inputs_give_reasons_not_empty_charts(sovsim):
    df, per_sim, _ = sovsim
    no_m = df.filter(pl.col("base_condition") != "kcpr_m")
    assert isinstance(charts.misreport_chart(no_m), F.NoFigure)
    cpr = per_sim.filter(pl.col("base_condition") == "cpr")
    assert "no simulation with a leader" in charts.leader_rate_chart(cpr).reason
    empty = pl.DataFrame({"model": [], "value": [], "lo": [], "hi": []},
                         schema={"model": pl.String, "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64})
    assert isinstance(ci_chart(empty, "model", title="Private chat"), F.NoFigure)


def test_pool_dynamics_draws_the_collapse_threshold_and_readable_panels(sovsim):
    df, _, conv = sovsim
    spec = F.strict_spec(charts.pool_dynamics_chart(df, conv))
    text = json.dumps(spec)
    assert '"threshold": 12.0' in text and "strokeDash" in text
    assert "KCPR-M (king may misreport)" in text and "95% t-interval over simulations" in text
    govsim = json.dumps(F.strict_spec(charts.pool_dynamics_chart(df, conventions.convention("govsim"))))
    assert '"threshold": 5.0' in govsim


def test_trajectories_show_surviving_runs_and_say_which(sovsim):
    df, per_sim, _ = sovsim
    picks = charts.pick_simulations(per_sim, ["scripted/random", "scripted/sustainable"], "kcpr")
    assert picks["survived"].all()
    assert picks.filter(pl.col("model") == "scripted/sustainable")["simulation"].to_list() == [0]
    spec = json.dumps(F.strict_spec(charts.trajectories_chart(df, per_sim, ["scripted/sustainable"])))
    assert "simulation 0 (survived, 12 rounds)" in spec and "sovsim-kcpr-scripted-sustainable" in spec
    # a model whose KCPR runs all collapsed: said, not silently replaced by a collapsed run
    chosen = charts.trajectories_chart(df, per_sim, ["scripted/greedy"])
    assert isinstance(chosen, F.NoFigure) and "scripted/greedy" in chosen.reason
    picked = json.dumps(F.strict_spec(charts.trajectories_chart(df, per_sim, ["scripted/greedy"], simulations=[2])))
    assert "simulation 2 (collapsed" in picked
    with pytest.raises(ValueError, match="not in the dataset"):
        charts.trajectories_chart(df, per_sim, ["no/such-model"])


def test_leader_rate_axis_is_defined_and_r_values_are_not_in_the_title(sovsim):
    _, per_sim, _ = sovsim
    spec = F.strict_spec(charts.leader_rate_chart(per_sim))
    text = json.dumps(spec)
    assert "remainder seen" not in text and "divided by the pool left after the others' extractions" in text
    assert "r = " not in json.dumps(spec["title"])
    table = charts.correlation_table(per_sim)
    assert table.columns[:5] == ["Model", "n simulations", "r", "95% CI (Fisher z)", "p"]
    assert table.columns[5].startswith("p adjusted (Holm, ")  # the models are one family of tests


def test_survival_sentence_breaks_ties_by_condition_order():
    summary = pl.DataFrame({"model": ["m"] * 4, "condition": ["kcpr", "bcpr", "cpr", "kcpr_m"],
                            "survival_time_mean": [5.0, 12.0, 12.0, 5.0]})
    s = charts.survival_sentence(summary)
    assert "longest survival under CPR (symmetric)" in s and "shortest under KCPR (king)" in s
    assert charts.survival_sentence(summary.reverse()) == s


def test_readable_names():
    assert pretty("full_resolution_rate") == "Full resolution rate"
    assert pretty("some_new_code") == "some new code"
    assert charts.condition_label("kcpr_m") == "KCPR-M (king may misreport)"


def test_large_datasets_draw_counted_charts_not_one_mark_per_row(sovsim):
    """Found at scale: altair refuses more than 5,000 rows, and a million
    agent-rounds gave tens of thousands of misreports and simulations. Charts count in
    polars instead: their data stays small whatever the dataset's size."""
    df, per_sim, _ = sovsim
    big = pl.concat([df.with_columns(run_id=pl.col("run_id") + f"-{i}") for i in range(40)])
    chart = charts.misreport_chart(big)
    assert not isinstance(chart, F.NoFigure)
    rows = chart.to_dict()["datasets"]
    assert rows and all(len(v) <= 200 for v in rows.values())
    many = pl.concat([per_sim.with_columns(run_id=pl.col("run_id") + f"-{i}") for i in range(400)])
    lead = many.filter(pl.col("leader_extraction_rate").is_not_null())
    assert lead.height > charts.MAX_POINTS
    dense = charts.leader_rate_chart(many)
    assert all(len(v) <= 2000 for v in dense.to_dict()["datasets"].values())
    assert "counts per cell" in str(dense.to_dict())


def test_saved_tables_write_nested_columns_as_json_and_keep_table1_statuses(tmp_path, sovsim):
    """The demo wrote polars Series printouts ("shape: (1,) Series: ...") for list
    columns, and "–" for both "not applicable" and "no event" in the saved Table 1."""
    df = pl.DataFrame({"models": [["a", "b"], []], "drops": [[0.5, float("nan")], None], "k": [1, 2]})
    F.save_table(df, "nested", tmp_path, convention={"note": "test table"})
    md = (tmp_path / "nested.md").read_text()
    assert '["a", "b"]' in md and "[0.5, null]" in md and "Series" not in md
    back = pl.read_csv(tmp_path / "nested.csv")
    assert json.loads(back["models"][0]) == ["a", "b"] and back["drops"][1] is None
    _, per_sim, conv = sovsim
    summary = metrics.summarize(per_sim, conv=conv)
    shown = metrics.table1_display(summary)
    cpr = shown.filter(pl.col("Condition") == "cpr").row(0, named=True)
    assert cpr["Leader extraction rate"] == "n/a"  # CPR has no leader: not applicable
    markdown = metrics.format_table(summary)
    for row in shown.iter_rows(named=True):  # the same cells as `scarce-lab table sovsim`
        assert "| " + " | ".join(str(v) for v in row.values()) + " |" in markdown


def test_misreport_histogram_bars_start_at_zero(sovsim):
    """A ranged bar with x/x2 and only y is drawn as a floating square at the count."""
    df, _, _ = sovsim
    spec = charts.misreport_chart(df).to_dict()
    enc = json.dumps(spec)
    assert '"x2"' in enc and '"y2"' in enc


# -- figure rules: every chart goes through figures.titled ----------------------
def _points(groups: list[str], values: list[float] | None = None) -> alt.Chart:
    df = pl.DataFrame({"g": groups, "x": list(range(len(groups))),
                       "y": values if values is not None else [1.0 + i for i in range(len(groups))]})
    return alt.Chart(df).mark_point().encode(x="x:Q", y="y:Q", color="g:N").properties(width=300)


def test_more_than_eight_colour_groups_are_refused():
    F.titled(_points([f"g{i}" for i in range(8)]), "eight")  # at the limit: fine
    with pytest.raises(F.ChartRuleError, match="9 groups"):
        F.titled(_points([f"g{i}" for i in range(9)]), "nine")


def test_legend_entries_that_read_alike_are_refused():
    with pytest.raises(F.ChartRuleError, match="read alike"):
        F.titled(_points(["embedded/smollm2", "Embedded/smollm2 "]), "dupes")
    long = "embedded/smollm2 | " + "x" * 60
    cut = alt.Chart(pl.DataFrame({"g": [long + "a", long + "b"], "x": [0, 1], "y": [1.0, 2.0]})).mark_point().encode(
        x="x:Q", y="y:Q", color=alt.Color("g:N", legend=alt.Legend(labelLimit=120)))
    with pytest.raises(F.ChartRuleError, match="cut at 120 px"):
        F.titled(cut, "cut labels")


def test_charts_wider_than_the_output_area_are_refused_and_ci_chart_wraps():
    wide = _points(["a", "b"]).properties(width=F.OUTPUT_WIDTH)
    with pytest.raises(F.ChartRuleError, match="wider than the notebook output area"):
        F.titled(wide, "too wide")
    res = pl.DataFrame({"metric": [f"m{i}" for i in range(7)], "x": ["a"] * 7, "value": [0.5] * 7,
                        "lo": [0.4] * 7, "hi": [0.6] * 7, "runs": [3] * 7})
    chart = ci_chart(res, "x", column="metric", width=260)  # 7 panels of 260 px: wrapped
    spec = chart.to_dict()
    assert spec["columns"] < 7 and F.estimate_width(spec) <= F.OUTPUT_WIDTH


def test_ci_chart_with_many_groups_facets_instead_of_colouring():
    n = 12
    res = pl.DataFrame({"group": [f"g{i}" for i in range(n)], "stage": [1] * n, "value": [0.5] * n,
                        "lo": [None] * n, "hi": [None] * n, "runs": [1] * n},
                       schema_overrides={"lo": pl.Float64, "hi": pl.Float64})
    spec = ci_chart(res, "stage", color="group", kind="line").to_dict()
    assert "color" not in json.dumps(spec["spec"]) or F.chart_problems(spec)[0] == []
    assert spec["facet"]["field"] == "group"


def test_charts_with_nothing_to_show_become_a_sentence(tmp_path):
    zero = F.titled(_points(["a", "b"], [0.0, 0.0]), "All zeros")
    assert isinstance(zero, F.NoFigure) and "every plotted value is zero" in repr(zero)
    assert F.save_chart(zero, "z", tmp_path) == [] and not list(tmp_path.iterdir())


def test_palette_is_okabe_ito_and_paper_export_has_sizes_and_no_title(tmp_path):
    chart = F.titled(_points(["a", "b"]), "Does y rise?", "n = 2; no interval")
    assert chart.to_dict()["config"]["range"]["category"] == F.PALETTE
    paths = F.save_chart(chart, "fig", tmp_path, formats=("pdf", "svg", "png"), size="one_column", title=False)
    names = sorted(p.name for p in paths)
    assert names == ["fig.caption.txt", "fig.pdf", "fig.png", "fig.svg"]
    assert (tmp_path / "fig.caption.txt").read_text().startswith("Does y rise?\nn = 2")
    svg = (tmp_path / "fig.svg").read_text()
    assert "Does y rise?" not in svg
    width = float(svg.split('width="', 1)[1].split('"', 1)[0])
    assert abs(width - F.SIZE_PRESETS["one_column"]) < 1.5
    png_w, _ = F._png_size((tmp_path / "fig.png").read_bytes())
    assert abs(png_w - F.SIZE_PRESETS["one_column"] * 300 / 72) < 6
    with pytest.raises(ValueError, match="size must be"):
        F.save_chart(chart, "fig", tmp_path, size="a4")


def test_save_table_writes_latex(tmp_path):
    paths = F.save_table(pl.DataFrame({"tactic_id": ["a&b"], "share": [0.5]}), "t1", tmp_path,
                         convention={"note": "x_y"})
    tex = [p for p in paths if p.suffix == ".tex"][0].read_text()
    assert "\\begin{tabular}{lr}" in tex and "a\\&b & 0.500" in tex and "tactic\\_id" in tex


@pytest.fixture
def book():
    b = F.start_colour_book()
    yield b
    F.stop_colour_book()


def _who(field: str, values: list[str]) -> pl.DataFrame:
    n = len(values)
    return pl.DataFrame({"phase": ["a"] * n, field: values, "group": ["m"] * n, "model": ["m"] * n,
                         "value": [1.0 + i for i in range(n)], "lo": [0.5] * n, "hi": [9.0] * n, "runs": [3] * n})


def test_one_meaning_per_colour_within_a_notebook(book):
    """Notebook 04's flip (the richer worker orange, then the urgent worker in that orange):
    without a book two charts colour two different things alike; with the notebook's book
    every thing keeps its colour and no colour stands for two things."""
    roles = _who("who", ["richer", "others"])
    urgency = _who("worker", ["urgent", "not urgent"])
    c1 = ci_chart(roles, "phase", color="who", column="group", title="roles")
    c2 = ci_chart(urgency, "phase", color="worker", column="group", title="urgency")
    c1b = ci_chart(roles, "phase", color="who", title="roles again")
    specs = [c.to_dict() for c in (c1, c2, c1b)]
    assert F.colour_conflicts(specs) == []
    assert book.colours == {"other workers": F.PALETTE[0], "richer worker": F.PALETTE[1],
                            "not urgent": F.PALETTE[2], "urgent": F.PALETTE[3]}
    meanings = F.colour_meanings(specs[2])
    assert meanings[F.PALETTE[1].lower()] == {"richer worker": "who"}
    F.stop_colour_book()  # altair's own colours: sorted values along the palette, chart by chart
    plain = [ci_chart(roles, "phase", color="who", title="r").to_dict(),
             ci_chart(urgency, "phase", color="worker", title="u").to_dict()]
    problems = F.colour_conflicts(plain)
    assert len(problems) == 2 and all("stands for 2 things" in p for p in problems), problems
    # a thing in two colours is found too
    moved = json.loads(json.dumps(plain[0]))
    moved["layer"][0]["encoding"]["color"]["scale"] = {"domain": ["richer worker"], "range": ["#000000"]}
    assert any("drawn in 2 colours" in p for p in F.colour_conflicts([plain[0], moved]))


def test_a_full_colour_book_facets_instead_of_reusing_a_colour(book):
    first = ci_chart(_who("who", [f"model {i}" for i in range(8)]), "phase", color="who", title="8")
    assert len(book.colours) == 8 and "facet" not in first.to_dict()
    later = ci_chart(_who("memory", ["none", "subrun", "cross", "x1", "x2"]), "phase", color="memory", title="5")
    spec = later.to_dict()
    assert spec["facet"]["field"] == "memory"  # 4 colours left, 5 new things: panels, not shared colours
    assert F.colour_conflicts([first.to_dict(), spec]) == []
    # the panels' one series takes the book's next colour (never a group's)
    assert book.colours[F.ONE_SERIES] == F.BOOK_ORDER[8]
    for extra in list(book.free):
        book.colour(extra + "-thing")
    with pytest.raises(F.ChartRuleError, match="would share a colour"):
        book.colour("one too many")


def test_facet_axis_titles_wrap_to_the_panel_and_values_keep_their_case():
    from scarce_lab.analysis.charts import pretty_value, wrap_title

    assert wrap_title("Budget left before the contention", 160) == ["Budget left before the", "contention"]
    assert wrap_title("Stage", 160) == "Stage"
    assert pretty_value("urgent") == "urgent" and pretty_value("richer") == "richer worker"
    # a value named for its column only: "none" is a memory horizon there, nothing else elsewhere
    assert pretty_value("none", "memory") == "none (fresh each contention)" and pretty_value("none", "talk") == "none"
    assert pretty_value("cross", "memory") == "cross-subrun" and pretty_value("cross") == "cross"
    res = _who("who", ["richer", "others"]).rename({"phase": "budget_phase"})
    spec = ci_chart(res, "budget_phase", color="who", column="group", width=160).to_dict()
    title = spec["spec"]["layer"][0]["encoding"]["x"]["title"]
    assert isinstance(title, list) and max(len(x) for x in title) * F.CHAR_PX <= 160


def test_ci_chart_x_axis_is_in_order_when_a_group_lacks_a_stage():
    """Notebook 06's bid drift drew stages 1, 3, 2, 4: a group without stage 2 came first and
    the x scale followed the data's order (``sort: null``)."""
    res = pl.DataFrame({"group": ["a", "a", "b", "b", "b"], "stage": [1, 3, 1, 2, 3], "value": [1.0] * 5,
                        "lo": [0.5] * 5, "hi": [2.0] * 5, "runs": [2] * 5})
    spec = ci_chart(res, "stage", column="group", kind="line").to_dict()
    assert "sort" not in spec["spec"]["layer"][0]["encoding"]["x"]  # Vega-Lite's default: ascending


def _rule(colour: str, **mark) -> dict:
    import altair as alt

    return alt.Chart(pl.DataFrame({"y": [1.0]})).mark_rule(color=colour, **mark).encode(y="y:Q").to_dict()


def test_fixed_value_colours_take_part_in_one_meaning_per_colour(book):
    """A rule, reference line or highlight drawn at a fixed colour is read too (mark colour,
    ``value`` encodings, ``condition`` values): notebook 01's collapse threshold in the red of
    the leader's strip stood for two things; near-identical colours count as one."""
    import altair as alt

    d = pl.DataFrame({"x": [1, 2], "leader": [True, False]})
    strip = alt.Chart(d).mark_line().encode(
        x="x:Q", color=alt.condition("datum.leader", alt.value("#b2182b"), alt.value("#2166ac"))).to_dict()
    meanings = F.colour_meanings(strip)
    assert meanings["#b2182b"] == {"where datum.leader": "condition"}
    assert meanings["#2166ac"] == {"where not (datum.leader)": "condition"}
    # the same red as a threshold, and a red that only looks the same (Delta E < NEAR_DELTA_E)
    for red in ("#b2182b", "#cb181d"):
        problems = F.colour_conflicts([strip, _rule(red)])
        assert problems and ("stands for 2 things" in problems[0] or "look alike" in problems[0]), problems
    assert F.delta_e("#b2182b", "#cb181d") < F.NEAR_DELTA_E < F.delta_e(F.PALETTE[1], F.PALETTE[6])
    # the reference grey is the book's "reference" meaning, and no group gets it
    ref = _rule(F.REFERENCE)
    assert F.colour_meanings(ref) == {F.REFERENCE.lower(): {"reference": "fixed"}}
    assert F.colour_conflicts([strip, ref]) == []
    assert F.REFERENCE not in F.BOOK_ORDER
    # a described fixed mark is its description; a colour value on an encoding is read
    assert F.colour_meanings(_rule("#123456", description="threshold")) == {"#123456": {"threshold": "fixed"}}
    val = alt.Chart(d).mark_point().encode(x="x:Q", color=alt.value("#0072B2")).to_dict()
    assert F.colour_meanings(val) == {"#0072b2": {"a fixed colour": "fixed"}}
    # a group's colour reused at a fixed value is a conflict
    groups = ci_chart(_who("who", ["a", "b"]), "phase", color="who", title="g").to_dict()
    assert any("stands for 2 things" in p for p in F.colour_conflicts([groups, val]))
    # a chart's one series takes its own colour from the book, never a group's
    one = ci_chart(_who("who", ["a"]).drop("who"), "phase", title="one").to_dict()
    assert F.colour_conflicts([groups, one]) == []
    assert F.colour_meanings(one)[book.colours[F.ONE_SERIES].lower()] == {F.ONE_SERIES: "fixed"}


def test_cut_tick_labels_are_refused_and_group_labels_break_at_the_setting():
    """Notebook 02's win-rate axis cut "embedded/smollm2 | ballots fi...": a tick label longer
    than its axis's label limit is a chart problem (also per line of a split label expression);
    ci_chart draws "model | setting" whole and keeps the full condition in the tooltip."""
    import altair as alt

    d = pl.DataFrame({"g": ["embedded/smollm2 | ballots_fixed_mem-cross,deadline_min=25,workers=3", "b"],
                      "v": [1.0, 2.0]})
    cut = alt.Chart(d).mark_point().encode(x="g:N", y="v:Q").properties(title="t").to_dict()
    problems, _ = F.chart_problems(cut)
    assert any("would be cut" in p and "'g'" in p for p in problems), problems
    unlimited = alt.Chart(d).mark_point().encode(x=alt.X("g:N", axis=alt.Axis(labelLimit=0)), y="v:Q").to_dict()
    assert not any("would be cut" in p for p in F.chart_problems(unlimited)[0])
    groups = ["embedded/smollm2 | ballots_fixed_mem-cross", "embedded/smollm2 | workers=3", "scripted/fifo"]
    res = _who("group", groups).with_columns(condition=pl.lit("ballots_fixed_mem-cross,deadline_min=25"))
    spec = ci_chart(res, "group", title="win rate").to_dict()
    assert not any("would be cut" in p for p in F.chart_problems(spec)[0])
    x = spec["layer"][0]["encoding"]["x"]
    assert x["axis"]["labelLimit"] == 300 and "labelExpr" not in x["axis"]
    two_lines = alt.Chart(d).mark_point().encode(
        x=alt.X("g:N", axis=alt.Axis(labelExpr="split(datum.label, ' | ')")), y="v:Q").to_dict()
    assert any("would be cut" in p for p in F.chart_problems(two_lines)[0])  # a 50-character line at 180 px
    two_lines["encoding"]["x"]["axis"]["labelLimit"] = 400
    assert not any("would be cut" in p for p in F.chart_problems(two_lines)[0])
    tips = [t.get("title") for t in spec["layer"][1]["encoding"]["tooltip"] if isinstance(t, dict)]
    assert "full condition" in tips
    # the same labels on one line would be cut at a 180 px limit
    flat = alt.Chart(pl.DataFrame({"g": [g + ",rich_worker_budget=1500" for g in groups], "v": [1.0] * 3})).mark_point().encode(
        x="g:N", y="v:Q").to_dict()
    assert any("would be cut" in p for p in F.chart_problems(flat)[0])


def test_many_groups_wrap_into_narrower_panels_within_the_height_limit():
    """Notebook 06's 17 groups drew 9 rows of two panels (~2,600 px): the panels narrow so
    that the rows fit MAX_CHART_HEIGHT, and the chart still fits the output width."""
    from scarce_lab.analysis import charts as C

    groups = [f"scripted/model-{i:02d}" for i in range(17)]
    rows = [{"subrun": s, "group": g, "model": g, "value": 1.0 + s, "lo": 0.5, "hi": 3.0, "runs": 3}
            for g in groups for s in (1, 2)]
    spec = ci_chart(pl.DataFrame(rows), "subrun", color="group", kind="line", title="17", width=320).to_dict()
    assert spec["facet"]["field"] == "group"
    per_line = spec["columns"]
    n_rows = -(-17 // per_line)
    height = spec["spec"]["height"]
    assert n_rows * (height + C.PANEL_EXTRA_HEIGHT) + C.TITLE_HEIGHT <= C.MAX_CHART_HEIGHT, (per_line, height)
    assert F.estimate_width(spec) <= F.OUTPUT_WIDTH


def test_coloured_lines_differ_in_dash_and_shape_so_equal_lines_stay_visible():
    """Notebook 03's "none" line lay under "subrun" (equal values): each group's line also
    has its own dash pattern and point shape, on the colour's field (one legend)."""
    res = _who("memory", ["none", "subrun"]).with_columns(pl.Series("half", ["first", "second"]))
    spec = ci_chart(res, "half", color="memory", kind="line", title="m").to_dict()
    enc = spec["layer"][0]["encoding"]
    assert enc["strokeDash"]["field"] == enc["shape"]["field"] == enc["color"]["field"] == "memory"
    assert enc["strokeDash"]["title"] == enc["color"]["title"]
    # equal lines are also said in the caption; different ones are not
    same = _who("memory", ["none", "subrun", "cross"]).with_columns(
        pl.Series("half", ["first"] * 3), pl.Series("value", [1.0, 1.0, 2.0]))
    sub = ci_chart(same, "half", color="memory", kind="line", title="m").to_dict()["title"]["subtitle"]
    assert any(line.startswith("none (fresh each contention) and subrun coincide") for line in sub), sub
    assert not any("coincide" in line for line in ci_chart(res, "half", color="memory", kind="line",
                                                             title="m").to_dict()["title"]["subtitle"])


def test_no_two_book_colours_look_alike():
    """Every colour a book hands out, the reference grey included, is at least NEAR_DELTA_E
    from every other (notebook 07: Okabe-Ito's green and Tol's teal, 19 apart, read as one)."""
    import itertools

    colours = [*F.BOOK_ORDER, F.REFERENCE]
    close = [(a, b, round(F.delta_e(a, b))) for a, b in itertools.combinations(colours, 2)
             if F.delta_e(a, b) < F.NEAR_DELTA_E]
    assert close == []
    assert F.delta_e("#009E73", "#44AA99") < F.NEAR_DELTA_E  # the pair that was replaced


def test_a_ci_chart_without_any_interval_says_so_instead_of_naming_bars():
    """'bars: 95% t interval' under a chart that draws none (notebook 06's medians from
    few runs) names an interval the reader cannot see."""
    def caption_text(chart):
        return json.dumps(chart.to_dict())

    df = pl.DataFrame({"model": ["a", "b"], "value": [1.0, 2.0], "lo": [None, float("nan")], "hi": [None, float("nan")]})
    text = caption_text(ci_chart(df, "model", title="t", y_title="share"))
    assert "no bars: no group has an interval" in text and "bars: 95%" not in text
    with_ci = df.with_columns(lo=pl.Series([0.5, 1.5]), hi=pl.Series([1.5, 2.5]))
    assert "bars: 95%" in caption_text(ci_chart(with_ci, "model", title="t", y_title="share"))
