"""Build notebooks/01_sovsim_power_conditions.ipynb (no outputs).

Run from anywhere: ``.venv/bin/python scripts/build_notebook_01_sovsim.py``.
"""
from pathlib import Path

import nbformat as nbf

nb = nbf.v4.new_notebook()
md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell
cells = [
    md("# 01 · SovSim: the commons under four power conditions\n\n"
       "Re-runs the SovSim paper's Table 1 and figures (survival, payoff, efficiency, equality, "
       "over-usage, leader extraction, defection onset, misreport) with 95% confidence intervals "
       "over simulations, for the shipped dataset `data/sovsim` or any path given below: our run "
       "directories, SovSim's released `rationales.json` files or GovSim `log_env.json` runs.\n\n"
       "Make the data with `scarce-lab run sovsim --condition all --model embedded/smollm2 --simulations 5 --out data/sovsim`."),
    code('# Parameters (papermill; each value is converted to the type declared here, or refused)\n'
         'from typing import Literal\n\n'
         'DATASET: str = "data/sovsim"  # relative paths: to the repository root (or to this folder outside a checkout)\n'
         'MODELS: list[str] | None = None  # e.g. ["embedded/smollm2", "scripted/sustainable"]; None = all\n'
         'PRESET: Literal["sovsim", "govsim"] = "sovsim"  # metric conventions\n'
         'STRICT: bool = False         # strict survival: no collapse at all\n'
         'TRAJ_MODELS: list[str] | None = None  # models of the trajectory figure; None = LLM models with a surviving run\n'
         'TRAJ_CONDITION: str = "kcpr"  # condition of the trajectory figure (SovSim Figure 4: kcpr)\n'
         'TRAJ_SIMULATIONS: list[int] | None = None  # simulation numbers, e.g. [0, 3]; None = first surviving one per model\n'
         'OUT_DIR: str = "figures/01_sovsim_power_conditions"  # where figures and tables are written\n'
         'SHARED_DATA: str = "../shared/data"  # published layouts, if present\n'
         'SOVSIM_RELEASE: str | None = None  # the SovSim authors\' released agent_rationales/ folder (github.com/abhilekhborah/sovsim), if you have it\n'
         'SEED: int = 0                # seed of the bootstraps\n'
         'CROSS_MODELS: list[str] | None = None  # models of the cross-model means; None = every model except scripted/ baselines', metadata={"tags": ["parameters"]}),
    code("import polars as pl\n"
         "from IPython.display import Markdown, display\n\n"
         "from scarce_lab.analysis.sovsim import metrics\n"
         "from scarce_lab.analysis.sovsim.conventions import convention_dict\n"
         "from scarce_lab.analysis.sovsim import charts\n"
         "from scarce_lab.analysis.figures import enable_offline_charts, markdown_table, save_chart, save_table\n"
         "from scarce_lab.data.tables.sovsim import load_agent_rounds\n"
         "from scarce_lab.reporting import dataset_path, resolve_path\n\n"
         "enable_offline_charts()  # interactive charts without network, plus a static PNG\n"
         "OUT = resolve_path(OUT_DIR)\n"
         "df = load_agent_rounds(dataset_path(DATASET))\n"
         "if MODELS:\n"
         "    absent = sorted(set(MODELS) - set(df['model'].unique()))\n"
         "    if absent:  # a misspelt model would silently give a table of nothing\n"
         "        raise ValueError(f\"MODELS: {absent} not in {DATASET}; its models: {sorted(df['model'].unique())}\")\n"
         "    df = df.filter(pl.col('model').is_in(MODELS))\n"
         "conv = metrics.resolve_convention(df, PRESET, strict_survival=STRICT)  # refuses data of another game\n"
         "per_sim = metrics.simulation_metrics(df, conv)\n"
         "summary = metrics.summarize(per_sim, conv=conv)  # no finished simulation: EmptyTableError\n"
         "# what every saved table was computed under (written beside it: <name>.convention.json)\n"
         "CONVENTION = convention_dict(conv) | {\n"
         "    'survival': 'strict (no collapse at all)' if conv.strict_survival else 'lenient (reached the last round)',\n"
         "    'dataset': str(dataset_path(DATASET)), 'models': MODELS or 'all'}\n"
         "print(f\"{dataset_path(DATASET)}: {df.height} agent-rounds, {per_sim.height} finished simulations, \"\n"
         "      f\"models: {sorted(df['model'].unique())}; figures and tables go to {OUT}\")"),
    md("## Table 1: all metrics, mean [95% CI] per model and condition\n\n"
       "For bounded metrics (survival time, efficiency, equality, over-usage, leader rate, defection onset, "
       "total payoff under its cap) the hull of the t-interval and a maximum-variance score interval (the "
       "t-interval alone covers 89-93% when survival times pile up at the last round); other means "
       "t-intervals clipped to their range; Clopper-Pearson for the survival rate "
       "(Wilson's dips to 86% coverage with 3 simulations), percentile bootstrap for the relative survival "
       "drop from CPR, printed from 10 simulations per condition on (with 2-5 it covers 47-89%; "
       "`benchmarks/bench_coverage.py` prints the coverage of every method). The total payoff column names "
       "its unit (SovSim: sum over agents; GovSim: mean per agent). Survival is lenient (reached the last "
       "round) unless `STRICT`. The sentence below tests every pair of conditions within each model (Welch "
       "t over simulations) with Holm's correction over all of them and says how many comparisons."),
    code("T1_CI = ('bounded metrics: hull of t and a maximum-variance score interval; other means: t, clipped to the range; '\n"
         "         'Clopper-Pearson (survival rate); percentile bootstrap (relative survival drop from CPR, from 10 '\n"
         "         'simulations per condition); 95%')\n"
         "table1 = charts.table1_display(summary)\n"
         "save_table(table1, 'sovsim_table1', OUT, convention=CONVENTION | {'intervals': T1_CI})\n"
         "save_table(summary, 'sovsim_table1_values', OUT, convention=CONVENTION | {'intervals': T1_CI})\n"
         "display(Markdown(metrics.format_table(summary)))"),
    code("display(Markdown(charts.survival_sentence(summary, per_sim)))"),
    md("## Figure 3: pool dynamics per model and condition\n\n"
       "One panel per model and condition: the mean pool (line) with its 95% band over simulations, "
       "and the collapse threshold (dashed)."),
    code("chart = charts.pool_dynamics_chart(df, conv)\n"
         "save_chart(chart, 'sovsim_pool_dynamics', OUT)\n"
         "chart"),
    code("display(Markdown(charts.pool_sentence(df)))"),
    md("## Figure 4: agent trajectories with the pool\n\n"
       "Each agent's extraction per round under the pool, for surviving simulations of "
       "`TRAJ_CONDITION` (the leader moves after seeing the others' extractions, so its line shows "
       "how much of the remainder it takes). Each panel names its simulation and run."),
    code("chart = charts.trajectories_chart(df, per_sim, TRAJ_MODELS, condition=TRAJ_CONDITION,\n"
         "                                  simulations=TRAJ_SIMULATIONS)\n"
         "save_chart(chart, 'sovsim_trajectories', OUT)\n"
         "chart"),
    md("## Leader extraction rate vs survival time\n\n"
       "Pearson r per model with its Fisher-z 95% CI (per model, unadjusted) and p; the models are one "
       "family of tests, so a model's r is called positive or negative only when its Holm-adjusted p is "
       "below 0.05 (the table's last column; the sentence says over how many models). A leader rate that "
       "is constant up to float noise gives no r."),
    code("chart = charts.leader_rate_chart(per_sim)\n"
         "save_chart(chart, 'sovsim_leader_rate_vs_survival', OUT)\n"
         "corr = charts.correlation_table(per_sim)\n"
         "save_table(corr, 'sovsim_leader_rate_correlation', OUT,\n           convention=CONVENTION | {'statistic': 'Pearson r per model', 'intervals': 'Fisher z, 95%'})\n"
         "display(chart)\n"
         "display(Markdown(markdown_table(corr, float_digits=2)))\n"
         "display(Markdown(charts.correlation_sentence(per_sim)))"),
    md("## Cross-model results\n\n"
       "What the paper reports across models: the mean over models of the relative drop from CPR "
       "(survival rate and total gain; per model: (CPR - condition) / CPR with the CPR run of the same "
       "settings), over-usage split by role (symmetric agents, subordinates, the leader) and the Pearson r "
       "and R^2 between leader extraction rate and survival pooled over models, for two stated units "
       "(model x condition cells, simulations). Means across models are over the models under study: "
       "scripted baselines (`scripted/...`) are rows of their own in Table 1, never members of the mean, "
       "unless `CROSS_MODELS` names them. Models may differ only in their own settings (`llm.*`); "
       "anything else that differs is refused rather than pooled. CIs: t over the models' drops and "
       "over-usage shares (each model counts once), Fisher z for r. `scarce-lab table sovsim PATH --format "
       "json` gives the same numbers under `cross_model`."),
    code("from scarce_lab.analysis.sovsim import cross\n\n"
         "res = cross.cross_model_results(per_sim, seed=SEED, models=CROSS_MODELS)\n"
         "XCONV = CONVENTION | {'intervals': 't over the models (each model counts once), Fisher z for r; 95%',\n"
         "                      'bootstrap_seed': SEED, 'cross_models': CROSS_MODELS or 'all but scripted/ baselines'}\n"
         "save_table(res['relative_drop'], 'sovsim_cross_model_drop', OUT, convention=XCONV)\n"
         "save_table(res['overuse_by_role'], 'sovsim_overuse_by_role', OUT, convention=XCONV)\n"
         "save_table(res['overuse_by_role_per_model'], 'sovsim_overuse_by_role_per_model', OUT, convention=XCONV)\n"
         "save_table(res['leader_rate_vs_survival'], 'sovsim_leader_rate_across_models', OUT, convention=XCONV)\n"
         "display(Markdown(cross.format_cross(res)))"),
    md("**What the SovSim release can and cannot reproduce.** On the SovSim authors' released trajectories "
       "(six models, five simulations per condition) the mean drop in survival rate from CPR to KCPR-M is "
       "86.7% (the paper reports up to 87.3% over its eleven models): the drop reproduces. The paper's "
       "headline correlation between leader extraction rate and survival (r = -0.86, R^2 = 0.75 across "
       "its eleven models) does not: the release holds six of the eleven models, and neither stated unit "
       "gives it (a check on the release found r = -0.58 per model x condition cell and -0.75 per "
       "simulation). Both units are computed below, each named; neither is presented as the paper's "
       "number. Set `SOVSIM_RELEASE` to that folder to recompute them here."),
    code("if SOVSIM_RELEASE:\n"
         "    rel = load_agent_rounds(resolve_path(SOVSIM_RELEASE))\n"
         "    report = cross.sovsim_report(rel, 'sovsim', seed=SEED)\n"
         "    display(Markdown(metrics.format_table(report.summary) + '\\n' + cross.format_cross(report.cross)))\n"
         "    km = report.cross['relative_drop'].filter((pl.col('metric') == 'survival_rate') & (pl.col('condition') == 'kcpr_m'))\n"
         "    print(f\"mean drop in survival rate, CPR -> KCPR-M: {km['mean'][0]:.1%} over {km['n_models'][0]} models\")\n"
         "    for r in report.cross['leader_rate_vs_survival'].iter_rows(named=True):\n"
         "        print(f\"leader rate vs survival, unit {r['unit']}: r = {r['r']}, R^2 = {r['r2']} over {r['n_models']} models \"\n"
         "              '(the paper: r = -0.86, R^2 = 0.75 over eleven models)')\n"
         "else:\n"
         "    print('SOVSIM_RELEASE not set: skipped')"),
    md("## KCPR-M: distribution of the king's misreports"),
    code("chart = charts.misreport_chart(df)\n"
         "save_chart(chart, 'sovsim_misreports', OUT)\n"
         "display(Markdown(charts.misreport_sentence(df)))\n"
         "chart"),
    md("## The same table on published layouts (when `../shared/data` is present)\n\n"
       "SovSim's released `rationales.json` layout (here a hand-made format sample, not real "
       "behaviour) with the `sovsim` preset, and GovSim fishing logs with the `govsim` preset "
       "(5 fishers, efficiency benchmark 600, over-usage above pool/2/5, collapse below 5; total payoff as "
       "the mean per agent, as GovSim's `plots.get_payoffs`; equality undefined when nobody harvested, as "
       "GovSim's Gini divides by the zero sum). Other GovSim scenarios (pasture, pollution, the fork's "
       "trash) are scored by their own rules, read from each run's configuration; an unknown scenario is "
       "refused, and whatever a results folder holds that is not read is listed with the reason."),
    code("shared = resolve_path(SHARED_DATA)\n"
         "for name, preset in [('sovsim_format_sample', 'sovsim'), ('govsim_fishing_v7', 'govsim')]:\n"
         "    path = shared / name\n"
         "    if not path.exists():\n"
         "        print(f'{path} not present: skipped')\n"
         "        continue\n"
         "    s = metrics.sovsim_table(load_agent_rounds(path), preset=preset)\n"
         "    display(Markdown(f'**{name}** (preset `{preset}`)\\n\\n' + metrics.format_table(s)))\n"
         "    display(Markdown(charts.survival_sentence(s)))"),
]
nb.cells = cells
for i, c in enumerate(nb.cells):  # stable ids: rebuilding changes nothing in git
    c["id"] = f"c{i:02d}"
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, str(Path(__file__).resolve().parents[1] / "notebooks" / "01_sovsim_power_conditions.ipynb"))
print("ok")
