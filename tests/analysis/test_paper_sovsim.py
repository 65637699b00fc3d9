"""The SovSim paper's definitions ("Bosses, Kings, and the Commons: Cooperation Under
Power Asymmetry in LLM Societies", arXiv 2605.29062) where our code used to depart from
them, each stated in the test's docstring with the source of the sentence.

Sources quoted: the paper's abstract; the authors' repository (abhilekhborah/sovsim:
README "Game Mechanics" and "Metrics" tables, ``simulation/metrics.py`` comments); and
the project's specification, which quotes the paper's cross-model figures. Data are hand-made release-shaped
trees (``agent_rationales/<model>/<condition>/rationales.json``) whose expected values
are computed here from the records, independently of the code under test.
"""

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.environments.sovsim.analysis.conventions import convention
from scarce_lab.environments.sovsim.analysis.cross import (
    cross_model_drops,
    leader_survival_across_models,
    overuse_by_role,
)
from scarce_lab.environments.sovsim.analysis.metrics import (
    format_table,
    simulation_metrics,
    summarize,
)
from scarce_lab.environments.sovsim.tables import load_agent_rounds
from scarce_lab.environments.sovsim.world.commons import CommonsConfig, CommonsGame, settle

SURVIVE = [(15, 15, 15, 15)] * 12  # pool stays 120: remaining 60 -> 120
KING_TAKES_ALL = [(15, 15, 15, 75)]  # remaining 0: collapse in round 1
CPR_COLLAPSE = [(30, 30, 30, 30)]


def records(cond: str, sims: list[list[tuple]], announce: list[list[int]] | None = None) -> list[dict]:
    """Round records in the release's format, by the game's rules (pool 120, capacity
    120, regeneration x2, collapse below 12, payoff z/3 + remaining/4)."""
    out = []
    for sid, rounds in enumerate(sims, 1):
        pool = 120
        for t, z in enumerate(rounds, 1):
            final = max(0, pool - sum(z))
            rec = {"simulation_id": sid, "round": t, "pool_before": pool, "extractions": list(z),
                   "final_pool": final, "payoffs": [zi / 3 + final / 4 for zi in z], "collapsed": final < 12,
                   "reasonings": ["-"] * len(z)}
            if cond == "kcpr_m":
                rec["announced_pool"] = announce[sid - 1][t - 1] if announce else pool
            out.append(rec)
            if final < 12:
                break
            pool = min(120, 2 * final)
    return out


def release(root: Path, data: dict[str, dict[str, list[list[tuple]]]]) -> Path:
    """Write ``{model: {condition: sims}}`` as a release tree under ``root``."""
    for model, conds in data.items():
        for cond, sims in conds.items():
            p = root / "agent_rationales" / model / cond / "rationales.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(records(cond, sims)))
    return root / "agent_rationales"


def per_sim_of(path: Path, **conv) -> pl.DataFrame:
    return simulation_metrics(load_agent_rounds(path), convention("sovsim", **conv))


def test_payoff_divides_the_remaining_pool_by_n():
    """Eq. 5. Authors' README, Game Mechanics: "Payoff: π_i = z_i/3 + P_remaining/n".
    The remaining pool is shared by the n agents of the game (the code once hard-coded 4)."""
    for n, z, remaining in [(3, (15, 15, 15), 75), (4, (15,) * 4, 60), (5, (15,) * 5, 45), (6, (12,) * 6, 48)]:
        rem, payoffs, collapsed, _ = settle(120, z, CommonsConfig(n_agents=n))
        assert rem == remaining and not collapsed
        assert payoffs == tuple(Fraction(zi, 3) + Fraction(remaining, n) for zi in z)
    # through the game: 5 agents, everyone takes 12 -> 60 remain -> payoff 4 + 12
    game = CommonsGame("cpr", CommonsConfig(n_agents=5))
    rec = game.act({a: 12 for a in game.agents})
    assert rec.payoffs == (Fraction(16),) * 5


