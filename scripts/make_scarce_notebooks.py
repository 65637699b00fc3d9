"""Build notebooks/02..06 (SCARCE experiments) without outputs.

Run from the repository root: ``.venv/bin/python scripts/make_scarce_notebooks.py``.
The metrics live in :mod:`scarce_lab.analysis.scarce_experiments`; cells stay thin.
"""

import ast
from pathlib import Path

import nbformat as nbf

ROOT = Path(__file__).resolve().parents[1]
md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell

CAVEAT = (
    "**About the shipped data** (`data/scarce`, see its README): scripted negotiators (fixed policies "
    "with strategies: budgets spent down, urgency near deadlines, reciprocity and alliances through "
    "private messages; their texts are templates) with a scripted solver whose progress is stochastic, "
    "and the embedded offline SmolLM2-135M model as both solver and negotiator (`data/scarce/embedded`; "
    "as a solver it copies its prompt's answer template, so its programs are placeholders and its scores "
    "come from tests that expect a failure; the older runs with a scripted solver and embedded "
    "negotiators are in `data/scarce/embedded_negotiators`), a few seeds per condition. Scripted numbers "
    "show what the mechanism "
    "does with those policies, nothing about language models; a 135M-parameter model's negotiation is "
    "not a frontier model's. Judge labels come from a panel of three copies of the same embedded model "
    "and cover the embedded runs only. Every table groups by model and condition (the condition label "
    "names the settings that differ between the loaded runs): runs of different settings are never "
    "pooled. Point the parameters at your own runs (`scarce-lab run scarce ...`, "
    "`scarce-lab judge label ...`) for real findings."
)

CI_NOTE = (
    "Each value is the mean over runs of each run's share or mean (runs are the independent unit: "
    "every run counts once); intervals are 95% t intervals over the run means, clipped to the measure's "
    "range, and none is printed from one run or when every run gives the same value (a percentile "
    "cluster bootstrap covered 58-84% with 2-5 runs; `benchmarks/bench_coverage.py` prints the coverage of "
    "every method). Medians get a cluster-bootstrap interval only from 30 runs on. A sentence that names "
    "the highest and lowest group tests every pair of groups (Welch t over run means) with Holm's "
    "correction and says how many comparisons; a win rate that is 1/(contenders) because every contender "
    "is the same policy is named as such, not as a finding."
)

PRELUDE = (
    "import polars as pl\n"
    "from IPython.display import Markdown, display\n\n"
    "from scarce_lab.analysis import scarce_experiments as X\n"
    "from scarce_lab.analysis.figures import enable_offline_charts, markdown_table, save_chart, save_table\n"
    "from scarce_lab.reporting import dataset_path, resolve_path\n\n"
    "enable_offline_charts()  # interactive charts without network, plus a static PNG\n"
    "resolve = resolve_path  # relative paths: to the repository root (or this folder outside a checkout)\n"
    "OUT = resolve_path(OUT_DIR)\n"
    "say = lambda text: display(Markdown(text))\n"
    "show = lambda df: display(Markdown(markdown_table(df, float_digits=2)))\n"
    "T = X.load_scarce([dataset_path(p, 'DATASETS') for p in DATASETS])\n"
    "print(T, '; figures and tables go to', OUT)\n"
    "print('negotiators:', sorted(T.settings['negotiator'].unique()))\n"
    "# one short label per (model, condition) for chart colours: the model, then what differs\n"
    "# between its conditions (conditions are never pooled; the tables show the full condition)\n"
    "group = X.group_labels\n"
    "# what every saved table was computed under (written beside it: <name>.convention.json)\n"
    "CONVENTION = {'parameters': {k: globals()[k] for k in __PARAMETERS__}, 'unit': 'run; conditions never pooled',\n"
    "              'intervals': '95% t over run means (each run counts once), clipped to the range; none from one run '\n"
    "                           'or identical runs; medians: cluster bootstrap from 30 runs'}\n"
    "from scarce_lab.analysis.paper_tables import blank_repeats, folded, relational_kind, setting_labels, settings_table, wide_table\n\n"
    "def paper_table(res, name, index, columns, *, convention=None, key='group', **kw):\n"
    "    \"\"\"Show a result in the paper's layout (wide; labels name what differs) and save it (CSV, Markdown,\n"
    "    LaTeX) with its long form (<name>_long); the full conditions behind the labels are one click away.\"\"\"\n"
    "    w = wide_table(res, index, columns, **kw)\n"
    "    conv = CONVENTION | (convention or {})\n"
    "    save_table(w, name, OUT, convention=conv)\n"
    "    save_table(X.with_ci_text(res), name + '_long', OUT, convention=conv)\n"
    "    show(blank_repeats(w, list(index)[:-1]))\n"
    "    if key in res.columns:\n"
    "        tab = settings_table(res, key) if key == 'group' else res.select(key, columns, 'condition').unique().sort(key, columns)\n"
    "        say(folded('Full conditions behind the labels', markdown_table(tab)))\n"
    "    return w\n\n"
    "fold = lambda title, df: say(folded(title, markdown_table(df, float_digits=2)))"
)

LOAD_LABELS = (
    "from scarce_lab.judge import load_taxonomy\n\n"
    "tax = load_taxonomy(TAXONOMY)\n"
    "RELATIONAL = tax.relational_ids\n"
    "lab_path = resolve(LABELS) if LABELS else None\n"
    "if lab_path is not None and lab_path.exists():\n"
    "    rounds = X.labelled_rounds(pl.read_parquet(lab_path), T.contentions)\n"
    "    rounds = rounds.filter(pl.col('model').is_not_null())  # labels of runs in DATASETS only\n"
    "else:\n"
    "    rounds = None\n"
    "print('labelled agent-rounds:', 0 if rounds is None else rounds.height,\n"
    "      '' if rounds is not None else f'(no label table at {lab_path})')"
)


