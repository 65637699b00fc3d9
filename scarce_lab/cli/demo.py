"""``scarce-lab demo``: the README's main job.

Plays the four SovSim power conditions (CPR, BCPR, KCPR, KCPR-M) with the embedded
offline model, then executes ``notebooks/01_sovsim_power_conditions.ipynb`` on those
runs, which renders Table 1 and the figures (with 95% CIs) into ``figures/`` and shows
the same table for the shipped dataset and the published layouts in ../shared/data.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from . import app


@app.command("demo")
def demo(
    model: str = typer.Option("embedded/smollm2", "--model", "-m", help="Model for every agent."),
    simulations: int = typer.Option(1, "--simulations", "-n", min=1, help="Games per condition."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(Path("runs/demo"), "--out", "-o", help="Where the demo's runs go."),
    figures: Path = typer.Option(Path("figures/demo"), "--figures", help="Where the notebook writes."),
    notebook: bool = typer.Option(True, "--notebook/--no-notebook", help="Execute notebook 01 afterwards."),
) -> None:
    """Play SovSim's four conditions on MODEL (default: embedded, offline), then render the
    paper's table and figures from those runs. Re-running resumes and reuses the cache."""
    from ..environments.sovsim.runner.play import plan_sweep, run_sweep
    from ..llm import make_client
    from ..llm.models import is_scripted

    t0 = time.perf_counter()
    typer.echo(f"[demo] SovSim: 4 conditions x {simulations} game(s), 4 agents each, model {model}")
    # temperature 0: the embedded model is deterministic, so a second demo reproduces the first
    specs = plan_sweep(["all"], [model], simulations, seed=seed, llm={"temperature": 0.0})
    client = None if is_scripted(model) else make_client(specs[0].llm, max_concurrency=4, timeout_s=600)
    results = run_sweep(specs, out, client=client, resume=True, concurrency=4, progress=True)
    failed = [r for r in results if r.status not in ("complete", "skipped")]
    typer.echo(f"[demo] {len(results)} games recorded under {out} in {time.perf_counter() - t0:.0f} s")
    for r in failed:
        typer.echo(f"[demo]   {r.status}: {r.run_id}: {r.error}", err=True)

    import polars as pl

    from ..data.loaders import load_dataset
    from ..environments.sovsim.analysis.metrics import (
        CONDITION_ORDER,
        format_table,
        resolve_convention,
        simulation_metrics,
        summarize,
    )
    from ..environments.sovsim.tables import load_agent_rounds

    ids = [c.run_id for c in specs]  # this demo's games only, whatever else OUT holds
    everything = load_agent_rounds(out)
    rounds = everything.filter(pl.col("run_id").is_in(ids))
    others = everything.filter(~pl.col("run_id").is_in(ids))["run_id"].n_unique()
    if others:
        typer.echo(f"[demo] ({others} other run(s) in {out} are left out of what follows)")
    conv = resolve_convention(rounds)
    per_sim = simulation_metrics(rounds, conv)
    if per_sim.is_empty():  # every game failed: no table, one line, exit 1
        typer.echo(f"error: none of the {len(results)} games finished (see the lines above); no table", err=True)
        raise typer.Exit(code=1)
    order = {c: i for i, c in enumerate(CONDITION_ORDER)}
    for r in sorted(per_sim.iter_rows(named=True), key=lambda r: (order.get(r["base_condition"], 99),
                                                                  r["condition"], r["simulation"])):
        end = (f"ran all {r['rounds_played']} rounds" if r["survived"]
               else f"collapsed in round {r['survival_time']}")
        typer.echo(f"[demo]   {r['condition']} (simulation {r['simulation']}): {end}")
    calls = load_dataset(out).llm_calls.filter(pl.col("run_id").is_in(ids)).collect()
    if calls.height:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(calls["outcome"].value_counts().rows()))
        typer.echo(f"[demo] {calls.height} model calls ({outcomes}; {int(calls['cache_hit'].sum())} from the "
                   f"response cache; {int(calls['fallback_used'].sum())} fell back to a default)")
    typer.echo("\n[demo] Table 1 for these runs (mean [95% CI] per model x condition; one game per "
               "condition gives intervals only for the survival rate: --simulations N for more):")
    typer.echo(format_table(summarize(per_sim, conv=conv), "markdown", digits=2))
    if notebook:
        from ..reporting import execute_notebook

        executed = out / "01_sovsim_power_conditions.ipynb"
        typer.echo("[demo] executing notebooks/01_sovsim_power_conditions.ipynb on these runs ...")
        execute_notebook(
            "01",
            parameters={"DATASET": str(out.resolve()), "OUT_DIR": str(figures.resolve())},
            output=executed,
        )
        typer.echo(f"[demo] figures and tables in {figures}/ ; executed notebook: {executed}")
        typer.echo("[demo] open it in JupyterLab: .venv/bin/jupyter lab " + str(executed))
    typer.echo(f"[demo] done in {time.perf_counter() - t0:.0f} s")
    if failed:
        raise typer.Exit(code=1)
