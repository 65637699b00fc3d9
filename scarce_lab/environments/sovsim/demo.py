"""``scarce-lab demo`` for SovSim (the README's main job; the spec's ``demo``).

Plays the four SovSim power conditions (CPR, BCPR, KCPR, KCPR-M) with the embedded
offline model, then executes ``notebooks/01_sovsim_power_conditions.ipynb`` on those
runs, which renders Table 1 and the figures (with 95% CIs) into ``figures/`` and shows
the same table for the shipped dataset and the published layouts in ../shared/data.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

echo = partial(print, flush=True)  # each line out at once, as click.echo, interleaved with the progress bar


def run_demo(*, model: str, simulations: int, seed: int, out: Path, figures: Path, notebook: bool) -> int:
    """Play SovSim's four conditions on ``model`` (``simulations`` games each, sweep
    ``seed``; one game at temperature 0, several at the paper's temperature) into ``out``, print how each game ended, how the model
    calls went and Table 1 of these games, then (``notebook``) execute notebook 01 on
    them with its figures written to ``figures``. Re-running resumes and reuses the
    response cache; other runs in ``out`` are left out (and counted).

    Returns:
        The exit code: 0, or 1 when a game failed (or none finished: no table).
    """
    import polars as pl

    from ...data.loaders import load_dataset
    from ...llm import make_client
    from ...llm.models import is_scripted
    from .analysis.conventions import resolve_convention
    from .analysis.drops import condition_key
    from .analysis.metrics import format_table, simulation_metrics, summarize
    from .runner.play import plan_sweep, run_sweep
    from .tables import load_agent_rounds

    t0 = time.perf_counter()
    echo(f"[demo] SovSim: 4 conditions x {simulations} game(s), 4 agents each, model {model}")
    # one game per condition at temperature 0: deterministic, so a second demo reproduces the
    # first; several at the paper's temperature, else the simulations would be copies of one game
    llm = {"temperature": 0.0} if simulations == 1 else {}
    specs = plan_sweep(["all"], [model], simulations, seed=seed, llm=llm)
    client = None if is_scripted(model) else make_client(specs[0].llm, max_concurrency=4, timeout_s=600)
    results = run_sweep(specs, out, client=client, resume=True, concurrency=4, progress=True)
    failed = [r for r in results if r.status not in ("complete", "skipped")]
    skipped = sum(r.status == "skipped" for r in results)
    echo(f"[demo] {len(results)} games under {out}: {len(results) - skipped} played in "
         f"{time.perf_counter() - t0:.0f} s" + (f", {skipped} already complete (skipped)" if skipped else ""))
    for r in failed:
        echo(f"[demo]   {r.status}: {r.run_id}: {r.error}", file=sys.stderr)
    ids = [c.run_id for c in specs]  # this demo's games only, whatever else OUT holds
    everything = load_agent_rounds(out)
    rounds = everything.filter(pl.col("run_id").is_in(ids))
    others = everything.filter(~pl.col("run_id").is_in(ids))["run_id"].n_unique()
    if others:
        echo(f"[demo] ({others} other run(s) in {out} are left out of what follows)")
    conv = resolve_convention(rounds)
    per_sim = simulation_metrics(rounds, conv)
    if per_sim.is_empty():  # every game failed: no table, one line, exit 1
        echo(f"error: none of the {len(results)} games finished (see the lines above); no table", file=sys.stderr)
        return 1
    for r in sorted(per_sim.iter_rows(named=True),
                    key=lambda r: (condition_key(r["base_condition"])[0], r["condition"], r["simulation"])):
        end = (f"ran all {r['rounds_played']} rounds" if r["survived"]
               else f"collapsed in round {r['survival_time']}")
        echo(f"[demo]   {r['condition']} (simulation {r['simulation']}): {end}")
    calls = load_dataset(out).llm_calls.filter(pl.col("run_id").is_in(ids)).collect()
    if calls.height:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(calls["outcome"].value_counts().rows()))
        echo(f"[demo] {calls.height} model calls in these games ({outcomes}; {int(calls['cache_hit'].sum())} from the "
              f"response cache; {int(calls['fallback_used'].sum())} fell back to a default)")
    echo("\n[demo] Table 1 for these runs (mean [95% CI] per model x condition" + (
        "; one game per condition gives intervals only for the survival rate: --simulations N plays N "
        "games per condition at the paper's temperature, for intervals everywhere):" if simulations == 1 else "):"))
    echo(format_table(summarize(per_sim, conv=conv), "markdown", digits=2))
    if llm:
        echo("[demo] Every run departs from the paper's defaults in: llm.temperature=0.0 (a deterministic demo)")
    if notebook:
        from ...reporting import execute_notebook

        executed = out / "01_sovsim_power_conditions.ipynb"
        echo("[demo] executing notebooks/01_sovsim_power_conditions.ipynb on these runs ...")
        execute_notebook(
            "01",
            parameters={"DATASET": str(out.resolve()), "OUT_DIR": str(figures.resolve())},
            output=executed,
        )
        echo(f"[demo] figures and tables in {figures}/ ; executed notebook: {executed}")
        echo("[demo] open it in JupyterLab: .venv/bin/jupyter lab " + str(executed))
    echo(f"[demo] done in {time.perf_counter() - t0:.0f} s")
    return 1 if failed else 0