def six_models() -> dict:
    """Per model (CPR survivors, KCPR-M survivors) out of 5, as in the release
    (Llama-3.3-70B, gpt-4o, gpt-4o-mini, gpt-5, o3, o4-mini)."""
    pattern = {"m1": (5, 0), "m2": (5, 3), "m3": (5, 0), "m4": (5, 0), "m5": (5, 1), "m6": (2, 0)}
    return {
        m: {"cpr": [SURVIVE] * c + [CPR_COLLAPSE] * (5 - c), "kcpr_m": [SURVIVE] * k + [KING_TAKES_ALL] * (5 - k)}
        for m, (c, k) in pattern.items()
    }


def test_mean_relative_drop_over_models_from_table_json(tmp_path):
    """Cross-model drop. Paper abstract: "introducing asymmetric power leads to severe
    breakdowns in cooperation and sustainability, with up to an 87.3% degradation in
    survival rate relative to symmetric settings"; the specification: "the mean over models of the
    relative drop in survival rate and in total gain from CPR to each asymmetric condition
    (the release gives 86.7% for survival)". On release-shaped data with the release's
    per-model survival counts, ``table sovsim --format json`` gives 86.7% at
    ``sovsim_cross_relative_drop[metric=survival_rate, condition=kcpr_m].mean``."""
    path = release(tmp_path, six_models())
    res = CliRunner().invoke(app, ["table", "sovsim", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = {(r["metric"], r["condition"]): r for r in doc["sovsim_cross_relative_drop"]}
    sr = rows[("survival_rate", "kcpr_m")]
    per_model = {"m1": 1.0, "m2": 0.4, "m3": 1.0, "m4": 1.0, "m5": 0.8, "m6": 1.0}  # (SR_cpr - SR_kcpr_m) / SR_cpr
    assert dict(zip(sr["models"], sr["drops"], strict=True)) == pytest.approx(per_model)
    assert sr["mean"] == pytest.approx(13 / 15) and round(100 * sr["mean"], 1) == 86.7
    assert sr["n_models"] == 6 and sr["models_undefined"] == []
    assert sr["ci_low"] <= sr["mean"] <= sr["ci_high"] <= 1.0
    # total gain: surviving game 12 x 4 x 20 = 960 points; a round-1 collapse 40 (cpr: 4 x 10; kcpr_m: 5+5+5+25)
    gain = {m: (c * 960 + (5 - c) * 40, k * 960 + (5 - k) * 40)
            for m, (c, k) in {"m1": (5, 0), "m2": (5, 3), "m3": (5, 0), "m4": (5, 0), "m5": (5, 1), "m6": (2, 0)}.items()}
    expected = np.mean([(c - k) / c for c, k in gain.values()])
    assert rows[("total_gain", "kcpr_m")]["mean"] == pytest.approx(expected)
    # Table 1 keeps the per-model drop beside it
    t1 = {(r["model"], r["condition"]): r for r in doc["table"]}
    assert t1[("m2", "kcpr_m")]["survival_drop_mean"] == pytest.approx(0.4)
    assert t1[("m2", "cpr")]["survival_drop_status"] == "not_applicable"


def test_drop_from_a_zero_cpr_survival_rate_is_undefined_not_zero(tmp_path):
    """The relative drop (SR_cpr - SR_c) / SR_cpr has no value when SR_cpr = 0: such a
    model is listed, not averaged in as a 0 or 100% drop."""
    data = six_models()
    data["m7"] = {"cpr": [CPR_COLLAPSE] * 3, "kcpr_m": [KING_TAKES_ALL] * 3}
    ps = per_sim_of(release(tmp_path, data))
    row = cross_model_drops(ps).filter((pl.col("metric") == "survival_rate") & (pl.col("condition") == "kcpr_m"))
    assert row["models_undefined"][0].to_list() == ["m7"] and row["mean"][0] == pytest.approx(13 / 15)
    t1 = summarize(ps).filter((pl.col("model") == "m7") & (pl.col("condition") == "kcpr_m")).row(0, named=True)
    assert t1["survival_drop_status"] == "undefined" and t1["survival_drop_mean"] is None
    assert "undef." in format_table(summarize(ps))


def test_overuse_split_by_role(tmp_path):
    """Over-usage by role. Authors' README: "Per-Capita Over-Usage: Fraction of
    agent-rounds exceeding per-capita sustainable share"; the specification quoting the paper:
    "8.9% for symmetric agents vs up to 100% for dominant agents". Symmetric agents are
    the citizens of CPR; dominant agents are the boss or king (the leader)."""
    one_over = [(18, 15, 15, 12)] + [(15, 15, 15, 15)] * 11  # 1 of 48 agent-rounds above 120/8 = 15
    king_30 = [(0, 0, 0, 30)] * 12  # the king takes 30 > 15 every round; remaining 90 -> 120
    path = release(tmp_path, {"A": {"cpr": [one_over], "kcpr": [king_30]},
                              "B": {"cpr": [SURVIVE], "kcpr": [SURVIVE]}})
    per_model, across = overuse_by_role(per_sim_of(path))
    pm = {(r["model"], r["condition"], r["role"]): r["mean"] for r in per_model.iter_rows(named=True)}
    assert pm == pytest.approx({("A", "cpr", "symmetric"): 1 / 48, ("B", "cpr", "symmetric"): 0.0,
                                ("A", "kcpr", "subordinate"): 0.0, ("A", "kcpr", "leader"): 1.0,
                                ("B", "kcpr", "subordinate"): 0.0, ("B", "kcpr", "leader"): 0.0})
    ac = {(r["condition"], r["role"]): r for r in across.iter_rows(named=True)}
    assert ac[("cpr", "symmetric")]["mean"] == pytest.approx(1 / 96)
    lead = ac[("kcpr", "leader")]
    assert (lead["mean"], lead["max"], lead["max_model"], lead["n_models"]) == (0.5, 1.0, "A", 2)


def test_leader_rate_vs_survival_across_models_states_its_unit(tmp_path):
    """Pearson r and R^2 between leader extraction rate and survival across models.
    Authors' README: "Leader Extraction Rate: Fraction of available pool taken by dominant
    agent per round"; the specification: "Pearson r and R^2 between leader extraction rate and
    survival across models (state which unit: model x condition cells or simulations)".
    Both units are reported; expected values are computed here from the records."""
    bcpr_sim = [(15, 15, 15, 30), (15, 15, 15, 30), (15, 15, 15, 0)]  # pools 120, 90, 30: collapse in round 3
    data = {
        "A": {"kcpr": [SURVIVE, SURVIVE, KING_TAKES_ALL], "bcpr": [SURVIVE, bcpr_sim]},
        "B": {"kcpr": [SURVIVE, KING_TAKES_ALL, KING_TAKES_ALL], "bcpr": [bcpr_sim, bcpr_sim]},
        "C": {"kcpr": [KING_TAKES_ALL] * 3, "bcpr": [SURVIVE, SURVIVE]},
    }
    path = release(tmp_path, data)
    cells_x, cells_y, sim_x, sim_y = [], [], [], []
    for model in "ABC":
        for cond in ("bcpr", "kcpr"):
            rates, survived = [], []
            for rounds in data[model][cond]:
                recs = records(cond, [rounds])
                r = [rec["extractions"][3] / (rec["pool_before"] - sum(rec["extractions"][:3]))
                     for rec in recs if rec["pool_before"] - sum(rec["extractions"][:3]) > 0]
                rates.append(np.mean(r))
                survived.append(len(recs) == 12)
                sim_x.append(np.mean(r))
                sim_y.append(len(recs))
            cells_x.append(np.mean(rates))
            cells_y.append(np.mean(survived))
    res = leader_survival_across_models(per_sim_of(path), seed=1)
    got = {r["unit"]: r for r in res.iter_rows(named=True)}
    cells, sims = got["cells"], got["simulations"]
    assert (cells["n"], cells["n_models"], sims["n"], sims["n_models"]) == (6, 3, 15, 3)
    assert cells["y"] == "survival rate of the cell" and sims["y"] == "survival time (rounds)"
    assert cells["r"] == pytest.approx(np.corrcoef(cells_x, cells_y)[0, 1])
    assert sims["r"] == pytest.approx(np.corrcoef(sim_x, sim_y)[0, 1])
    assert sims["r2"] == pytest.approx(sims["r"] ** 2) and sims["r"] < 0
    assert sims["ci_low"] <= sims["r"] <= sims["ci_high"]
    # 3 models: no bootstrap over models (a cluster bootstrap over so few clusters undercovers)
    assert sims["boot_ci_low"] is None and sims["boot_ci_high"] is None


def test_defection_onset_as_the_authors_define_it(tmp_path):
    """Defection onset. Authors' README: "Subordinate Defection Onset: First round where a
    subordinate exceeds per-capita sustainable extraction"; ``metrics.py``: "Only
    meaningful for asymmetric conditions (BCPR, KCPR, KCPR-M). Returns None for CPR", and
    the threshold is f(P_t)/n of the true pool P_t, in KCPR-M too. So: not applicable in
    CPR; in KCPR-M a peasant taking 9 of a true pool of 120 (share 15) does not defect even
    when the king announced 60 (share 7.5). The former rules stay options."""
    root = tmp_path / "agent_rationales" / "m"
    for cond, recs in {
        "cpr": records("cpr", [[(18, 15, 15, 12)] + [(15,) * 4] * 11]),
        "kcpr_m": records("kcpr_m", [[(9, 9, 9, 15)] * 12], announce=[[60] * 12]),
    }.items():
        (root / cond).mkdir(parents=True)
        (root / cond / "rationales.json").write_text(json.dumps(recs))
    paper = summarize(per_sim_of(tmp_path)).select("condition", "defection_onset_mean", "defection_onset_status")
    assert paper.rows() == [("cpr", None, "not_applicable"), ("kcpr_m", None, "no_event")]
    old = summarize(per_sim_of(tmp_path, defection_pool="seen", defection_in_cpr=True))
    assert old.select("condition", "defection_onset_mean").rows() == [("cpr", 1.0), ("kcpr_m", 1.0)]


def test_per_metric_n_and_not_applicable_vs_no_event_in_every_format(tmp_path):
    """Table 1: "Per-metric n is shown in Table 1 where it is smaller than the number of
    simulations, and 'not applicable' differs from 'no event'". Leader rate
    and misreport do not exist in CPR (not applicable); a KCPR game where no peasant
    defects has no onset (no event: a result); one of three games with a defection gives
    the onset over n = 1."""
    defect = [(18, 15, 15, 12)] + [(15,) * 4] * 11
    path = release(tmp_path, {"m": {"cpr": [SURVIVE] * 3, "kcpr": [SURVIVE] * 3, "bcpr": [defect, SURVIVE, SURVIVE]}})
    s = summarize(per_sim_of(path))
    row = {r["condition"]: r for r in s.iter_rows(named=True)}
    assert row["cpr"]["leader_extraction_rate_status"] == "not_applicable"
    assert row["cpr"]["misreport_status"] == row["kcpr"]["misreport_status"] == "not_applicable"
    assert row["kcpr"]["defection_onset_status"] == "no_event" and row["kcpr"]["defection_onset_n"] == 0
    assert (row["bcpr"]["defection_onset_mean"], row["bcpr"]["defection_onset_n"], row["bcpr"]["n"]) == (1.0, 1, 3)
    md = format_table(s)
    lines = {line.split(" | ")[1]: line for line in md.splitlines() if line.startswith("| m |")}
    assert "| n/a | n/a | n/a | n/a |" in lines["cpr"]  # leader rate, onset, misreport, drop
    assert "none (0/3)" in lines["kcpr"] and "1.00 (n=1)" in lines["bcpr"]
    csv = pl.read_csv(format_table(s, "csv").encode())
    assert csv.filter(pl.col("condition") == "kcpr")["defection_onset_status"].to_list() == ["no_event"]
    js = {r["condition"]: r for r in json.loads(format_table(s, "json"))}
    assert js["cpr"]["leader_extraction_rate"]["status"] == "not_applicable"
    assert js["kcpr"]["defection_onset"] | {"ci": None} == {"mean": None, "ci_low": None, "ci_high": None, "n": 0,
                                                            "status": "no_event", "ci": None}
    assert js["bcpr"]["defection_onset"]["n"] == 1 and js["bcpr"]["survival_time"]["n"] == 3
