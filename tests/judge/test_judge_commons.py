"""The commons taxonomy: SovSim talk as judge units, labelled by the same panel,
arbitration, agreement statistics and storage as SCARCE, chosen by environment (the
SovSim spec's ``judge_units`` and ``taxonomy``)."""

from __future__ import annotations

import json

import pytest

from scarce_lab.config import SovSimConfig
from scarce_lab.environments.scarce.judge_units import units_from_dataset
from scarce_lab.environments.sovsim.judge_units import commons_units
from scarce_lab.environments.sovsim.runner.play import run_sweep
from scarce_lab.judge.agreement import label_agreement
from scarce_lab.judge.judges import make_judges
from scarce_lab.judge.panel import label_units
from scarce_lab.judge.taxonomy import load_taxonomy, taxonomy_for
from scarce_lab.judge.units import units_from_path

TAX = load_taxonomy("commons")


@pytest.fixture(scope="module")
def talk_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("commons")
    run_sweep([SovSimConfig(condition="bcpr", model="scripted/promise_defector", talk="public+private",
                            game={"rounds": 2}),
               SovSimConfig(condition="cpr", model="scripted/quota_keeper", talk="public", game={"rounds": 2})],
              out, progress=False)
    return out


def test_the_commons_taxonomy():
    assert TAX.ids == ["promise", "threat", "quota_proposal", "sustainability_appeal", "accusation"]
    assert TAX.relational_ids == {"threat", "quota_proposal", "accusation"}
    assert taxonomy_for("sovsim") == "commons" and taxonomy_for("scarce") == "scarce"
    with pytest.raises(ValueError, match="no judge taxonomy for environment 'economy'"):
        taxonomy_for("economy")


def test_units_are_talking_agent_rounds_with_only_what_the_speaker_saw(talk_data):
    units = units_from_path(talk_data)  # a SovSim folder gives commons units (its spec's judge_units)
    assert units == commons_units(talk_data)
    with pytest.raises(ValueError, match="a sovsim dataset, not SCARCE"):
        units_from_dataset(talk_data)  # SCARCE's builder refuses another environment's runs
    # promise defectors: 1 round (collapse) x 4 speakers; quota keepers: 2 rounds x 4
    assert len(units) == 4 + 8
    by_id = {u.unit_id: u for u in units}
    run = next(u.run_id for u in units if "promise_defector" in u.run_id)
    a2 = by_id[f"{run}:1:a2"]
    assert [(m.to, m.text[:23]) for m in a2.private_messages] == [("a3", "[promise extraction=15]")]
    # a2 saw a1's whisper to it, not a0's whisper to a1
    assert "a1 (privately to a2)" in a2.context and "a0 (privately to a1)" not in a2.context
    keeper = next(u for u in units if "quota_keeper" in u.run_id and u.agent == "a3" and u.round == 2)
    assert keeper.context.count("(to everyone)") == 3 and keeper.private_messages[0].to is None


def test_no_talk_is_an_error(tmp_path):
    run_sweep([SovSimConfig(condition="cpr", model="scripted/greedy", game={"rounds": 1})], tmp_path, progress=False)
    with pytest.raises(ValueError, match="no SovSim talk events"):
        commons_units(tmp_path)


def test_the_panel_labels_commons_units_and_measures_agreement(talk_data, tmp_path):
    from scarce_lab.llm import LLMClient, LLMSettings

    units = commons_units(talk_data)[:4]
    judges = make_judges(["openai/mock-a", "openai/mock-b", "openai/mock-c"])

    def answer(*pairs):
        return {"mock_response": json.dumps({"labels": [{"label": lab, "evidence": ev} for lab, ev in pairs]})}

    mocks = {"j1": answer(("promise", "I will take only 15")),
             "j2": answer(("promise", "I will take only"), ("sustainability_appeal", "keep the pool alive")),
             "j3": answer(("threat", "I will take"))}
    res = label_units(units, TAX, judges, client=LLMClient(LLMSettings(cache=False, max_retries=0)),
                      out_dir=tmp_path / "out", progress=False, call_kwargs=mocks)
    assert all(r["labels"] == ["promise"] for r in res.labels.iter_rows(named=True))
    assert json.loads((tmp_path / "out" / "panel.json").read_text())["taxonomy"] == "commons"
    agree = label_agreement({j.name: res.answers(j.name) for j in judges}, TAX.ids, [u.unit_id for u in units],
                            n_boot=50)
    assert set(agree["label"]) >= {"promise", "threat", "(pooled)"}


def test_cli_picks_the_taxonomy_by_environment(talk_data, tmp_path):
    from scarce_lab.cli.judge import _default_taxonomy

    assert _default_taxonomy(talk_data) == "commons"
    assert _default_taxonomy(tmp_path / "units.jsonl") == "scarce"


def test_scripted_talk_gives_gold_labels_to_validate_a_panel(talk_data, tmp_path):
    from scarce_lab.environments.sovsim.agents.scripted import PROMISE_TAG, QUOTA_TAG
    from scarce_lab.judge.validation import validate_panel
    from scarce_lab.llm import LLMClient, LLMSettings

    assert PROMISE_TAG.format(n=3) == "[promise extraction=3]" and QUOTA_TAG.format(n=3) == "[quota per_agent=3]"
    units = commons_units(talk_data, gold="intended")
    golds = {tuple(u.gold) for u in units}
    assert golds == {("promise", "sustainability_appeal"), ("quota_proposal", "sustainability_appeal")}
    judges = make_judges(["openai/mock-a"])
    mock = {"j1": {"mock_response": json.dumps({"labels": [{"label": "promise", "evidence": "I will take only"}]})}}
    rep = validate_panel(units[:4], TAX, judges, client=LLMClient(LLMSettings(cache=False, max_retries=0)),
                         out_dir=tmp_path / "v", progress=False, call_kwargs=mock)
    panel = rep.per_label["panel"]
    row = panel.filter(panel["label"] == "promise").row(0, named=True)
    assert row["precision"] == 1.0
    with pytest.raises(ValueError, match="gold must be"):
        commons_units(talk_data, gold="expert")
