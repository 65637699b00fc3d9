"""SovSim benchmark: prints its figures (issue 2, section 10). Not a test: timings are noisy.

    .venv/bin/python benchmarks/bench_sovsim.py            # everything (~6 min on 2 cores)
    .venv/bin/python benchmarks/bench_sovsim.py --quick    # skip the embedded game and conc. 1

Figures:
1. scripted games per second (env only, and with recording to disk);
2. our overhead per decision (client + agent + recorder, against a 0 ms fake server);
3. embedded model: seconds per decision and per game, tokens per decision (one CPR game);
4. sweep throughput, 20 games over all conditions, against a local OpenAI-compatible
   fake server answering after 200 ms, at concurrency 1, 8 and 32, as the ratio
   ideal/actual where ideal = calls x latency / concurrency.
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
from scarce_lab.llm import LLMClient, LLMSettings  # noqa: E402
from scarce_lab.llm.fake_server import FakeOpenAIServer  # noqa: E402
from scarce_lab.runners.sovsim import plan_sweep, run_sweep  # noqa: E402


def scripted_games_per_second(n: int = 200) -> tuple[float, float]:
    from scarce_lab.agents.sovsim import make_agent
    from scarce_lab.envs.commons import CommonsGame

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


def fake_sweep(latency_s: float, concurrency: int, games: int = 20) -> dict:
    os.environ.setdefault("OPENAI_API_KEY", "sk-fake-local-server")  # the fake server ignores it
    specs = plan_sweep(["all"], ["openai/fake-model"], max(1, games // 4), seed=7)
    with FakeOpenAIServer(latency_s=latency_s) as server, tempfile.TemporaryDirectory() as tmp:
        client = LLMClient(
            LLMSettings(api_base=server.url, cache=False, max_concurrency=concurrency, max_retries=0)
        )
        t0 = time.perf_counter()
        results = run_sweep(specs, Path(tmp), client=client, concurrency=concurrency, progress=False)
        wall = time.perf_counter() - t0
        frame = load_dataset(Path(tmp)).llm_calls.collect()
        calls = frame.height
        errors = int(frame["error"].is_not_null().sum())
        ok = sum(r.status == "complete" for r in results)
        peak = server.stats()["peak_in_flight"]
    ideal = calls * latency_s / concurrency
    return {
        "games": len(specs),
        "complete": ok,
        "calls": calls,
        "call_errors": errors,
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio_ideal_over_actual": (ideal / wall) if latency_s > 0 else None,
        "peak_in_flight": peak,
        "overhead_ms_per_call": 1000 * (wall - calls * latency_s / concurrency) / max(calls, 1),
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
    ap.add_argument("--quick", action="store_true", help="skip the embedded game and concurrency 1")
    ap.add_argument("--json", action="store_true", help="print one JSON object at the end")
    ap.add_argument("--concurrency", type=int, nargs="+", default=None,
                    help="concurrency levels for the 200 ms sweep (default 1 8 32; --quick: 8 32)")
    ap.add_argument("--only-sweep", action="store_true", help="run only the 200 ms sweep")
    args = ap.parse_args()
    out: dict = {}

    levels = args.concurrency or ([8, 32] if args.quick else [1, 8, 32])
    if args.only_sweep:
        args.quick = True
        return _sweeps(levels, out, args.json)
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

    _sweeps(levels, out, args.json)


def _sweeps(levels: list[int], out: dict, as_json: bool) -> None:
    out["sweep_200ms"] = {}
    for conc in levels:
        r = fake_sweep(0.2, conc)
        out["sweep_200ms"][conc] = r
        print(
            f"sweep {r['games']} games, 200 ms server, concurrency {conc:>2}: {r['calls']} calls in "
            f"{r['wall_s']:.1f} s ({r['call_errors']} errors); ideal {r['ideal_s']:.1f} s; ratio ideal/actual "
            f"{r['ratio_ideal_over_actual']:.2f}; peak in flight {r['peak_in_flight']}"
        )
    if as_json:
        print(json.dumps(out, indent=2, default=float))


if __name__ == "__main__":
    main()