def params(text: str):
    return code("# Parameters (papermill; each value is converted to the type declared here, or refused)\n" + text,
                metadata={"tags": ["parameters"]})


def table(df_expr: str, name: str, cols: str | None = None) -> str:
    """Cell code: save a result frame (values + CI text) and show it."""
    sel = f".select({cols}, 'estimate', 'n', 'runs')" if cols else ""
    return (f"res = {df_expr}\n"
            f"save_table(X.with_ci_text(res), '{name}', OUT, convention=CONVENTION)\n"
            f"show(X.with_ci_text(res){sel})")


def write(name: str, cells: list) -> None:
    nb = nbf.v4.new_notebook()
    stem = name.removesuffix(".ipynb")
    names = None
    for i, c in enumerate(cells):
        c["id"] = f"c{i:02d}"  # stable ids: rebuilding changes nothing in git
        if "parameters" in c.metadata.get("tags", []):
            c.source = c.source.replace('OUT_DIR: str = "figures"',
                                        f'OUT_DIR: str = "figures/{stem}"  # where figures and tables go')
            assert f"figures/{stem}" in c.source, name
            tree = ast.parse(c.source)
            names = tuple(n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and n.target.id != "OUT_DIR")
            assert all(isinstance(n, ast.AnnAssign) for n in tree.body), f"{name}: annotate every parameter"
    for c in cells:
        if "__PARAMETERS__" in c.source:
            c.source = c.source.replace("__PARAMETERS__", repr(names))
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    path = ROOT / "notebooks" / name
    nbf.write(nb, str(path))
    print("wrote", path.relative_to(ROOT))


