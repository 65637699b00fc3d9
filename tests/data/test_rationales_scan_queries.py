"""Queries of the lazy SovSim release reader (``scan_rationales_many``) that polars
pushes into the source in forms the first tests did not ask: a projection of columns
that are constants of the layout (``valid``, ``source``), and a row limit that polars
hands over together with a filter written after it; each must give the rows the eager
table gives, over several batches."""

from __future__ import annotations

import json
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from scarce_lab.environments.sovsim.published import sovsim_json as sj


@pytest.fixture
def scan_and_table(tmp_path, monkeypatch):
    monkeypatch.setattr(sj, "BATCH_RECORDS", 9)  # several batches per file
    rng = random.Random(11)
    root = tmp_path / "agent_rationales"
    for model, condition in (("q-1", "bcpr"), ("q-1", "cpr"), ("q-2", "kcpr_m")):
        recs = [{"simulation_id": s, "round": t, "pool_before": 90.0, "extractions": [rng.randint(0, 9) for _ in range(3)],
                 "final_pool": 60.0, "payoffs": [1.0, 2.0, 3.0], "collapsed": t == 5, "announced_pool": 70.0,
                 "reasonings": ["u", "v", "w"]} for s in (2, 1, 3) for t in range(1, 6)]
        p = root / model / condition / "rationales.json"
        p.parent.mkdir(parents=True)
        text = json.dumps(recs)
        if condition == "cpr":  # a number as text: this file goes through the strict reader
            text = text.replace('"final_pool": 60.0', '"final_pool": "60"', 1)
        p.write_text(text)
    files = sorted(root.rglob("rationales.json"))
    return sj.scan_rationales_many(files, root=root), sj.read_rationales_many(files, root=root)


@pytest.mark.parametrize("columns", [["valid"], ["source"], ["settings", "fallback_used"], ["valid", "round"]])
def test_a_projection_of_constant_columns_has_a_row_per_agent_round(scan_and_table, columns):
    lf, table = scan_and_table
    assert table.height == 3 * 15 * 3  # three files of 15 records of 3 agents
    assert_frame_equal(lf.select(columns).collect(), table.select(columns))
    assert lf.group_by("source").len().collect().item(0, "len") == table.height


@pytest.mark.parametrize("query", [
    lambda lf: lf.head(40).filter(pl.col("agent") == "a2"),
    lambda lf: lf.head(100).filter(pl.col("round") > 3).select("run_id", "extraction"),
    lambda lf: lf.filter(pl.col("agent") == "a1").head(7),
    lambda lf: lf.head(0).filter(pl.col("agent") == "a1"),
])
def test_a_row_limit_and_a_filter_give_the_eager_rows(scan_and_table, query):
    lf, table = scan_and_table
    assert_frame_equal(query(lf).collect(), query(table.lazy()).collect())
