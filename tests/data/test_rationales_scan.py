"""The lazy reader of the SovSim release (``scan_rationales_many``): what a query of it
collects is what the eager reader gives for the same query (the columns asked, a
filter, a row limit), a file only the strict reader takes included; it parses nothing
until collected and names the file of a refused record; Table 1 of the scan equals
Table 1 of the eager table."""

from __future__ import annotations

import json
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from scarce_lab.environments.sovsim.agent_rounds import AGENT_ROUND_SCHEMA, is_parsed_scan
from scarce_lab.environments.sovsim.analysis.metrics import sovsim_table
from scarce_lab.environments.sovsim.published import sovsim_json as sj
from scarce_lab.environments.sovsim.tables import load_agent_rounds


def _game(rng: random.Random, sim: int, condition: str, rounds: int = 12) -> list[dict]:
    recs, pool = [], 120.0
    for t in range(1, rounds + 1):
        z = [rng.randint(0, 20) for _ in range(4)]
        left = max(0.0, pool - sum(z))
        rec = {"simulation_id": sim, "round": t, "pool_before": pool, "extractions": z, "final_pool": left,
               "payoffs": [float(x) for x in z], "collapsed": left < 5, "reasonings": [f"r{sim}.{t}.{i}" for i in range(4)]}
        if condition == "kcpr_m":
            rec["announced_pool"] = pool - rng.randint(0, 30)
        recs.append(rec)
        if left < 5:
            break
        pool = min(120.0, 2 * left)
    return recs


@pytest.fixture
def tree(tmp_path):
    rng = random.Random(7)
    root = tmp_path / "agent_rationales"
    for model in ("m-b", "m-a"):
        for condition in ("kcpr_m", "cpr", "bcpr"):
            recs = [r for s in range(1, 12) for r in _game(rng, s, condition)]  # ids 1..11: text order differs
            p = root / model / condition / "rationales.json"
            p.parent.mkdir(parents=True)
            text = json.dumps(recs)
            if (model, condition) == ("m-a", "bcpr"):  # a number as text: only the strict reader takes it
                text = text.replace('"pool_before": 120.0', '"pool_before": "120"', 1)
            p.write_text(text)
    return root


def test_a_query_of_the_scan_collects_what_the_eager_reader_gives(tree):
    files = sorted(tree.rglob("rationales.json"))
    assert sj._read_raw(tree / "m-a" / "bcpr" / "rationales.json") is None  # the strict reader's file is there
    eager = sj.read_rationales_many(files, root=tree)
    lf = sj.scan_rationales_many(files, root=tree)
    assert is_parsed_scan(lf) and not is_parsed_scan(lf.select("run_id")) and not is_parsed_scan(eager)
    assert_frame_equal(lf.collect(), eager)
    assert eager.columns == list(AGENT_ROUND_SCHEMA) and eager.height > 500
    assert_frame_equal(lf.select("run_id", "extraction", "reasoning").collect(),
                       eager.select("run_id", "extraction", "reasoning"))
    flt = (pl.col("round") == 3) & (pl.col("agent") == "a3")
    assert_frame_equal(lf.filter(flt).select("run_id", "remainder_seen").collect(),
                       eager.filter(flt).select("run_id", "remainder_seen"))
    assert_frame_equal(lf.head(37).collect(), eager.head(37))
    assert lf.select(pl.len()).collect().item() == eager.height
    # the eager reader of the folder gives the same table
    assert_frame_equal(load_agent_rounds(tree, cache=False), eager)


def test_table1_of_the_scan_equals_table1_of_the_eager_table(tree):
    lf = load_agent_rounds(tree, cache=False, lazy=True)
    assert is_parsed_scan(lf)
    assert_frame_equal(sovsim_table(lf, force=True), sovsim_table(load_agent_rounds(tree, cache=False), force=True))


def test_the_scan_parses_nothing_until_collected_and_names_the_file_it_refuses(tree):
    bad = tree / "m-b" / "cpr" / "rationales.json"
    recs = json.loads(bad.read_text())
    del recs[5]["extractions"]
    bad.write_text(json.dumps(recs))
    lf = sj.scan_rationales_many(sorted(tree.rglob("rationales.json")), root=tree)  # no error yet
    with pytest.raises(ValueError, match=r"m-b/cpr/rationales.json: record 5 lacks field\(s\) \['extractions'\]"):
        lf.select("extraction").collect()