# -- 02 ----------------------------------------------------------------------------------
TABLE1_ORDER = "{'kind': ['relational', 'non-relational', 'any relational'], 'category': [*tax.ids, 'relational']}"
write("02_scarce_models_tactics.ipynb", [
    md("# 02 · SCARCE: tactics, win rate, private chat, task outcomes and language drift per model\n\n"
       "Per negotiator model and condition: Table 1 of the SCARCE paper (share of negotiation rounds showing "
       "each of the 21 taxonomy categories, grouped relational / non-relational, on the first subrun; "
       "relational = reciprocity, alliance formation, alliance loyalty, reputation) from the judge panel "
       "and, for the scripted population, from the tactics the strategic scripted negotiators recorded they "
       "meant (the ground truth), the judge panel validated against that ground truth, the win rate, "
       "private-chat use in the first subrun (the paper's Figure 6), task outcomes and language drift. "
       "Tables are in the paper's layout (columns name only what differs between the groups; the full "
       "conditions are one click away under each table); every table is also saved long, as CSV, Markdown "
       "and LaTeX. " + CI_NOTE + "\n\n" + CAVEAT),
    params('DATASETS: list[str] = ["data/scarce/scripted/models", "data/scarce/embedded"]  # relative to the repo root\n'
           'LABELS: str | None = "data/scarce/labels/embedded/labels.parquet"  # judge panel output; None to skip\n'
           'VALIDATION: str | None = "data/scarce/labels/ground_truth/validation.json"  # judge panel vs scripted intent; None to skip\n'
           'CASINO_VALIDATION: str | None = "data/scarce/labels/casino_validation/validation.json"  # judge panel vs CaSiNo experts\n'
           'TAXONOMY: str = "scarce"\n'
           'BASE_ONLY: bool = True   # only the reference condition (ballots, fixed bids, the paper\'s cross-subrun memory, equal budgets)\n'
           'SUBRUN: int | None = 0  # Table 1 and Figure 6: the first subrun, as in the paper (None: all)\n'
           'N_STAGES: int = 3       # stages per run for language drift\n'
           'OUT_DIR: str = "figures"'),
    code(PRELUDE + "\n"
         "C, S, M = T.contentions, T.submissions, T.messages\n"
         "if BASE_ONLY:\n"
         "    C, S, M = X.base_condition(C), X.base_condition(S), X.base_condition(M)\n"
         "BY = ('model', 'condition')\n"
         "print(f'{C[\"run_id\"].n_unique()} runs in the analysed condition(s):', sorted(C['condition'].unique()))"),
    md("## Table 1: tactic shares per model (judge panel, first subrun)\n\nShare of labelled agent-rounds (one "
       "agent's public reasoning and private messages in one contention) in which the judge panel accepted "
       "the category, per model (columns). Only runs with a label table are included (the shipped labels "
       "cover the embedded model)."),
    code(LOAD_LABELS),
    code("if rounds is not None and rounds.height:\n"
         "    r = X.base_condition(rounds) if BASE_ONLY else rounds\n"
         "    shares = group(X.tactic_shares(r, tax.ids, RELATIONAL, by=BY, subrun=SUBRUN))\n"
         "    shares = shares.with_columns(kind=pl.col('category').map_elements(lambda c: relational_kind(c, RELATIONAL), return_dtype=pl.String))\n"
         "    if shares.height:\n"
         f"        paper_table(shares, 'scarce_table1_judge', ['kind', 'category'], 'group', index_order={TABLE1_ORDER},\n"
         "                    convention={'subrun': SUBRUN, 'labels': 'judge panel'})\n"
         "        say(X.describe_extremes(shares.filter(pl.col('category') == 'relational'), ['group'],\n"
         "                                'the relational share (rounds with any relational label)'))\n"
         "        chart = X.ci_chart(shares.filter(pl.col('value') > 0), 'category', color='group', x_sort=[*tax.ids, 'relational'],\n"
         "                           y_title='share of rounds', title='Which tactics does the judge panel see? (Table 1, first subrun)', width=560)\n"
         "        save_chart(chart, 'scarce_table1_judge', OUT)\n"
         "        display(chart)\n"
         "    else:\n"
         "        say('No labelled rounds of the analysed condition in the first subrun.')\n"
         "else:\n"
         "    say('No judge labels for these runs: run `scarce-lab judge label` to get tactic shares.')"),
    md("## Table 1 on the scripted population: scripted intent, not a judge's reading\n\n"
       "The strategic scripted negotiators (urgency, reciprocal, coalition, strategic; spend-down records "
       "none) write their messages to express chosen tactics and record those tactics as researcher-only "
       "`tactic_intent` events. This table is built from that record (`X.labels_from_intent`): it shows "
       "what the policies were written to do, and so what a judge should find in their texts. It says "
       "nothing about language models."),
    code("GT = M.filter(pl.col('intended_tactics').is_not_null())\n"
         "if GT.height:\n"
         "    gt_rounds = X.labelled_rounds(X.labels_from_intent(GT), C)\n"
         "    gt = group(X.tactic_shares(gt_rounds, tax.ids, RELATIONAL, by=BY, subrun=SUBRUN))\n"
         "    gt = gt.with_columns(kind=pl.col('category').map_elements(lambda c: relational_kind(c, RELATIONAL), return_dtype=pl.String))\n"
         f"    paper_table(gt, 'scarce_table1_scripted_intent', ['kind', 'category'], 'group', index_order={TABLE1_ORDER},\n"
         "                convention={'subrun': SUBRUN, 'labels': 'scripted intent (ground truth), not a judge'})\n"
         "    say(X.describe_extremes(gt.filter(pl.col('category') == 'relational'), ['group'],\n"
         "                            'the intended relational share (scripted intent, not a judge\\'s reading)'))\n"
         "else:\n"
         "    say('No run in DATASETS records intended tactics (only the strategic scripted negotiators do).')"),
    md("## Is the judge panel right? Validation against scripted intent and against CaSiNo experts\n\n"
       "Per category: support (units whose ground truth has it), predicted (units the arbitrated panel gave it), "
       "precision, recall, F1 and Cohen's kappa of the panel. Left: a bounded sample of scripted units (their "
       "recorded intent is the truth; `scarce-lab judge validate --data <scripted runs> --taxonomy scarce`); "
       "right: expert-labelled CaSiNo utterances (`--taxonomy casino`). See `data/scarce/README.md` for how "
       "the shipped files were made."),
    code("import json\n\n"
         "def validation_table(path):\n"
         "    rep = json.loads(resolve(path).read_text())\n"
         "    rows = pl.DataFrame(rep['scores']['panel']['per_label'])\n"
         "    s = rep['scores']['panel']['summary']\n"
         "    keep = rows.filter((pl.col('support') > 0) | (pl.col('predicted') > 0))\n"
         "    return rep, s, keep.select('label', 'support', 'predicted', 'precision', 'recall', pl.col('f1').alias('F1'), pl.col('cohen_kappa').alias('kappa'))\n\n"
         "for title, path in (('Scripted intent (SCARCE taxonomy)', VALIDATION), ('CaSiNo experts (CaSiNo taxonomy)', CASINO_VALIDATION)):\n"
         "    if path is None or not resolve(path).exists():\n"
         "        say(f'**{title}**: no validation file at `{path}`.')\n"
         "        continue\n"
         "    rep, s, tab = validation_table(path)\n"
         "    save_table(tab, 'judge_validation_' + ('scripted' if 'SCARCE' in title else 'casino'), OUT,\n"
         "               convention={'source': path, 'judges': rep['note'], 'units': rep['n_units']})\n"
         "    fmt = lambda v: 'n/a' if v is None else f'{v:.2f}'\n"
         "    say(f'**{title}**: {rep[\"n_units\"]} units; panel micro F1 {fmt(s[\"micro_f1\"])}, macro F1 {fmt(s[\"macro_f1\"])}, '\n"
         "        f'Cohen\\'s kappa (macro) {fmt(s[\"kappa_macro\"])}, exact match {fmt(s[\"exact_match\"])}; '\n"
         "        f'{s[\"n_no_answer\"]} units without a valid answer. Categories with no support and no prediction are left out.')\n"
         "    show(tab)"),
    md("## Win rate per model\n\n`win_rate`: share of all the worker's rounds (contentions it took part "
       "in) in which it was first in the queue, the paper's definition; `win_rate_contested`: the same "
       "over contentions with two or more participants (chance is 1/n there)."),
    code("res = group(X.win_rates(C, by=BY))\n"
         "paper_table(res, 'scarce_win_rates', ['group'], 'metric')\n"
         "say(X.describe_extremes(res.filter(pl.col('metric') == 'win_rate'), ['model'], 'the win rate'))\n"
         "chart = X.ci_chart(res, 'group', column='metric', y_title='share of rounds first in the queue',\n"
         "                   title='Which negotiator wins the slot? Win rate per model', width=330)\n"
         "save_chart(chart, 'scarce_win_rates', OUT)\n"
         "chart"),
    md("## Figure 6: private-chat use in the first subrun\n\nShare of contested participations (two or "
       "more workers in the contention) in which the worker sent at least one private message."),
    code("res = group(X.private_chat_use(C, by=BY, subrun=SUBRUN))\n"
         "fold('Figure 6 values (share, 95% CI, runs)', X.with_ci_text(res).select('group', 'estimate', 'n', 'runs'))\n"
         "save_table(X.with_ci_text(res), 'scarce_private_chat_first_subrun', OUT, convention=CONVENTION)\n"
         "say(X.describe_extremes(res, ['model'], 'private-chat use in the first subrun'))\n"
         "chart = X.ci_chart(res, 'group', y_title='share with a private message',\n"
         "                   title='Figure 6. Who talks in private? Private-chat use, subrun 1', width=420)\n"
         "save_chart(chart, 'scarce_private_chat_first_subrun', OUT)\n"
         "chart"),
    md("## Task outcomes per model\n\nOver (worker, subrun) submissions: full resolution (every hidden "
       "test passed), mean partial score (passed / total; 0 for a missed deadline) and deadline misses."),
    code("res = group(X.task_outcomes(S, by=BY))\n"
         "paper_table(res, 'scarce_task_outcomes', ['group'], 'metric')\n"
         "for m in ('full_resolution_rate', 'mean_partial_score', 'deadline_miss_rate'):\n"
         "    say(X.describe_extremes(res.filter(pl.col('metric') == m), ['model'], m.replace('_', ' ')))\n"
         "chart = X.ci_chart(res, 'group', column='metric', title='Do the tasks get solved? Task outcomes per model', width=240)\n"
         "save_chart(chart, 'scarce_task_outcomes', OUT)\n"
         "chart"),
    md("## Language drift over stages\n\nEach run's contentions are cut into `N_STAGES` equal blocks; "
       "per stage, the text of every agent's reasoning and private messages: cosine similarity of "
       "bag-of-words vectors with the previous stage, trigram repetition, and the share of new words "
       "(`scarce_lab.judge.drift`). Mean over runs with a t interval (clipped to [0, 1]). Scripted negotiators repeat "
       "templates, so they show the floor of drift. The chart shows the cosine similarity (one panel per "
       "group when there are more than 8); the table folded below has every measure."),
    code("res = group(X.language_drift(M, n_stages=N_STAGES, by=BY))\n"
         "w = wide_table(res, ['measure', 'group'], 'stage')\n"
         "save_table(w, 'scarce_language_drift', OUT, convention=CONVENTION)\n"
         "save_table(X.with_ci_text(res), 'scarce_language_drift_long', OUT, convention=CONVENTION)\n"
         "fold('Language drift per stage (every measure and group)', blank_repeats(w, ['measure']))\n"
         "for m in ('cosine_prev', 'new_word_share'):\n"
         "    last = res.filter((pl.col('measure') == m) & (pl.col('stage') == res['stage'].max()))\n"
         "    say(X.describe_extremes(last, ['model'], f'{m} in the last stage'))\n"
         "chart = X.ci_chart(res.filter(pl.col('measure') == 'cosine_prev'), 'stage', color='group', kind='line',\n"
         "                   y_title='cosine similarity to the previous stage',\n"
         "                   title='Does the negotiators\\' language drift? Similarity to the previous stage', width=160,\n"
         "                   ci='95% t-interval over runs')\n"
         "save_chart(chart, 'scarce_language_drift', OUT)\n"
         "chart"),
])

