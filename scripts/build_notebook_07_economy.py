"""Build notebooks/07_economy_of_minds.ipynb (no outputs).

Run from anywhere: ``.venv/bin/python scripts/build_notebook_07_economy.py``.
Sentences under the figures are computed (``scarce_lab.analysis.economy.metrics.*_sentence``).
"""
from pathlib import Path

import nbformat as nbf

nb = nbf.v4.new_notebook()
md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell
cells = [
    md('# 07 · Economy of Minds: a Hayek machine that learns Blocks World\n\nA population of limited agents (a trigger, a policy, a bid, a wealth) is coordinated only by an economy: each step the eligible agents bid, the highest bid acts and pays its bid to the previous actor (bucket brigade), the task pays the actor on success, rent is charged, rich agents reproduce with mutation, bankrupt agents are removed and replaced by a repaired copy of their policy (exploration, as the paper describes; newcomers also join every few episodes), and a new agent gets a trial at the maximum bid + epsilon. Each agent bids its fixed bid b_a (the paper\'s scheme; Holland\'s wealth-proportional bid is an option, shipped for comparison) (Qi et al. 2026, *Economy of Minds*; Baum & Durdanovic 2000, *Hayek*).\n\nConditions are never pooled: each table row is one condition (its label names the settings that differ between the loaded runs).\n\nThis notebook regenerates, from the shipped dataset `data/economy/` (or any path given below), the learning curves with 95% bands over seeds, the ablation table (no auction, no exploration, no exploitation) with CIs over seeds, wealth and population dynamics, who wins which kind of step, and bid convergence. The data was made with `bash data/economy/make_data.sh` (every ablation, a Holland-bid economy and two baselines, 5 seeds each; see `data/economy/README.md` for the baselines, the embedded-model arithmetic run and the comparison with the reference implementation).'),
    code('# Parameters (papermill; each value is converted to the type declared here, or refused)\n'
         'DATASET: str = "data/economy/blocksworld"   # relative paths: to the repository root (or this folder outside a checkout)\n'
         'ARITH_DATASET: str | None = "data/economy/arithmetic"  # optional; None or an absent folder: skipped\n'
         'WINDOW: int = 10     # training episodes per point of the learning curve\n'
         'BID_WINDOW: int = 25  # training episodes per point of the bid-convergence curve\n'
         'HEATMAP_RUN: str | None = None  # run id for the specialisation heat map; None = seed 0 of the full economy\n'
         'OUT_DIR: str = "figures/07_economy_of_minds"  # where figures and tables go', metadata={"tags": ["parameters"]}),
    code("import polars as pl\n"
         "from IPython.display import Markdown, display\n\n"
         "from scarce_lab.analysis.economy import metrics as em\n"
         "from scarce_lab.analysis.figures import enable_offline_charts, markdown_table, save_chart, save_table\n"
         "from scarce_lab.data.loaders import load_dataset\n"
         "from scarce_lab.data.tables import economy as tables\n"
         "from scarce_lab.reporting import dataset_path, resolve_path\n\n"
         "enable_offline_charts()  # interactive charts without network, plus a static PNG\n"
         "OUT = resolve_path(OUT_DIR)\n"
         "ds = load_dataset(dataset_path(DATASET))\n"
         "episodes = tables.episodes(ds)\n"
         "runs = tables.runs(ds)\n"
         "if episodes.is_empty():\n"
         "    raise ValueError(f'{dataset_path(DATASET)}: no Economy of Minds episodes (is it an economy dataset?)')\n"
         "# what every saved table was computed under (written beside it: <name>.convention.json)\n"
         "CONVENTION = {'dataset': str(dataset_path(DATASET)), 'unit': 'run (seed); conditions never pooled',\n"
         "              'intervals': em.CI_METHOD, 'phase': 'training episodes unless the column says eval'}\n"
         "print(f\"{runs.height} runs, {episodes.height} episodes, conditions: {sorted(set(runs['condition']))}; \"\n"
         "      f\"figures and tables go to {OUT}\")"),
    md("## Ablation table: solve rate with 95% CIs over seeds"),
    code("table = em.ablation_table(episodes)\n"
         "pretty = em.format_table(table)\n"
         "save_table(table, 'economy_ablation_table', OUT, convention=CONVENTION | {'fifths': 'first and last fifth of training episodes'})\n"
         "save_table(pretty, 'economy_ablation_table_pretty', OUT, convention=CONVENTION | {'fifths': 'first and last fifth of training episodes'})\n"
         "display(Markdown(markdown_table(pretty)))\n"
         "chart = em.ablation_chart(table)\n"
         "save_chart(chart, 'economy_ablation', OUT)\n"
         "display(Markdown(em.ablation_sentence(table)))\n"
         "chart"),
    md("## Learning curves: mean and 95% band over seeds"),
    code("curve = em.solve_curve(episodes.filter(~pl.col('condition').str.starts_with('baseline')), window=WINDOW)\n"
         "chart = em.learning_curve_chart(curve, title=f'Blocks World solve rate per {WINDOW} training episodes')\n"
         "save_chart(chart, 'economy_learning_curves', OUT)\n"
         "display(Markdown(em.learning_sentence(curve)))\n"
         "chart"),
    md("## Wealth and population dynamics"),
    code("pop = tables.population(ds).filter(~pl.col('condition').str.starts_with('baseline'))\n"
         "dyn = em.population_dynamics(pop)\n"
         "save_table(dyn, 'economy_population_dynamics', OUT, convention=CONVENTION | {'intervals': '95% t-interval over seeds', 'snapshot': 'one per training episode (snapshot_every)', 'gini': 'wealth, negative counted as 0'})\n"
         "chart = em.population_chart(dyn)\n"
         "save_chart(chart, 'economy_population_dynamics', OUT)\n"
         "display(Markdown(em.population_sentence(dyn)))\n"
         "chart"),
    md("## Specialisation: who wins which kind of step"),
    code("wins = tables.wins(ds)\n"
         "births = tables.births(ds)\n"
         "spec = em.specialisation(wins, births, top=10)\n"
         "idx = em.specialisation_index(wins)\n"
         "save_table(idx, 'economy_specialisation_index', OUT, convention=CONVENTION | {'index': 'win-weighted share of an agent wins in its main step kind'})\n"
         "full0 = runs.filter((pl.col('condition') == em._full_economy(runs['condition'].to_list())) & (pl.col('seed') == 0))['run_id']\n"
         "run_id = HEATMAP_RUN or (full0[0] if full0.len() else runs.sort('run_id')['run_id'][0])\n"
         "chart = em.specialisation_heatmap(spec, run_id)\n"
         "save_chart(chart, 'economy_specialisation_heatmap', OUT)\n"
         "display(Markdown(markdown_table(idx)))\n"
         "s = {r['condition']: r['specialisation'] for r in idx.sort('condition').iter_rows(named=True)}\n"
         "display(Markdown(\"Share of an agent's wins in its main kind of step (mean): \" + '; '.join(\n"
         "    f'{em.condition_label(c)} {v:.2f}' for c, v in s.items() if v is not None) + f'. Heat map: run {run_id}.'))\n"
         "chart"),
    md("## Bids against the value realised per win"),
    code("conv = em.bid_convergence(tables.agent_episodes(ds).filter(~pl.col('condition').str.starts_with('baseline')),\n"
         "                         window=BID_WINDOW)\n"
         "save_table(conv, 'economy_bid_convergence', OUT, convention=CONVENTION | {'intervals': '95% t-interval over seeds', 'window': BID_WINDOW})\n"
         "chart = em.bid_convergence_chart(conv)\n"
         "save_chart(chart, 'economy_bid_convergence', OUT)\n"
         "c = conv.filter(pl.col('condition') == em._full_economy(conv['condition'].to_list())).sort('window_start')\n"
         "if c.height:\n"
         "    display(Markdown(f'In the full economy the mean absolute gap between the bid paid and the value realised '\n"
         "                     f'per win goes from {c[\"gap\"][0]:.1f} to {c[\"gap\"][-1]:.1f} credits between the first '\n"
         "                     f'and the last window.'))\n"
         "chart"),
    md('## Arithmetic with partial LLM agents (embedded model)\n\nA small run with the offline SmolLM2-135M model: agents that can only plan, compute, check or answer, with short outputs.'),
    code('arith_path = resolve_path(ARITH_DATASET) if ARITH_DATASET else None\naep = tables.episodes(load_dataset(arith_path)) if arith_path is not None and arith_path.exists() else None\nif aep is not None and aep.height:\n    ads = load_dataset(arith_path)\n    atab = em.format_table(em.ablation_table(aep))\n    save_table(atab, "economy_arithmetic", OUT, convention=CONVENTION | {"dataset": str(arith_path)})\n    display(Markdown(markdown_table(atab)))\n    calls = ads.llm_calls.collect()\n    print(f"Interpretation: {calls.height} model calls, {calls[\'fallback_used\'].sum()} fell back; the 135M model "\n          f"solved {aep[\'solved\'].sum()} of {aep.height} episodes, so this run is a plumbing check, not a result.")\nelse:\n    print(f"no finished arithmetic episodes at {arith_path}")'),
    md('## Our rules against the reference implementation\n\nSee `data/economy/README.md` ("Comparison with hayekmas") for what matches the public reference implementation (auction, bucket brigade with the first payment leaving the agents, reward to the actor, rent every k episodes, removal below zero wealth, newcomer bid = max + epsilon, fixed bids b_a by default with Holland\'s wealth-proportional bid as an option, bankrupt agents replaced by repaired copies of their policy, frozen evaluation) and what differs and why (integer credits and a bank account so that money is conserved, children endowed by their parent, rule agents for Blocks World, no per-episode replay after bankruptcy).'),
]
nb.cells = cells
for i, c in enumerate(nb.cells):  # stable ids: rebuilding changes nothing in git
    c["id"] = f"c{i:02d}"
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, str(Path(__file__).resolve().parents[1] / "notebooks" / "07_economy_of_minds.ipynb"))
print("ok")
