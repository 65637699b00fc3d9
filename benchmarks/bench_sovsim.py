"""SovSim benchmark: prints its figures. Not a test: timings are noisy.

    .venv/bin/python benchmarks/bench_sovsim.py            # everything (~6 min on 2 cores)
    .venv/bin/python benchmarks/bench_sovsim.py --quick    # skip the embedded game

Figures:
1. scripted games per second (env only, and with recording to disk);
2. our overhead per decision (client + agent + recorder, against a 0 ms fake server);
3. embedded model: seconds per decision and per game, tokens per decision (one CPR game);
4. sweep throughput, 20 games over all conditions, against a local OpenAI-compatible
   fake server answering after 200 ms, at concurrency 8, 32 and 128, as the ratio
   ideal/actual where ideal = the larger of calls x latency / concurrency and the
   longest chain of dependent calls in one game x latency, and the client's
   CPU milliseconds per call (targets: ratio >= 0.9 at 32, >= 0.8 at 128), with one
   client process and with the games spread over several (``--processes 1 2 3``;
   :mod:`scarce_lab.environments.sovsim.runner.processes`);
5. with ``--ceiling``: the same sweep against a 1 s server, where the client's CPU is
   small next to the latency: the ratio the sweep's structure allows (the ideal is a
   lower bound that dependent calls and uneven game lengths keep out of reach).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scarce_lab.data.loaders import load_dataset  # noqa: E402
from scarce_lab.environments.sovsim.runner.play import plan_sweep, run_sweep  # noqa: E402
from scarce_lab.environments.sovsim.runner.processes import run_sweep_processes  # noqa: E402
from scarce_lab.llm import LLMClient, LLMSettings  # noqa: E402
from tests.fake_server import FakeOpenAIServer  # noqa: E402


def scripted_games_per_second(n: int = 200) -> tuple[float, float]:
    from scarce_lab.environments.sovsim.agents.agent import make_agent
    from scarce_lab.environments.sovsim.world.commons import CommonsGame

    specs = plan_sweep(["all"], ["scripted/random"], n // 4, seed=1)
    # env only: the random scripted policy straight on the game
    t0 = time.perf_counter()
    for s in specs:
        game = CommonsGame(s.condition, s.config())
        agent = make_agent(s.model, None)
        while not game.over:
            acts = {}
            for a in game.acting_agents():
                obs = game.observe(a)
                d = asyncio.run(agent.adecide(obs, seed=hash((s.simulation, game.round, a)) & 0xFFFF))
                acts[a] = d.value
            game.act(acts)
    env_rate = len(specs) / (time.perf_counter() - t0)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_sweep(specs, Path(tmp), progress=False)
        rec_rate = len(specs) / (time.perf_counter() - t0)
    return env_rate, rec_rate


def longest_chain(run_dir: Path) -> int:
    """Longest chain of dependent model calls in one game of the sweep under ``run_dir``.

    Inside a game, the calls of one phase of a round (announce, extract, leader) run
    together, and the phases and rounds follow each other; a repair call follows its
    first attempt. So a game's chain is the sum, over its (round, phase) groups, of the
    most calls any one agent made in that group. The phase of a call comes from the
    decision event with the same run, round, agent and purpose.

    Raises:
        RuntimeError: a call has no matching decision event (the chain would be wrong).
    """
    import polars as pl

    ds = load_dataset(run_dir)
    calls = ds.llm_calls.select("run_id", "round", "agent", "purpose").collect()
    events = (
        ds.events.filter(pl.col("kind").is_in(["announcement", "extraction"]))
        .select("run_id", "round", "agent", "phase", pl.col("kind").alias("purpose"))
        .collect()
    )
    joined = calls.join(events, on=["run_id", "round", "agent", "purpose"], how="left")
    if joined["phase"].null_count():
        bad = joined.filter(pl.col("phase").is_null()).row(0, named=True)
        raise RuntimeError(f"call without a decision event, cannot place it in a phase: {bad}")
    per_group = joined.group_by("run_id", "round", "phase", "agent").len().group_by(
        "run_id", "round", "phase"
    ).agg(pl.col("len").max())
    per_game = per_group.group_by("run_id").agg(pl.col("len").sum())
    return int(per_game["len"].max())


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished child processes."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def fake_sweep(
    latency_s: float, concurrency: int, games: int = 20, model: str = "openai/fake-model", processes: int = 1
) -> dict:
    """One sweep of ``games`` SovSim games (all four conditions) against the fake server.

    ``ideal_s`` is the larger of calls x latency / concurrency and the longest chain of
    dependent calls in one game x latency; ``cpu_ms_per_call`` is the client's
    CPU time (this process's, all threads, plus the sweep's child processes with
    ``processes > 1``; the server runs in its own process and is not counted) over the
    sweep divided by the number of calls. ``processes > 1`` runs the sweep with
    :func:`scarce_lab.environments.sovsim.runner.processes.run_sweep_processes`.
    """
    os.environ.setdefault("OPENAI_API_KEY", "sk-fake-local-server")  # the fake server ignores it
    specs = plan_sweep(["all"], [model], max(1, games // 4), seed=7)
    with FakeOpenAIServer(latency_s=latency_s) as server, tempfile.TemporaryDirectory() as tmp:
        client = LLMClient(
            LLMSettings(api_base=server.url, cache=False, max_concurrency=concurrency, max_retries=0)
        )
        c0 = time.process_time() + _children_cpu_s()
        t0 = time.perf_counter()
        if processes > 1:
            results = run_sweep_processes(specs, Path(tmp), processes=processes, concurrency=concurrency,
                                          settings=client.settings, progress=False)
        else:
            results = run_sweep(specs, Path(tmp), client=client, concurrency=concurrency, progress=False)
        wall = time.perf_counter() - t0
        cpu = time.process_time() + _children_cpu_s() - c0
        frame = load_dataset(Path(tmp)).llm_calls.collect()
        calls = frame.height
        errors = int(frame["error"].is_not_null().sum())
        ok = sum(r.status == "complete" for r in results)
        stats = server.stats()
        chain = longest_chain(Path(tmp))
    if stats["requests"] != calls:
        raise RuntimeError(f"server saw {stats['requests']} requests but {calls} calls were recorded")
    ideal = max(calls * latency_s / concurrency, chain * latency_s)
    return {
        "processes": processes,
        "games": len(specs),
        "complete": ok,
        "calls": calls,
        "call_errors": errors,
        "longest_chain_calls": chain,
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio_ideal_over_actual": (ideal / wall) if latency_s > 0 else None,
        "peak_in_flight": stats["peak_in_flight"],
        "cpu_ms_per_call": 1000 * cpu / max(calls, 1),
        "call_latency_ms_median": 1000 * float(frame["latency_s"].median()),
        "call_latency_ms_p90": 1000 * float(frame["latency_s"].quantile(0.9)),
        "overhead_ms_per_call": 1000 * (wall - ideal) / max(calls, 1),
    }


def embedded_game() -> dict:
    from scarce_lab.llm.embedded import available

    if not available():
        return {"skipped": "embedded model not installed"}
    with tempfile.TemporaryDirectory() as tmp:
        client = LLMClient(LLMSettings(cache=False, max_concurrency=1, timeout_s=600))
        specs = plan_sweep(["cpr"], ["embedded/smollm2"], 1, seed=11)
        t0 = time.perf_counter()
        res = run_sweep(specs, Path(tmp), client=client, concurrency=1, progress=False)
        wall = time.perf_counter() - t0
        calls = load_dataset(Path(tmp)).llm_calls.collect()
    decisions = calls.filter(calls["attempt"] == 0).height
    return {
        "rounds_played": res[0].rounds_played,
        "seconds_per_game": wall,
        "model_calls": calls.height,
        "decisions": decisions,
        "seconds_per_decision": wall / max(decisions, 1),
        "mean_call_latency_s": float(calls["latency_s"].mean()),
        "prompt_tokens_per_call": float(calls["prompt_tokens"].mean()),
        "completion_tokens_per_call": float(calls["completion_tokens"].mean()),
        "repairs": int((calls["attempt"] == 1).sum()),
        "fallbacks": int(calls["fallback_used"].sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the embedded game")
    ap.add_argument("--json", action="store_true", help="print one JSON object at the end")
    ap.add_argument("--concurrency", type=int, nargs="+", default=None,
                    help="concurrency levels for the 200 ms sweep (default 8 32 128)")
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2],
                    help="client processes for the 200 ms sweep (default 1 2: one process, and "
                         "run_sweep_processes with two)")
    ap.add_argument("--games", type=int, default=20,
                    help="games per 200 ms sweep (default 20, the issue's; more games amortise the "
                         "child processes' start-up)")
    ap.add_argument("--ceiling", action="store_true",
                    help="also run the sweep against a 1 s server at concurrency 32 and 128: with the "
                         "client's CPU small next to the latency, its ratio is the ceiling that the "
                         "sweep's structure (dependent calls, uneven game lengths) allows")
    ap.add_argument("--only-sweep", action="store_true", help="run only the 200 ms sweep")
    args = ap.parse_args()
    out: dict = {}

    levels = args.concurrency or [8, 32, 128]
    if args.only_sweep:
        args.quick = True
        return _sweeps(levels, args.processes, args.games, out, args.json, args.ceiling)
    env_rate, rec_rate = scripted_games_per_second()
    out["scripted_games_per_s"] = {"env_only": env_rate, "with_recording": rec_rate}
    print(f"scripted games/s: env only {env_rate:.1f}, with recording {rec_rate:.1f}")

    zero = fake_sweep(0.0, 1)
    out["overhead_per_decision_ms"] = zero["overhead_ms_per_call"]
    print(f"our overhead per decision (0 ms server, conc 1): {zero['overhead_ms_per_call']:.1f} ms "
          f"({zero['calls']} calls, {zero['call_errors']} errors, in {zero['wall_s']:.1f} s)")

    if not args.quick:
        emb = embedded_game()
        out["embedded"] = emb
        if "skipped" in emb:
            print(f"embedded: {emb['skipped']}")
        else:
            print(
                f"embedded: {emb['seconds_per_decision']:.2f} s/decision, {emb['seconds_per_game']:.0f} s/game "
                f"({emb['rounds_played']} rounds, {emb['model_calls']} calls, {emb['repairs']} repairs), "
                f"tokens/call prompt {emb['prompt_tokens_per_call']:.0f} completion "
                f"{emb['completion_tokens_per_call']:.0f}"
            )

    _sweeps(levels, args.processes, args.games, out, args.json, args.ceiling)


def _sweeps(levels: list[int], processes: list[int], games: int, out: dict, as_json: bool, ceiling: bool) -> None:
    fake_sweep(0.0, 4, games=4)  # warm-up: imports and first-call set-up are not per-call costs
    out["sweep_200ms"] = {}
    for conc in levels:
        for procs in processes:
            r = fake_sweep(0.2, conc, games=games, processes=procs)
            out["sweep_200ms"][f"{conc}x{procs}"] = r
            print(
                f"sweep {r['games']} games, 200 ms server, concurrency {conc:>3}, {procs} process(es): "
                f"{r['calls']} calls in {r['wall_s']:.2f} s ({r['call_errors']} errors); ideal "
                f"{r['ideal_s']:.2f} s (longest chain {r['longest_chain_calls']} calls); ratio ideal/actual "
                f"{r['ratio_ideal_over_actual']:.2f}; CPU {r['cpu_ms_per_call']:.1f} ms/call; call latency "
                f"median {r['call_latency_ms_median']:.0f} ms, p90 {r['call_latency_ms_p90']:.0f} ms; "
                f"peak in flight {r['peak_in_flight']}",
                flush=True,
            )
    if ceiling:
        out["sweep_1s_ceiling"] = {}
        for conc in (32, 128):
            r = fake_sweep(1.0, conc, games=games)
            out["sweep_1s_ceiling"][conc] = r
            print(f"ceiling (1 s server, concurrency {conc:>3}, 1 process): {r['calls']} calls in "
                  f"{r['wall_s']:.2f} s; ideal {r['ideal_s']:.2f} s; ratio ideal/actual "
                  f"{r['ratio_ideal_over_actual']:.2f}", flush=True)
    if as_json:
        print(json.dumps(out, indent=2, default=float))


if __name__ == "__main__":
    main()