# -- 03 ----------------------------------------------------------------------------------
write("03_memory_horizon.ipynb", [
    md("# 03 · SCARCE: memory horizon and relational behaviour\n\n"
       "The paper's baseline is **cross-subrun memory** (`cross`: public history, own negotiations and "
       "saved notes carried across subruns); the memory-horizon experiment varies it to `subrun` (history "
       "within a subrun only) and `none` (each negotiation fresh, the paper's round memory). Reciprocity, "
       "alliance formation, alliance loyalty and reputation shares per horizon (the paper's Table 2), the "
       "relational share in the first vs second half of a run (its decay), and, without labels, what the "
       "scripted strategic negotiators do with what memory shows them (reciprocity needs the history: "
       "private messages and requested durations per horizon). Shares of labelled agent-rounds. " + CI_NOTE
       + "\n\nBehaviours are sets of taxonomy ids "
       "(`scarce_lab.analysis.scarce_experiments.MEMORY_BEHAVIOURS`): alliance formation = explicit "
       "or exclusive coalition, alliance loyalty = coalition loyalty, reputation = reputation "
       "maintenance.\n\n" + CAVEAT),
    params('DATASETS: list[str] = ["data/scarce/embedded", "data/scarce/scripted/memory"]\n'
           'LABELS: str | None = "data/scarce/labels/embedded/labels.parquet"  # None to skip\n'
           'TAXONOMY: str = "scarce"\n'
           'OUT_DIR: str = "figures"'),
    code(PRELUDE),
    code(LOAD_LABELS + "\n"
         "BY = ('model', 'condition', 'memory')  # one row per condition; memory shown beside it\n"
         "if rounds is not None:\n"
         "    rounds = X.base_condition(rounds, except_=('memory',))\n"
         "    show(rounds.group_by('memory').agg(pl.len().alias('rounds'), pl.col('run_id').n_unique().alias('runs')).sort('memory'))"),
    md("## Table 2: behaviour shares by memory horizon (judge labels)\n\nRows: behaviours per model; columns: the memory horizon."),
    code("if rounds is not None and rounds.height:\n"
         "    res = group(X.behaviour_shares(rounds, by=BY))\n"
         "    res = setting_labels(res, 'memory')  # row label: the model and what differs apart from the memory horizon\n"
         "    paper_table(res, 'scarce_table2_memory', ['setting', 'behaviour'], 'memory', column_order=['none', 'subrun', 'cross'], key='setting',\n"
         "                index_order={'behaviour': list(X.MEMORY_BEHAVIOURS)})\n"
         "    for b in X.MEMORY_BEHAVIOURS:\n"
         "        say(X.describe_extremes(res.filter(pl.col('behaviour') == b), ['model', 'memory'], f'the {b.replace(\"_\", \" \")} share'))\n"
         "    chart = X.ci_chart(res, 'memory', color='group', column='behaviour', x_sort=['none', 'subrun', 'cross'],\n"
         "                       y_title='share of rounds', title='Does a longer memory bring more relational behaviour? (Table 2)', width=150)\n"
         "    save_chart(chart, 'scarce_memory_behaviours', OUT)\n"
         "    display(chart)\n"
         "else:\n"
         "    say('No judge labels for these runs.')"),
    md("## Relational behaviour: first vs second half of a run"),
    code("if rounds is not None and rounds.height:\n"
         "    res = group(X.relational_by_half(rounds, RELATIONAL, by=BY))\n"
         "    paper_table(res, 'scarce_relational_by_half', ['group', 'memory'], 'half', column_order=['first', 'second'])\n"
         "    say(X.describe_extremes(res, ['model', 'memory', 'half'], 'the relational share'))\n"
         "    chart = X.ci_chart(res, 'half', color='group', kind='line', y_title='relational share',\n"
         "                       title='Does relational behaviour decay within a run? First vs second half', width=320)\n"
         "    save_chart(chart, 'scarce_relational_by_half', OUT)\n"
         "    display(chart)"),
    md("## Memory horizon with the scripted strategic negotiators (no labels)\n\n"
       "The strategic policy offers to return a favour to a worker that waited behind it, or asks for one, "
       "only when the history its memory horizon shows has one; its solver asks for longer slots after "
       "failed attempts it remembers. Runs that differ only in `memory` are compared (any other difference "
       "is refused). Private-chat use over all contested participations, and the requested slot duration "
       "per subrun with its growth factor (last subrun / first)."),
    code("SC = X.base_condition(T.contentions, except_=('memory',)).filter(pl.col('model') == 'scripted/strategic')\n"
         + table("X.private_chat_use(SC, by=('model', 'memory'), subrun=None)", "scarce_memory_private_chat",
                 "'model', 'memory'") + "\n"
         "say(X.describe_extremes(res, ['memory'], 'private-chat use of the strategic negotiators'))\n"
         "per, growth = X.requested_duration_by_subrun(SC, by=('model', 'memory'))\n"
         "save_table(X.with_ci_text(per), 'scarce_memory_requested_duration', OUT, convention=CONVENTION)\n"
         "save_table(X.with_ci_text(growth), 'scarce_memory_duration_growth', OUT, convention=CONVENTION | {'intervals': '95% t-interval over runs'})\n"
         "show(X.with_ci_text(growth).select('model', 'memory', 'estimate', 'runs'))\n"
         "say(X.describe_extremes(growth, ['memory'], 'the growth factor of requested durations'))\n"
         "chart = X.ci_chart(per, 'subrun', color='memory', kind='line', y_title='requested slot (s)',\n"
         "                   title='Do remembered failures lengthen requested slots? Duration per subrun by memory', width=320)\n"
         "save_chart(chart, 'scarce_memory_requested_duration', OUT)\n"
         "chart"),
    md("## Institutional behaviour\n\nFrom the panel's output (`institutions.parquet`): a "
       "labelled behaviour is institutional when spontaneous (not asked for by the instructions) and "
       "persistent (it recurs in a later round for the same agent or pair)."),
    code("inst_path = lab_path.parent / 'institutions.parquet' if lab_path is not None else None\n"
         "if inst_path is not None and inst_path.exists():\n"
         "    from scarce_lab.judge import institutional_summary\n"
         "    cond = T.contentions.select('run_id', 'model', 'condition').unique()\n"
         "    inst = X.with_settings(pl.read_parquet(inst_path), T.settings, ['memory']).join(cond, on='run_id', how='inner')\n"
         "    inst = inst.filter(pl.col('memory').is_not_null())\n"
         "    # one row per condition (never pooled): memory beside it\n"
         "    summ = institutional_summary(inst, by=('model', 'condition', 'memory', 'relational'))\n"
         "    save_table(summ, 'scarce_memory_institutions', OUT, convention=CONVENTION)\n"
         "    fold('Institutional behaviours per condition', summ)\n"
         "    tot = summ['institutional'].sum()\n"
         "    say(f'In this dataset, {tot} of {summ[\"behaviours\"].sum()} labelled (run, agent or pair, label) '\n"
         "        'behaviours are institutional (spontaneous and persistent).')"),
])

