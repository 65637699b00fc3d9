"""Build notebooks/01_sovsim_power_conditions.ipynb (no outputs)."""
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
    code('# Parameters (papermill)\n'
         'DATASET = "data/sovsim"      # relative to the repository root, or absolute\n'
         'MODELS = None                # e.g. ["embedded/smollm2", "scripted/sustainable"]; None = all\n'
         'PRESET = "sovsim"            # metric conventions: sovsim | govsim\n'
         'STRICT = False               # strict survival: no collapse at all\n'
         'TRAJ_MODEL = None            # model for the trajectory figure; None = the one with most data\n'
         'OUT_DIR = "figures"          # relative to the repository root\n'
         'SHARED_DATA = "../shared/data"  # published layouts, if present', metadata={"tags": ["parameters"]}),
    code("from pathlib import Path\n\n"
         "import polars as pl\n"
         "from IPython.display import Markdown, display\n\n"
         "from scarce_lab.analysis import sovsim as metrics\n"
         "from scarce_lab.analysis import sovsim_charts as charts\n"
         "from scarce_lab.analysis.figures import save_chart, save_table\n"
         "from scarce_lab.data.tables.sovsim import load_agent_rounds\n\n"
         "ROOT = Path.cwd() if (Path.cwd() / 'scarce_lab').is_dir() else Path.cwd().parent\n"
         "resolve = lambda p: Path(p) if Path(p).is_absolute() else ROOT / p\n"
         "OUT = resolve(OUT_DIR)\n"
         "df = load_agent_rounds(resolve(DATASET))\n"
         "if MODELS:\n"
         "    df = df.filter(pl.col('model').is_in(MODELS))\n"
         "conv = metrics.convention(PRESET, strict_survival=STRICT)\n"
         "per_sim = metrics.simulation_metrics(df, conv)\n"
         "summary = metrics.summarize(per_sim, conv=conv)\n"
         "print(f\"{df.height} agent-rounds, {per_sim.height} finished simulations, models: {sorted(df['model'].unique())}\")"),
    md("## Table 1: all metrics, mean [95% CI] per model and condition\n\n"
       "t-intervals for means, Wilson for the survival rate, percentile bootstrap for the relative "
       "survival drop from CPR. Survival is lenient (reached the last round) unless `STRICT`."),
    code("table1 = charts.table1_display(summary)\n"
         "save_table(table1, 'sovsim_table1', OUT)\n"
         "save_table(summary, 'sovsim_table1_values', OUT)\n"
         "display(Markdown(metrics.format_table(summary)))"),
    code("display(Markdown(charts.survival_sentence(summary)))"),
    md("## Pool dynamics per condition"),
    code("chart = charts.pool_dynamics_chart(df)\n"
         "save_chart(chart, 'sovsim_pool_dynamics', OUT)\n"
         "chart"),
    code("display(Markdown(charts.pool_sentence(df)))"),
    md("## Agent-level extraction trajectories (leader: thick line, diamonds)"),
    code("traj_model = TRAJ_MODEL or charts.busiest_model(df)\n"
         "chart = charts.trajectories_chart(df, traj_model)\n"
         "save_chart(chart, 'sovsim_trajectories', OUT)\n"
         "chart"),
    md("Each panel shows one simulation; in BCPR/KCPR/KCPR-M the leader moves after seeing the "
       "others' extractions, so its line shows how much of the remainder it takes."),
    md("## Leader extraction rate vs survival time"),
    code("chart = charts.leader_rate_chart(per_sim)\n"
         "save_chart(chart, 'sovsim_leader_rate_vs_survival', OUT)\n"
         "display(Markdown(charts.correlation_sentence(per_sim)))\n"
         "chart"),
    md("## KCPR-M: distribution of the king's misreports"),
    code("chart = charts.misreport_chart(df)\n"
         "save_chart(chart, 'sovsim_misreports', OUT)\n"
         "display(Markdown(charts.misreport_sentence(df)))\n"
         "chart"),
    md("## The same table on published layouts (when `../shared/data` is present)\n\n"
       "SovSim's released `rationales.json` layout (here a hand-made format sample, not real "
       "behaviour) with the `sovsim` preset, and GovSim fishing logs with the `govsim` preset "
       "(5 fishers, efficiency benchmark 600, over-usage above pool/2/5, collapse below 5)."),
    code("shared = resolve(SHARED_DATA)\n"
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
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, str(Path(__file__).resolve().parents[1] / "notebooks" / "01_sovsim_power_conditions.ipynb"))
print("ok")
