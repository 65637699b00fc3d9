"""Build notebooks/02..06 (SCARCE experiments) without outputs.

Run from the repository root: ``.venv/bin/python scripts/make_scarce_notebooks.py``.
The metrics live in :mod:`scarce_lab.analysis.scarce_experiments`; cells stay thin.
"""

from pathlib import Path

import nbformat as nbf

ROOT = Path(__file__).resolve().parents[1]
md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell

CAVEAT = (
    "**About the shipped data** (`data/scarce`, see its README): scripted negotiators (fixed policies "
    "that write template sentences) and the embedded offline SmolLM2-135M model as negotiator (a "
    "scripted solver does the programming), a few seeds per condition. A 135M-parameter model's "
    "negotiation is not a frontier model's: read every embedded-model number as a demonstration of the "
    "pipeline on real data, not as a finding about LLM agents. Judge labels come from a panel of three "
    "copies of the same embedded model (different seeds and prompt variants). Point the parameters at "
    "your own runs (`scarce-lab run scarce ...`, `scarce-lab judge label ...`) for real findings."
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
    "print('negotiators:', sorted(T.settings['negotiator'].unique()))"
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
    return code("# Parameters (papermill)\n" + text, metadata={"tags": ["parameters"]})


def table(df_expr: str, name: str, cols: str | None = None) -> str:
    """Cell code: save a result frame (values + CI text) and show it."""
    sel = f".select({cols}, 'estimate', 'n', 'runs')" if cols else ""
    return (f"res = {df_expr}\n"
            f"save_table(X.with_ci_text(res), '{name}', OUT)\n"
            f"show(X.with_ci_text(res){sel})")


def write(name: str, cells: list) -> None:
    nb = nbf.v4.new_notebook()
    stem = name.removesuffix(".ipynb")
    for i, c in enumerate(cells):
        c["id"] = f"c{i:02d}"  # stable ids: rebuilding changes nothing in git
        if "parameters" in c.metadata.get("tags", []):
            c.source = c.source.replace('OUT_DIR = "figures"', f'OUT_DIR = "figures/{stem}"  # where figures and tables go')
            assert f"figures/{stem}" in c.source, name
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    path = ROOT / "notebooks" / name
    nbf.write(nb, str(path))
    print("wrote", path.relative_to(ROOT))


# -- 02 ----------------------------------------------------------------------------------
write("02_scarce_models_tactics.ipynb", [
    md("# 02 · SCARCE: tactics, private chat, task outcomes and language drift per model\n\n"
       "Per negotiator model: the share of negotiation rounds showing each of the 21 taxonomy "
       "categories and the relational share (the SCARCE paper's Table 1), private-chat use in the "
       "first subrun, task outcomes, and language drift over the stages of a run. All intervals are "
       "95% percentile cluster bootstraps with runs as clusters (drift: t intervals over runs).\n\n"
       + CAVEAT),
    params('DATASETS = ["data/scarce/scripted/models", "data/scarce/embedded"]  # relative to the repo root\n'
           'LABELS = "data/scarce/labels/embedded/labels.parquet"  # judge panel output; None to skip\n'
           'TAXONOMY = "scarce"\n'
           'BASE_ONLY = True   # only the reference condition (ballots, fixed bids, subrun memory, equal budgets)\n'
           'N_STAGES = 3       # stages per run for language drift\n'
           'OUT_DIR = "figures"'),
    code(PRELUDE + "\n"
         "C, S, M = T.contentions, T.submissions, T.messages\n"
         "if BASE_ONLY:\n"
         "    C, S, M = X.base_condition(C), X.base_condition(S), X.base_condition(M)\n"
         "print(f'{C[\"run_id\"].n_unique()} runs in the analysed condition')"),
    md("## Tactic shares per model (Table 1)\n\nShare of labelled agent-rounds (one agent's public "
       "reasoning and private messages in one contention) in which the judge panel accepted the "
       "category. Only runs with a label table are included (the shipped labels cover the embedded "
       "model; scripted negotiators write fixed template sentences and are not labelled)."),
    code(LOAD_LABELS),
    code("if rounds is not None and rounds.height:\n"
         "    r = X.base_condition(rounds) if BASE_ONLY else rounds\n"
         "    shares = X.tactic_shares(r, tax.ids, RELATIONAL, by=('model',))\n"
         "    save_table(X.with_ci_text(shares), 'scarce_tactic_shares', OUT)\n"
         "    chart = X.ci_chart(shares, 'category', color='model', x_sort=[*tax.ids, 'relational'],\n"
         "                       y_title='share of rounds', title='Tactic shares per model', width=620)\n"
         "    save_chart(chart, 'scarce_tactic_shares', OUT)\n"
         "    show(X.with_ci_text(shares).select('model', 'category', 'estimate', 'n', 'runs'))\n"
         "    say(X.describe_extremes(shares.filter(pl.col('category') != 'relational'), ['model', 'category'],\n"
         "                            'the share of rounds showing a category'))\n"
         "    say(X.describe_extremes(shares.filter(pl.col('category') == 'relational'), ['model'],\n"
         "                            'the relational share (rounds with any relational label)'))\n"
         "    display(chart)\n"
         "else:\n"
         "    say('No judge labels for these runs: run `scarce-lab judge label` to get tactic shares.')"),
    md("## Private-chat use in the first subrun\n\nShare of contested participations (two or more "
       "workers in the contention) in which the worker sent at least one private message."),
    code(table("X.private_chat_use(C, by=('model',), subrun=0)", "scarce_private_chat_first_subrun",
               "'model'") + "\n"
         "say(X.describe_extremes(res, ['model'], 'private-chat use in the first subrun'))\n"
         "chart = X.ci_chart(res, 'model', y_title='share with a private message', title='Private chat, subrun 1')\n"
         "save_chart(chart, 'scarce_private_chat_first_subrun', OUT)\n"
         "chart"),
    md("## Task outcomes per model\n\nOver (worker, subrun) submissions: full resolution (every hidden "
       "test passed), mean partial score (passed / total; 0 for a missed deadline) and deadline misses."),
    code(table("X.task_outcomes(S, by=('model',))", "scarce_task_outcomes", "'model', 'metric'") + "\n"
         "for m in ('full_resolution_rate', 'mean_partial_score', 'deadline_miss_rate'):\n"
         "    say(X.describe_extremes(res.filter(pl.col('metric') == m), ['model'], m.replace('_', ' ')))\n"
         "chart = X.ci_chart(res, 'model', column='metric', title='Task outcomes per model', width=180)\n"
         "save_chart(chart, 'scarce_task_outcomes', OUT)\n"
         "chart"),
    md("## Language drift over stages\n\nEach run's contentions are cut into `N_STAGES` equal blocks; "
       "per stage, the text of every agent's reasoning and private messages: cosine similarity of "
       "bag-of-words vectors with the previous stage, trigram repetition, and the share of new words "
       "(`scarce_lab.judge.drift`). Mean over runs with a t interval (clipped to [0, 1]). Scripted negotiators repeat "
       "templates, so they show the floor of drift."),
    code(table("X.language_drift(M, n_stages=N_STAGES, by=('model',))", "scarce_language_drift",
               "'model', 'stage', 'measure'") + "\n"
         "for m in ('cosine_prev', 'new_word_share'):\n"
         "    last = res.filter((pl.col('measure') == m) & (pl.col('stage') == res['stage'].max()))\n"
         "    say(X.describe_extremes(last, ['model'], f'{m} in the last stage'))\n"
         "chart = X.ci_chart(res, 'stage', color='model', column='measure', kind='line',\n"
         "                   title='Language drift over stages', width=180, ci='95% t-interval over runs')\n"
         "save_chart(chart, 'scarce_language_drift', OUT)\n"
         "chart"),
])

# -- 03 ----------------------------------------------------------------------------------
write("03_memory_horizon.ipynb", [
    md("# 03 · SCARCE: memory horizon and relational behaviour\n\n"
       "Reciprocity, alliance formation, alliance loyalty and reputation shares under the three "
       "memory horizons (the paper's Table 2; here `none` = each negotiation fresh, the paper's round "
       "memory; `subrun`; `cross` = cross-subrun), and the relational share in the first vs second "
       "half of a run (its decay). Shares of labelled agent-rounds; 95% cluster-bootstrap intervals "
       "with runs as clusters.\n\nBehaviours are sets of taxonomy ids "
       "(`scarce_lab.analysis.scarce_experiments.MEMORY_BEHAVIOURS`): alliance formation = explicit "
       "or exclusive coalition, alliance loyalty = coalition loyalty, reputation = reputation "
       "maintenance.\n\n" + CAVEAT),
    params('DATASETS = ["data/scarce/embedded"]\n'
           'LABELS = "data/scarce/labels/embedded/labels.parquet"\n'
           'TAXONOMY = "scarce"\n'
           'OUT_DIR = "figures"'),
    code(PRELUDE),
    code(LOAD_LABELS + "\n"
         "if rounds is not None:\n"
         "    rounds = X.base_condition(rounds, except_=('memory',))\n"
         "    print(rounds.group_by('memory').agg(pl.len().alias('rounds'), pl.col('run_id').n_unique().alias('runs')))"),
    md("## Table 2: behaviour shares by memory horizon"),
    code("if rounds is not None and rounds.height:\n"
         "    res = X.behaviour_shares(rounds, by=('model', 'memory'))\n"
         "    save_table(X.with_ci_text(res), 'scarce_memory_behaviours', OUT)\n"
         "    show(X.with_ci_text(res).select('model', 'memory', 'behaviour', 'estimate', 'n', 'runs'))\n"
         "    for b in X.MEMORY_BEHAVIOURS:\n"
         "        say(X.describe_extremes(res.filter(pl.col('behaviour') == b), ['model', 'memory'], f'the {b.replace(\"_\", \" \")} share'))\n"
         "    chart = X.ci_chart(res, 'memory', color='model', column='behaviour', x_sort=['none', 'subrun', 'cross'],\n"
         "                       y_title='share of rounds', title='Behaviour by memory horizon', width=150)\n"
         "    save_chart(chart, 'scarce_memory_behaviours', OUT)\n"
         "    display(chart)\n"
         "else:\n"
         "    say('No judge labels for these runs.')"),
    md("## Relational behaviour: first vs second half of a run"),
    code("if rounds is not None and rounds.height:\n"
         "    res = X.relational_by_half(rounds, RELATIONAL, by=('model', 'memory'))\n"
         "    save_table(X.with_ci_text(res), 'scarce_relational_by_half', OUT)\n"
         "    show(X.with_ci_text(res).select('model', 'memory', 'half', 'estimate', 'n', 'runs'))\n"
         "    say(X.describe_extremes(res, ['model', 'memory', 'half'], 'the relational share'))\n"
         "    chart = X.ci_chart(res, 'half', color='memory', row='model', kind='line', y_title='relational share',\n"
         "                       title='Relational share, first vs second half')\n"
         "    save_chart(chart, 'scarce_relational_by_half', OUT)\n"
         "    display(chart)"),
    md("## Institutional behaviour\n\nFrom the panel's output (`institutions.parquet`, issue 4): a "
       "labelled behaviour is institutional when spontaneous (not asked for by the instructions) and "
       "persistent (it recurs in a later round for the same agent or pair)."),
    code("inst_path = lab_path.parent / 'institutions.parquet' if lab_path is not None else None\n"
         "if inst_path is not None and inst_path.exists():\n"
         "    from scarce_lab.judge import institutional_summary\n"
         "    inst = X.with_settings(pl.read_parquet(inst_path), T.settings, ['memory'])\n"
         "    inst = inst.filter(pl.col('memory').is_not_null())\n"
         "    summ = institutional_summary(inst, by=('memory', 'relational'))\n"
         "    save_table(summ, 'scarce_memory_institutions', OUT)\n"
         "    show(summ)\n"
         "    tot = summ['institutional'].sum()\n"
         "    say(f'In this dataset, {tot} of {summ[\"behaviours\"].sum()} labelled (run, agent or pair, label) '\n"
         "        'behaviours are institutional (spontaneous and persistent).')"),
])

# -- 04 ----------------------------------------------------------------------------------
write("04_budget_asymmetry_deadlines.ipynb", [
    md("# 04 · SCARCE: budget asymmetry and deadline pressure\n\n"
       "The richer worker's mean bid and win rate by budget phase (share of its subrun budget left "
       "before the contention: > 66%, 33-66%, < 33%) against the other workers (the paper's Tables 5 "
       "and 7), and the bids of urgent vs non-urgent workers by stage under mixed 10-25 minute "
       "deadlines (Table 4; urgent = deadline below the run's median). 95% cluster-bootstrap "
       "intervals, runs as clusters.\n\n" + CAVEAT),
    params('DATASETS = ["data/scarce/scripted/budget", "data/scarce/scripted/deadlines", "data/scarce/embedded"]\n'
           'N_STAGES = 3\n'
           'URGENT_BELOW_S = None   # seconds; None = below the run\'s median deadline\n'
           'OUT_DIR = "figures"'),
    code(PRELUDE),
    md("## Tables 5 and 7: the richer worker by budget phase"),
    code(table("X.budget_phase_bids(T.contentions, by=('model',))", "scarce_budget_phases",
               "'model', 'who', 'budget_phase', 'metric'") + "\n"
         "phases = [p for p in ('>66%', '33-66%', '<33%') if p in set(res['budget_phase'])]\n"
         "say(f'Budget phases reached in the runs with a richer worker: {phases or \"none\"} (a phase is missing when no worker spent '\n"
         "    'that much of its subrun budget before a contention).')\n"
         "for m in ('mean_bid', 'win_rate'):\n"
         "    say(X.describe_extremes(res.filter(pl.col('metric') == m), ['model', 'who', 'budget_phase'], m.replace('_', ' ')))\n"
         "chart = X.ci_chart(res.filter(pl.col('metric') == 'mean_bid'), 'budget_phase', color='who', column='model',\n"
         "                   x_sort=['>66%', '33-66%', '<33%'], y_title='mean bid (credits)', title='Mean bid by budget phase', width=160)\n"
         "save_chart(chart, 'scarce_budget_phase_bids', OUT)\n"
         "display(chart)\n"
         "chart = X.ci_chart(res.filter(pl.col('metric') == 'win_rate'), 'budget_phase', color='who', column='model',\n"
         "                   x_sort=['>66%', '33-66%', '<33%'], y_title='win rate', title='Win rate by budget phase', width=160)\n"
         "save_chart(chart, 'scarce_budget_phase_wins', OUT)\n"
         "chart"),
    md("## Table 4: urgent vs non-urgent bids by stage (mixed deadlines)"),
    code(table("X.urgency_bids(T.contentions, n_stages=N_STAGES, by=('model',), urgent_below_s=URGENT_BELOW_S)",
               "scarce_urgency_bids", "'model', 'stage', 'urgent'") + "\n"
         "say(X.describe_extremes(res, ['model', 'stage', 'urgent'], 'the mean declared bid'))\n"
         "chart = X.ci_chart(res.with_columns(pl.when(pl.col('urgent')).then(pl.lit('urgent')).otherwise(pl.lit('not urgent')).alias('worker')),\n"
         "                   'stage', color='worker', column='model', kind='line', y_title='mean bid (credits)',\n"
         "                   title='Bids by urgency and stage', width=160)\n"
         "save_chart(chart, 'scarce_urgency_bids', OUT)\n"
         "chart"),
])

# -- 05 ----------------------------------------------------------------------------------
write("05_revisable_bids_reasoning.ipynb", [
    md("# 05 · SCARCE: revisable bids and reasoning effort\n\n"
       "Rule-making and rule-invoking share by stage under fixed vs revisable bids (the paper's Table "
       "10) and the tactic distribution under two reasoning efforts (Table 9).\n\n"
       "Definitions (from the taxonomy's *rules and spontaneous norms* system; "
       "`scarce_experiments.RULE_MAKING` / `RULE_INVOKING`): a round is **rule-making** when the panel "
       "accepted a *process and governance norm* (iterative bargaining, negotiation neutrality rules, "
       "issue reduction: proposing how the group should decide) and **rule-invoking** when it accepted "
       "a *time-urgency* or *classical scheduling norm* (earliest deadline first, sunk-cost urgency, "
       "first come first served, shortest job first, risk/variance first: appealing to an ordering "
       "criterion). 95% cluster-bootstrap intervals, runs as clusters.\n\n"
       "Reasoning effort is passed through to litellm (`reasoning_effort`); the embedded model ignores "
       "it, so with the shipped data the two efforts differ only where decoding differs (at temperature "
       "0 the two runs can be identical): the table shows the pipeline, not an effect.\n\n" + CAVEAT),
    params('DATASETS = ["data/scarce/embedded", "data/scarce/scripted/revisable", "data/scarce/scripted/models"]\n'
           'LABELS = "data/scarce/labels/embedded/labels.parquet"\n'
           'TAXONOMY = "scarce"\n'
           'N_STAGES = 3\n'
           'EFFORTS = ["low", "high"]\n'
           'OUT_DIR = "figures"'),
    code(PRELUDE),
    md("## Bid revision under the two mechanisms (all negotiators, no labels needed)\n\n"
       "Share of participations whose final bid differs from the declared one."),
    code("res = X.bid_revision_share(X.base_condition(T.contentions, except_=('mechanism',)), by=('model', 'mechanism'))\n"
         "save_table(X.with_ci_text(res), 'scarce_bid_revision', OUT)\n"
         "show(X.with_ci_text(res).select('model', 'mechanism', 'estimate', 'n', 'runs'))\n"
         "say(X.describe_extremes(res, ['model', 'mechanism'], 'the share of revised bids'))"),
    code(LOAD_LABELS),
    md("## Table 10: rule-making and rule-invoking by stage, fixed vs revisable"),
    code("if rounds is not None and rounds.height:\n"
         "    r = X.base_condition(rounds, except_=('mechanism',))\n"
         "    res = X.rule_shares_by_stage(r, n_stages=N_STAGES, by=('model', 'mechanism'))\n"
         "    save_table(X.with_ci_text(res), 'scarce_rule_shares', OUT)\n"
         "    show(X.with_ci_text(res).select('model', 'mechanism', 'stage', 'kind', 'estimate', 'n', 'runs'))\n"
         "    for k in ('rule_making', 'rule_invoking'):\n"
         "        say(X.describe_extremes(res.filter(pl.col('kind') == k), ['model', 'mechanism', 'stage'], f'the {k.replace(\"_\", \"-\")} share'))\n"
         "    chart = X.ci_chart(res, 'stage', color='mechanism', column='kind', row='model', kind='line', y_title='share of rounds',\n"
         "                       title='Rules by stage and mechanism', width=180)\n"
         "    save_chart(chart, 'scarce_rule_shares', OUT)\n"
         "    display(chart)\n"
         "else:\n"
         "    say('No judge labels for these runs.')"),
    md("## Table 9: tactic distribution under two reasoning efforts"),
    code("if rounds is not None and rounds.height:\n"
         "    r = X.base_condition(rounds, except_=('reasoning_effort',)).filter(pl.col('reasoning_effort').is_in(EFFORTS))\n"
         "    dist = X.label_distribution(r, tax.ids, by=('model', 'reasoning_effort'))\n"
         "    shares = X.tactic_shares(r, tax.ids, RELATIONAL, by=('model', 'reasoning_effort'))\n"
         "    save_table(dist, 'scarce_effort_distribution', OUT)\n"
         "    save_table(X.with_ci_text(shares), 'scarce_effort_tactic_shares', OUT)\n"
         "    show(X.with_ci_text(shares).select('model', 'reasoning_effort', 'category', 'estimate', 'n', 'runs'))\n"
         "    say(X.describe_extremes(shares.filter(pl.col('category') == 'relational'), ['model', 'reasoning_effort'],\n"
         "                            'the relational share'))\n"
         "    chart = X.ci_chart(shares, 'category', color='reasoning_effort', row='model', x_sort=[*tax.ids, 'relational'],\n"
         "                       y_title='share of rounds', title='Tactics by reasoning effort', width=620)\n"
         "    save_chart(chart, 'scarce_effort_tactic_shares', OUT)\n"
         "    display(chart)"),
])

# -- 06 ----------------------------------------------------------------------------------
write("06_auction_dynamics.ipynb", [
    md("# 06 · SCARCE: auction dynamics, and negotiation vs centralised schedulers\n\n"
       "Win continuity P(win next | won this one) against P(win next | lost this one), the median "
       "winning bid per stage (bid drift), the requested slot duration per subrun (its growth factor), "
       "and a comparison the paper leaves open: the negotiated schedule (ballots) against the FIFO, "
       "SJF, EDF and highest-bid schedulers on collective outcomes (deadline misses, mean partial "
       "score, total queue wait), on the same tasks, deadlines and seeds. Intervals: cluster bootstrap "
       "over runs for shares and medians; t intervals over runs (and over paired seeds for the "
       "differences) for per-run outcomes.\n\n" + CAVEAT),
    params('DATASETS = ["data/scarce/scripted/models", "data/scarce/scripted/schedulers", "data/scarce/embedded"]\n'
           'N_STAGES = 3\n'
           'NEGOTIATOR = "scripted/random"   # negotiator model of the scheduler comparison runs\n'
           'OUT_DIR = "figures"'),
    code(PRELUDE + "\n"
         "C = X.base_condition(T.contentions, except_=('memory',))  # negotiated runs, any memory horizon"),
    md("## Win continuity"),
    code(table("X.win_continuity(C, by=('model',))", "scarce_win_continuity", "'model', 'given'") + "\n"
         "say(X.describe_extremes(res.filter(pl.col('given') == 'won'), ['model'], 'P(win next | won this one)'))\n"
         "say(X.describe_extremes(res.filter(pl.col('given') == 'lost'), ['model'], 'P(win next | lost this one)'))\n"
         "chart = X.ci_chart(res, 'model', color='given', y_title='P(win next)', title='Win continuity', width=320)\n"
         "save_chart(chart, 'scarce_win_continuity', OUT)\n"
         "chart"),
    md("## Bid drift: median winning bid per stage (contested contentions)"),
    code(table("X.winning_bid_by_stage(C, n_stages=N_STAGES, by=('model',))", "scarce_winning_bid_by_stage",
               "'model', 'stage'") + "\n"
         "say(X.describe_extremes(res, ['model', 'stage'], 'the median winning bid (credits)'))\n"
         "chart = X.ci_chart(res, 'stage', color='model', kind='line', y_title='median winning bid (credits)',\n"
         "                   title='Bid drift', width=320)\n"
         "save_chart(chart, 'scarce_bid_drift', OUT)\n"
         "chart"),
    md("## Requested slot duration per subrun and its growth factor\n\nTwo measures: the duration the "
       "solver requested (`requested_duration_s`, capped at the slot cap) and the one the negotiator "
       "declared (`desired_duration_s`). Growth factor = a run's mean in its last subrun / its mean in its "
       "first subrun, averaged over runs with two or more subruns (t interval). The shipped solver is "
       "scripted, so only the declared duration reflects the embedded model."),
    code("for col in ('requested_duration_s', 'desired_duration_s'):\n"
         "    per, growth = X.requested_duration_by_subrun(C, by=('model',), col=col)\n"
         "    save_table(X.with_ci_text(per), f'scarce_{col}_per_subrun', OUT)\n"
         "    save_table(X.with_ci_text(growth), f'scarce_{col}_growth', OUT)\n"
         "    show(X.with_ci_text(per).select('model', 'subrun', 'estimate', 'n', 'runs'))\n"
         "    show(X.with_ci_text(growth).select('model', 'estimate', 'runs'))\n"
         "    say(X.describe_extremes(growth, ['model'], f'the growth factor of {col}'))\n"
         "    chart = X.ci_chart(per, 'subrun', color='model', kind='line', y_title=f'{col} (s)',\n"
         "                       title=f'{col} per subrun', width=320)\n"
         "    save_chart(chart, f'scarce_{col}_per_subrun', OUT)\n"
         "    display(chart)"),
    md("## Negotiated schedule vs centralised schedulers (same tasks and seeds)\n\n`diff` is the mean "
       "over paired seeds of (scheduler minus ballots); a negative difference in deadline misses or "
       "queue wait, or a positive one in partial score, favours the centralised scheduler."),
    code("runs = X.base_condition(T.settings, except_=('scheduler',)).filter(pl.col('negotiator') == NEGOTIATOR)\n"
         "keep = runs['run_id'].to_list()\n"
         "out = X.collective_outcomes(T.contentions.filter(pl.col('run_id').is_in(keep)),\n"
         "                            T.submissions.filter(pl.col('run_id').is_in(keep)))\n"
         "out = X.with_settings(out, T.settings, ['scheduler', 'seed'])\n"
         "save_table(out, 'scarce_scheduler_outcomes_per_run', OUT)\n"
         "cmp = X.compare_schedulers(out, by=('scheduler',), reference='ballots')\n"
         "save_table(X.with_ci_text(cmp), 'scarce_scheduler_comparison', OUT)\n"
         "show(X.with_ci_text(cmp).select('scheduler', 'metric', 'estimate', 'runs', 'diff', 'diff_lo', 'diff_hi', 'pairs'))\n"
         "for m in ('deadline_misses', 'mean_partial_score', 'total_queue_wait_s'):\n"
         "    say(X.describe_extremes(cmp.filter(pl.col('metric') == m), ['scheduler'], m.replace('_', ' ') + ' per run'))\n"
         "chart = X.ci_chart(cmp, 'scheduler', column='metric', x_sort=['ballots', 'fifo', 'sjf', 'edf', 'highest-bid'],\n"
         "                   title=f'Collective outcomes per run (negotiator {NEGOTIATOR})', width=170,\n"
         "                   ci='95% t-interval over runs')\n"
         "save_chart(chart, 'scarce_scheduler_comparison', OUT)\n"
         "chart"),
])