# -- 04 ----------------------------------------------------------------------------------
write("04_budget_asymmetry_deadlines.ipynb", [
    md("# 04 · SCARCE: budget asymmetry and deadline pressure\n\n"
       "The richer worker (the paper's asymmetry: 1,500 credits against 1,000) against the others: its "
       "mean bid and win rate by budget phase (share of its subrun budget left before the contention: > "
       "66%, 33-66%, < 33%; the paper's Tables 5 and 7) and its overall win rate over all phases (`all`, "
       "Table 7); and the bids of urgent vs non-urgent workers by stage under mixed 10-25 minute "
       "deadlines (Table 4; urgent = deadline below the run's median). Win rate = share of rounds first in "
       "the queue (all rounds; contested rounds beside). " + CI_NOTE + "\n\n" + CAVEAT),
    params('DATASETS: list[str] = ["data/scarce/scripted/budget", "data/scarce/scripted/deadlines", "data/scarce/embedded"]\n'
           'N_STAGES: int = 3\n'
           'URGENT_BELOW_S: float | None = None   # seconds; None = below the run\'s median deadline\n'
           'OUT_DIR: str = "figures"'),
    code(PRELUDE + "\nBY = ('model', 'condition')"),
    md("## Tables 5 and 7: the richer worker by budget phase, and overall"),
    code("res = group(X.budget_phase_bids(T.contentions, by=BY))\n"
         "PHASES = ['>66%', '33-66%', '<33%', 'all']\n"
         "say('**Table 5** (win rate) and **Table 7** (mean bid; `all` = over every phase) by budget phase:')\n"
         "paper_table(res, 'scarce_tables5_7_budget_phases', ['group', 'metric', 'who'], 'budget_phase', column_order=PHASES,\n"
         "            index_order={'metric': ['win_rate', 'mean_bid'], 'who': ['richer', 'others']})\n"
         "say(X.describe_change(res.filter((pl.col('who') == 'richer') & (pl.col('metric') == 'win_rate')), 'budget_phase',\n"
         "                      PHASES[:3], ['group'], \"Table 5's question: does the richer worker's win rate fall as its budget drains?\"))\n"
         "phases = [p for p in ('>66%', '33-66%', '<33%') if p in set(res['budget_phase'])]\n"
         "say(f'Budget phases reached in the runs with a richer worker: {phases or \"none\"} (a phase is missing when no worker spent '\n"
         "    'that much of its subrun budget before a contention).')\n"
         "overall = res.filter((pl.col('budget_phase') == 'all') & (pl.col('metric') == 'win_rate'))\n"
         "say(X.describe_extremes(overall.filter(pl.col('who') == 'richer'), ['model'], \"the richer worker's overall win rate (Table 7)\"))\n"
         "say(X.describe_change(res.filter((pl.col('who') == 'richer') & (pl.col('metric') == 'mean_bid')), 'budget_phase',\n"
         "                      PHASES[:3], ['group'], 'Does the richer worker bid less as its budget drains?'))\n"
         "chart = X.ci_chart(res.filter(pl.col('metric') == 'mean_bid'), 'budget_phase', color='who', column='group',\n"
         "                   x_sort=['>66%', '33-66%', '<33%', 'all'], y_title='mean bid (credits)', title='Does the richer worker bid less as its budget drains? Mean bid by phase', width=160)\n"
         "save_chart(chart, 'scarce_budget_phase_bids', OUT)\n"
         "display(chart)\n"
         "chart = X.ci_chart(res.filter(pl.col('metric') == 'win_rate'), 'budget_phase', color='who', column='group',\n"
         "                   x_sort=['>66%', '33-66%', '<33%', 'all'], y_title='win rate', title='Does the richer worker win less as its budget drains? (Table 5)', width=160)\n"
         "save_chart(chart, 'scarce_budget_phase_wins', OUT)\n"
         "chart"),
    md("## Table 4: urgent vs non-urgent bids by stage (mixed deadlines)"),
    code("res = group(X.urgency_bids(T.contentions, n_stages=N_STAGES, by=BY, urgent_below_s=URGENT_BELOW_S))\n"
         "res = res.with_columns(worker=pl.when(pl.col('urgent')).then(pl.lit('urgent')).otherwise(pl.lit('not urgent')))\n"
         "paper_table(res, 'scarce_table4_urgency_bids', ['group', 'worker'], 'stage', index_order={'worker': ['urgent', 'not urgent']})\n"
         "say(X.describe_extremes(res, ['model', 'stage', 'urgent'], 'the mean declared bid'))\n"
         "chart = X.ci_chart(res.with_columns(pl.when(pl.col('urgent')).then(pl.lit('urgent')).otherwise(pl.lit('not urgent')).alias('worker')),\n"
         "                   'stage', color='worker', column='group', kind='line', y_title='mean bid (credits)',\n"
         "                   title='Do urgent workers bid more as the run goes on? (Table 4)', width=160)\n"
         "save_chart(chart, 'scarce_urgency_bids', OUT)\n"
         "chart"),
    md("## Deadline misses under mixed deadlines\n\nShare of (worker, subrun) submissions that missed the "
       "deadline, urgent workers (deadline below the run's median) against the others."),
    code("S4 = T.submissions.join(T.submissions.group_by('run_id').agg(pl.col('deadline_s').median().alias('_med'),\n"
         "                                                             pl.col('deadline_s').n_unique().alias('_k')),\n"
         "                         on='run_id').filter(pl.col('_k') > 1)\n"
         "S4 = S4.with_columns((pl.col('deadline_s') < pl.col('_med')).alias('urgent'))\n"
         + "res = group(X.task_outcomes(S4, by=(*BY, 'urgent')))\n"
         "paper_table(res, 'scarce_deadline_misses_by_urgency', ['group', 'urgent'], 'metric')\n"
         "say(X.describe_extremes(res.filter(pl.col('metric') == 'deadline_miss_rate'), ['model', 'urgent'], 'the deadline-miss rate'))"),
])

