"""The faces of forks: ``scarce-lab fork``, ``sl.fork``/``sl.effects`` (lazy on the face),
and the paired effects with their interval over parents."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.forks.effects import MIN_PARENTS, paired_effects

SHIPPED = Path(__file__).parents[2] / "data" / "sovsim"


def test_the_cli_forks_and_refuses_by_name(tmp_path):
    runner = CliRunner()
    run = SHIPPED / "sovsim-kcpr_m-scripted-random-s0-3"
    r = runner.invoke(app, ["fork", str(run), "--at", "round=2", "--intervene", "rule:setting=misreport,value=false",
                            "--seeds", "0..2", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert [Path(p).name[-6:] for p in r.output.split()] == ["-fork0", "-fork1", "-fork2"]
    r = runner.invoke(app, ["fork", str(run), "--at", "2", "--intervene", "seat_model:seat=duke,model=scripted/greedy",
                            "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "no seat 'duke'" in r.output


def _row(parent, seed, label, value, env="e"):
    return {"environment": env, "parent": parent, "at": 2, "seed": seed, "intervention": label,
            "metrics": {"m": value}}


def test_effects_pair_by_parent_and_seed_and_give_the_medians_interval_over_parents():
    # most parents unchanged, one changed a lot: the shape where a t interval of the mean fails
    shift = [0.0, 0.0, 0.0, 0.5, 1.0, 9.0, 0.0][:MIN_PARENTS + 1]
    vals = []
    for p, d in enumerate(shift):
        for s in range(2):
            vals += [_row(f"p{p}", s, "none", 10.0 + p), _row(f"p{p}", s, "rule:x=1", 10.0 + p + d + (s - 0.5))]
    vals.append(_row("orphan", 0, "rule:x=1", 99.0))  # no none partner: left out, counted
    (r,) = paired_effects(vals).iter_rows(named=True)
    assert r["effect"] == pytest.approx(0.0) and r["mean_effect"] == pytest.approx(sum(shift) / len(shift))
    assert r["n_parents"] == MIN_PARENTS + 1 and r["n_pairs"] == 2 * len(shift) and r["unpaired"] == 1
    assert (r["ci_low"], r["ci_high"]) == (0.0, 9.0) and r["why"] is None  # 7 parents: smallest to largest


def test_effects_of_too_few_parents_have_no_interval_and_say_why():
    vals = [_row("p0", s, k, v) for s in range(4) for k, v in (("none", 1.0), ("rule:x=1", 2.0 + s))]
    (r,) = paired_effects(vals).iter_rows(named=True)
    assert r["effect"] == pytest.approx(2.5) and r["ci_low"] is None and "from 1 parent" in r["why"]
    assert not math.isnan(r["effect"])
    five = [_row(f"p{p}", 0, k, v) for p in range(MIN_PARENTS - 1) for k, v in (("none", 0.0), ("rule:x=1", p))]
    (r,) = paired_effects(five).iter_rows(named=True)
    assert r["ci_low"] is None and f"needs {MIN_PARENTS}" in r["why"] and "0.938" in r["why"]


def test_sl_effects_on_shipped_forks(tmp_path):
    import scarce_lab as sl

    for run in sorted(SHIPPED.glob("sovsim-kcpr-scripted-conditional-s0-*"))[:2]:
        for iv in ("none", "seat_model:seat=king,model=scripted/greedy"):
            sl.fork(run, at=3, intervene=iv, seeds="0..1", out=tmp_path)
    f = sl.effects(tmp_path)
    row = f.frame.filter(f.frame["metric"] == "survival_time").row(0, named=True)
    assert row["intervention"] == "seat_model:king=scripted/greedy" and row["n_parents"] == 2
    assert row["effect"] < 0 and row["ci_low"] is None  # a greedy king ends the game sooner; 2 parents: no interval


@pytest.mark.parametrize("text, want", [
    ("replace_message:agent=a2,text=I take 5, agent=a1", {"agent": "a2", "text": "I take 5, agent=a1"}),
    ("replace_message: agent=w1.public , text=a=b,c", {"agent": "w1.public", "text": "a=b,c"}),
    ("rule:setting=talk,value=public", {"setting": "talk", "value": "public"}),
])
def test_the_text_form_keeps_a_message_whole(text, want):
    from scarce_lab.forks.interventions import parse_intervention

    got = parse_intervention(text).model_dump()
    assert {k: got[k] for k in want} == want


@pytest.mark.parametrize("text, match", [
    ("replace_message:agent=a2,agent=a1,text=x", r"'agent' is given twice"),
    ("rule:setting=talk,value=public,setting=misreport", r"'setting' is given twice"),
    ("replace_message:text=hi, agent=a1", r"agent: Field required; text= takes the rest of the line"),
])
def test_the_text_form_refuses_what_it_would_guess(text, match):
    from scarce_lab.forks.interventions import parse_intervention

    with pytest.raises(ValueError, match=match):
        parse_intervention(text)


@pytest.mark.parametrize(("text", "want"), [
    ("rule:setting=rounds,value=010", 10),         # PyYAML 1.1: octal 8
    ("rule:setting=rounds,value=1:30", "1:30"),     # PyYAML 1.1: sexagesimal 90
    ("rule:setting=talk,value=off", "off"),         # PyYAML 1.1: False
    ("rule:setting=rounds,value=0x10", "0x10"),     # PyYAML 1.1: 16 (a number field then refuses the text)
    ("replace_decision:agent=w1,decision={value: 010}", {"value": 10}),
])
def test_the_text_form_reads_values_as_dash_s_does(text, want):
    """A value is read with the YAML 1.2 core schema (config.base.load_yaml), never
    PyYAML's 1.1 scalars, which turned numbers into other numbers silently."""
    from scarce_lab.config.base import load_yaml
    from scarce_lab.forks.interventions import parse_intervention

    got = parse_intervention(text).model_dump()
    assert got.get("value", got.get("decision")) == want
    raw = text.rpartition("=")[2] if "decision" not in text else text.partition("decision=")[2]
    assert load_yaml(raw) == want  # the same reading as -S
