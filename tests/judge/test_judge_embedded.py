"""End-to-end labelling of a tiny SCARCE run with the embedded model (2 calls)."""

import json

import pytest

from scarce_lab.judge.judges import make_judges
from scarce_lab.judge.judging import JUDGE_STATUSES
from scarce_lab.judge.panel import label_units
from scarce_lab.judge.taxonomy import load_taxonomy
from scarce_lab.judge.units import units_from_path
from tests.judge.test_judge_units import make_scarce_run


@pytest.mark.embedded
def test_label_tiny_scarce_run_with_embedded_model(tmp_path, embedded_model):
    from scarce_lab.llm import LLMClient, LLMSettings

    tax = load_taxonomy("scarce")
    units = [
        u for u in units_from_path(make_scarce_run(tmp_path / "data")) if u.unit_id == "tiny:1:w0"
    ]
    judges = make_judges([embedded_model, embedded_model])  # same model: seed + prompt variant
    client = LLMClient(LLMSettings(cache_dir=tmp_path / "cache", timeout_s=1800))
    out = tmp_path / "out"
    res = label_units(units, tax, judges, client=client, out_dir=out, progress=False)
    assert "only 1 distinct model" in res.note
    assert res.labels.select("unit_id", "run_id", "round", "agent").rows() == [
        ("tiny:1:w0", "tiny", 1, "w0")
    ]
    # Every answer is a rating or a recorded missing rating: no crash, no transport error.
    assert set(res.judgements["status"]) <= set(JUDGE_STATUSES) - {"transport_error"}
    assert res.judgements.height == 2
    for labels in res.judgements["labels"].to_list():
        assert set(labels) <= set(tax.ids)
    for row in res.labels.iter_rows(named=True):
        assert set(row["labels"]) <= set(tax.ids) and row["n_judges"] == 2
    calls = [json.loads(x) for x in (out / "llm_calls.jsonl").read_text().splitlines()]
    assert len(calls) >= 2 and all(c["model"] == embedded_model for c in calls)
    assert all(0 < c["prompt_tokens"] < 4096 for c in calls if c["prompt_tokens"])