# -- 05 ----------------------------------------------------------------------------------
write("05_revisable_bids_reasoning.ipynb", [
    md("# 05 · SCARCE: revisable bids and reasoning effort\n\n"
       "Rule-making plus rule-invoking share by stage under fixed vs revisable bids (the paper's Table "
       "10: the combined share, with the split beside it) and the tactic distribution under the two "
       "highest reasoning efforts a model accepts (Table 9, e.g. `high` vs `xhigh` or `max`).\n\n"
       "Definitions (from the taxonomy's *rules and spontaneous norms* system; "
       "`scarce_experiments.RULE_MAKING` / `RULE_INVOKING`): a round is **rule-making** when the panel "
       "accepted a *process and governance norm* (iterative bargaining, negotiation neutrality rules, "
       "issue reduction: proposing how the group should decide) and **rule-invoking** when it accepted "
       "a *time-urgency* or *classical scheduling norm* (earliest deadline first, sunk-cost urgency, "
       "first come first served, shortest job first, risk/variance first: appealing to an ordering "
       "criterion). " + CI_NOTE + "\n\n"
       "Reasoning effort is passed through to litellm (`llm.reasoning_effort`, checked against the "
       "levels litellm lists for the model); the embedded model ignores it, and the shipped embedded runs "
       "compare `low` and `high` only: the table shows the pipeline, not an effect.\n\n" + CAVEAT),
    params('DATASETS: list[str] = ["data/scarce/embedded", "data/scarce/scripted/revisable", "data/scarce/scripted/models"]\n'
           'LABELS: str | None = "data/scarce/labels/embedded/labels.parquet"  # None to skip\n'
           'TAXONOMY: str = "scarce"\n'
           'LABEL_MEMORY: str = "cross"  # memory of the labelled reference runs (the paper\'s cross-subrun default)\n'
           'N_STAGES: int = 3\n'
           'EFFORTS: list[str] | None = None  # e.g. ["high", "xhigh"]; None = the two strongest levels present in the runs\n'
           'OUT_DIR: str = "figures"'),
    code(PRELUDE),
    md("## Bid revision under the two mechanisms (all negotiators, no labels needed)\n\n"
       "Share of participations whose final bid differs from the declared one; runs compared differ only "
       "in the mechanism."),
    code("BY = ('model', 'mechanism', 'condition')  # one row per condition (worker count, subruns... differ)\n"
         "res = X.bid_revision_share(X.base_condition(T.contentions, except_=('mechanism',)), by=BY)\n"
         "save_table(X.with_ci_text(res), 'scarce_bid_revision', OUT, convention=CONVENTION)\n"
         "show(X.with_ci_text(res).select(*BY, 'estimate', 'n', 'runs'))\n"
         "say(X.describe_extremes(res, list(BY), 'the share of revised bids'))\n"
         "paid = X.base_condition(T.contentions, except_=('mechanism',)).with_columns(pl.col('payment').cast(pl.Float64))\n"
         "pay = paid.group_by(*BY).agg(pl.col('payment').mean().alias('mean_payment'), pl.len().alias('n'), pl.col('run_id').n_unique().alias('runs')).sort(*BY)\n"
         "show(pay)\n"
         "say('Mean payment per participation (credits) under each mechanism, for the same negotiators and seeds.')"),
    code(LOAD_LABELS),
    md("## Table 10: rule-making plus rule-invoking by stage, fixed vs revisable"),
    code("if rounds is not None and rounds.height:\n"
         "    r = X.base_condition(rounds, except_=('mechanism',), memory=LABEL_MEMORY)\n"
         "    by = ('model', 'mechanism', 'condition')\n"
         "    res = group(X.rule_shares_by_stage(r, n_stages=N_STAGES, by=by))\n"
         "    res = setting_labels(res, 'mechanism')  # row label: the model and what differs apart from the mechanism\n"
         "    paper_table(res, 'scarce_table10_rules', ['setting', 'kind', 'stage'], 'mechanism', column_order=['fixed', 'revisable'], key='setting',\n"
         "                index_order={'kind': ['rules', 'rule_making', 'rule_invoking']})\n"
         "    for k in ('rules', 'rule_making', 'rule_invoking'):\n"
         "        say(X.describe_extremes(res.filter(pl.col('kind') == k), ['model', 'mechanism', 'stage'], f'the {k.replace(\"_\", \"-\")} share'))\n"
         "    chart = X.ci_chart(res, 'stage', color='group', column='kind', kind='line', y_title='share of rounds',\n"
         "                       title='Do revisable bids bring more rule-making? Rules by stage (Table 10)', width=180)\n"
         "    save_chart(chart, 'scarce_rule_shares', OUT)\n"
         "    display(chart)\n"
         "else:\n"
         "    say('No judge labels for these runs.')"),
    md("## Table 9: tactic distribution under the two highest reasoning efforts"),
    code("if rounds is not None and rounds.height:\n"
         "    from scarce_lab.config.scarce import strongest_efforts\n"
         "    present = [e for e in rounds['reasoning_effort'].unique().to_list() if e != 'default']\n"
         "    efforts = EFFORTS or list(strongest_efforts(present))\n"
         "    say(f'Efforts compared: {efforts} (present in the runs: {sorted(present)}).')\n"
         "    r = X.base_condition(rounds, except_=('reasoning_effort',), memory=LABEL_MEMORY).filter(pl.col('reasoning_effort').is_in(efforts))\n"
         "    dist = X.label_distribution(r, tax.ids, by=('model', 'reasoning_effort'))\n"
         "    shares = X.tactic_shares(r, tax.ids, RELATIONAL, by=('model', 'reasoning_effort'), subrun=None)\n"
         "    save_table(dist, 'scarce_effort_distribution', OUT, convention=CONVENTION | {'efforts': efforts})\n"
         "    save_table(X.with_ci_text(shares), 'scarce_effort_tactic_shares', OUT, convention=CONVENTION | {'efforts': efforts, 'subrun': 'all'})\n"
         "    shares = shares.with_columns(kind=pl.col('category').map_elements(lambda c: relational_kind(c, RELATIONAL), return_dtype=pl.String),\n"
         "                                 column=pl.col('model') + ' · ' + pl.col('reasoning_effort'))\n"
         "    paper_table(shares, 'scarce_table9_effort', ['kind', 'category'], 'column', convention={'efforts': efforts, 'subrun': 'all'},\n"
         "                index_order={'kind': ['relational', 'non-relational', 'any relational'], 'category': [*tax.ids, 'relational']})\n"
         "    say(X.describe_extremes(shares.filter(pl.col('category') == 'relational'), ['model', 'reasoning_effort'],\n"
         "                            'the relational share'))\n"
         "    chart = X.ci_chart(shares, 'category', color='reasoning_effort', row='model', x_sort=[*tax.ids, 'relational'],\n"
         "                       y_title='share of rounds', title='Does more reasoning effort change the tactics? (Table 9)', width=560)\n"
         "    save_chart(chart, 'scarce_effort_tactic_shares', OUT)\n"
         "    display(chart)"),
])

# -- 06 ----------------------------------------------------------------------------------
write("06_auction_dynamics.ipynb", [
    md("# 06 · SCARCE: auction dynamics, and negotiation vs centralised schedulers\n\n"
       "Win continuity P(win next | won this one) against P(win next | lost this one), the median "
       "winning bid per stage over stages 1 to 4 (bid drift, the paper's Table 8), the requested slot "
       "duration per subrun (its growth factor), and a comparison the paper leaves open: the negotiated "
       "schedule (ballots) against the FIFO, SJF, EDF and highest-bid schedulers on collective outcomes "
       "(deadline misses, mean partial score, total queue wait), on the same tasks, deadlines and seeds. "
       "Per-run outcomes get t intervals over runs (and over paired seeds for the differences). " + CI_NOTE
       + "\n\n" + CAVEAT),
    params('DATASETS: list[str] = ["data/scarce/scripted/models", "data/scarce/scripted/schedulers", "data/scarce/scripted/memory",\n'
           '            "data/scarce/embedded"]\n'
           'N_STAGES: int = 4   # bid drift: stages 1 to 4 (Table 8)\n'
           'NEGOTIATOR: str = "scripted/strategic"   # negotiator model of the scheduler comparison runs\n'
           'OUT_DIR: str = "figures"'),
    code(PRELUDE + "\n"
         "C = X.base_condition(T.contentions, except_=('memory',))  # negotiated runs, any memory horizon\n"
         "BY = ('model', 'condition')"),
    md("## Win continuity"),
    code("res = group(X.win_continuity(C, by=BY))\n"
         "paper_table(res, 'scarce_table8_win_continuity', ['group'], 'given', column_order=['won', 'lost'])\n"
         "say(X.describe_extremes(res.filter(pl.col('given') == 'won'), list(BY), 'P(win next | won this one)'))\n"
         "say(X.describe_extremes(res.filter(pl.col('given') == 'lost'), list(BY), 'P(win next | lost this one)'))\n"
         "chart = X.ci_chart(res, 'group', color='given', y_title='P(win next)', title='Does a win bring the next win? Win continuity (Table 8)', width=520)\n"
         "save_chart(chart, 'scarce_win_continuity', OUT)\n"
         "chart"),
    md("## Bid drift: median winning bid per stage, stages 1 to 4 (contested contentions; Table 8)"),
    code("res = group(X.winning_bid_by_stage(C, n_stages=N_STAGES, by=BY))\n"
         "paper_table(res, 'scarce_table8_bid_drift', ['group'], 'stage')\n"
         "say(X.describe_change(res, 'stage', list(range(1, N_STAGES + 1)), ['group'],\n"
         "                      f\"Table 8's question: does the median winning bid rise from stage 1 to {N_STAGES}?\"))\n"
         "chart = X.ci_chart(res, 'stage', color='group', kind='line', y_title='median winning bid (credits)',\n"
         "                   title='Does the winning bid rise over the run? Median winning bid by stage (Table 8)', width=200)\n"
         "save_chart(chart, 'scarce_bid_drift', OUT)\n"
         "chart"),
    md("## Requested slot duration per subrun and its growth factor\n\nTwo measures: the duration the "
       "solver requested (`requested_duration_s`, capped at the slot cap) and the one the negotiator "
       "declared (`desired_duration_s`). Growth factor = a run's mean in its last subrun / its mean in its "
       "first subrun, averaged over runs with two or more subruns (t interval). The scripted skilled solver "
       "asks for longer slots after failed attempts it remembers, so it grows under cross-subrun memory."),
    code("DURATION = {'requested_duration_s': 'Requested slot duration', 'desired_duration_s': 'Declared (desired) slot duration'}\n"
         "for col in ('requested_duration_s', 'desired_duration_s'):\n"
         "    per, growth = X.requested_duration_by_subrun(C, by=BY, col=col)\n"
         "    per, growth = group(per), group(growth)\n"
         "    paper_table(per, f'scarce_{col}_per_subrun', ['group'], 'subrun')\n"
         "    save_table(X.with_ci_text(growth), f'scarce_{col}_growth', OUT, convention=CONVENTION | {'intervals': '95% t-interval over runs'})\n"
         "    fold(f'Growth factor of the {DURATION[col].lower()} (last subrun / first)', X.with_ci_text(growth).select('group', 'estimate', 'runs'))\n"
         "    say(X.describe_extremes(growth, ['group'], f'the growth factor of the {DURATION[col].lower()}'))\n"
         "    chart = X.ci_chart(per, 'subrun', color='group', kind='line', y_title=f'{DURATION[col]} (s)',\n"
         "                       title=f'{DURATION[col]} per subrun', width=320)\n"
         "    save_chart(chart, f'scarce_{col}_per_subrun', OUT)\n"
         "    display(chart)"),
    md("## Negotiated schedule vs centralised schedulers (same tasks and seeds)\n\n`diff` is the mean "
       "over paired seeds of (scheduler minus ballots); a negative difference in deadline misses or "
       "queue wait, or a positive one in partial score, favours the centralised scheduler. Only runs that "
       "differ in the scheduler alone are compared."),
    code("runs = X.base_condition(T.settings, except_=('scheduler',)).filter(\n"
         "    (pl.col('negotiator') == NEGOTIATOR) & (pl.col('subruns') == 1))\n"
         "keep = runs['run_id'].to_list()\n"
         "out = X.collective_outcomes(T.contentions.filter(pl.col('run_id').is_in(keep)),\n"
         "                            T.submissions.filter(pl.col('run_id').is_in(keep)))\n"
         "out = X.with_settings(out, T.settings, ['scheduler', 'seed'])\n"
         "save_table(out, 'scarce_scheduler_outcomes_per_run', OUT, convention=CONVENTION | {'intervals': 'none (one row per run)'})\n"
         "cmp = X.compare_schedulers(out, by=('scheduler',), reference='ballots')\n"
         "save_table(X.with_ci_text(cmp), 'scarce_scheduler_comparison', OUT, convention=CONVENTION | {'intervals': '95% t-interval over runs, clipped to the metric range; differences paired on seeds'})\n"
         "show(X.with_ci_text(cmp).select('scheduler', 'metric', 'estimate', 'runs', 'diff', 'diff_lo', 'diff_hi', 'pairs'))\n"
         "for m in ('deadline_misses', 'mean_partial_score', 'total_queue_wait_s'):\n"
         "    say(X.describe_extremes(cmp.filter(pl.col('metric') == m), ['scheduler'], m.replace('_', ' ') + ' per run'))\n"
         "chart = X.ci_chart(cmp, 'scheduler', column='metric', x_sort=['ballots', 'fifo', 'sjf', 'edf', 'highest-bid'],\n"
         "                   title=f'Collective outcomes per run (negotiator {NEGOTIATOR})', width=170,\n"
         "                   ci='95% t-interval over runs')\n"
         "save_chart(chart, 'scarce_scheduler_comparison', OUT)\n"
         "chart"),
])
