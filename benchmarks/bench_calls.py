"""Model calls: client CPU per call and calls/s under concurrency, against references
measured in the same run (docs/benchmarks.md).

    .venv/bin/python benchmarks/bench_calls.py               # ~1 to 3 min on 2 cores
    .venv/bin/python benchmarks/bench_calls.py --no-inspect  # skip Inspect AI
    .venv/bin/python benchmarks/bench_calls.py --profile /tmp/calls.prof  # + a profile of ours

Every figure comes from a local OpenAI-compatible fake server (tests/fake_server.py) in
its own process, so the client's CPU is this process's CPU:

1. **client CPU per call** (sequential, latency 0, a ``json_schema`` decision):
   ``LLMClient.adecide`` (ours: request, parse, validate, record) against the openai SDK
   (``AsyncOpenAI.chat.completions.create``), raw httpx (``post`` + ``json()``) and
   litellm alone (``litellm.acompletion``); goal: ours <= 1.5x the openai SDK;
2. **calls/s at c = 8 / 32 / 128** against a 200 ms server: ours (``max_concurrency=c``)
   against ideal = c / latency (goal >= 0.7 of ideal at c = 32), against the best any
   client achieves on this machine (bare aiohttp POSTs, :func:`raw_calls_per_s`, run
   alternately with ours over ``--rounds``; medians, every round printed) and against Inspect AI
   (``inspect_ai.model.get_model(...).generate`` with ``max_connections=c``), run in its
   own virtualenv made by this script under /tmp (goal >= 1.5x Inspect at c >= 32).
   When Inspect AI cannot be installed the rows say so.

:func:`main` returns the rows (what, ours, reference, ratio, goal, met) and prints them,
so a command gathering every benchmark of the issue can import it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

# SCARCE_BENCH_ROOT: the tree whose scarce_lab is measured (a child of --baseline-rev)
ROOT = Path(os.environ.get("SCARCE_BENCH_ROOT") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-local")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from pydantic import BaseModel  # noqa: E402

LATENCY_S = 0.2
INSPECT_VENV = Path("/tmp/scarce_inspect_venv")
INSPECT_PIN = "inspect_ai"


class Choice(BaseModel):
    """The decision every benchmark call asks for (json_schema form)."""

    action: Literal["harvest", "rest", "trade"]
    amount: int
    note: str


MESSAGES = [
    {"role": "system", "content": "You manage a fishery with four other agents. Answer in JSON."},
    {"role": "user", "content": "The lake holds 83 tonnes. How much do you harvest this month?"},
]
FALLBACK = Choice(action="rest", amount=0, note="")
_CLOSE: list = []  # the reference clients' close coroutines, awaited at the end of their loop


def _rf() -> dict[str, Any]:
    from scarce_lab.llm.structured import request_for

    return request_for("json_schema", "Choice", Choice.model_json_schema())["response_format"]


# -- CPU per call ------------------------------------------------------------------------
def _ours(url: str, concurrency: int = 8):
    from scarce_lab.llm import LLMClient, LLMSettings
    from scarce_lab.llm.ratelimit import RateLimiter

    client = LLMClient(LLMSettings(api_base=url, cache=False, max_concurrency=concurrency),
                       rate_limiter=RateLimiter())

    async def one(i: int):
        out = await client.adecide(model="openai/fake", messages=MESSAGES, schema=Choice, fallback=FALLBACK,
                                   seed=i)
        assert out.valid, out.calls[-1].error
        return out

    return one


def _sdk(url: str, concurrency: int = 8):
    import httpx
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="sk-fake", max_retries=0, http_client=httpx.AsyncClient(
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)))
    rf = _rf()
    _CLOSE.append(client.close)

    async def one(i: int):
        r = await client.chat.completions.create(model="fake", messages=MESSAGES, response_format=rf, seed=i,
                                                 temperature=0.0, max_tokens=256)
        return Choice.model_validate_json(r.choices[0].message.content)

    return one


def _httpx(url: str, concurrency: int = 8):
    import httpx

    client = httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency))
    rf = _rf()
    _CLOSE.append(client.aclose)

    async def one(i: int):
        body = {"model": "fake", "messages": MESSAGES, "response_format": rf, "seed": i, "temperature": 0.0,
                "max_tokens": 256}
        r = await client.post(f"{url}/chat/completions", json=body, headers={"Authorization": "Bearer sk-fake"})
        return Choice.model_validate_json(r.json()["choices"][0]["message"]["content"])

    return one


def _litellm(url: str, concurrency: int = 8):
    from scarce_lab.llm.transport import load_litellm

    litellm = load_litellm()
    rf = _rf()

    async def one(i: int):
        r = await litellm.acompletion(model="openai/fake", api_base=url, messages=MESSAGES, response_format=rf,
                                      seed=i, temperature=0.0, max_tokens=256, max_retries=0)
        return Choice.model_validate_json(r.choices[0].message.content)

    return one


CALLERS = {"ours": _ours, "openai SDK": _sdk, "raw httpx": _httpx, "litellm alone": _litellm}


def cpu_per_call(url: str, n: int = 200, blocks: int = 3, profile: str | None = None) -> dict[str, float]:
    """Median over ``blocks`` of this process's CPU seconds per sequential call, for each
    caller (interleaved block by block so a busy machine slows all alike)."""
    async def run() -> dict[str, float]:
        ones = {name: make(url) for name, make in CALLERS.items()}
        for one in ones.values():  # warm-up: imports, connections, first-call set-up
            for i in range(10):
                await one(i)
        per: dict[str, list[float]] = {name: [] for name in ones}
        for b in range(blocks):
            for name, one in ones.items():
                c0 = time.process_time()
                for i in range(n):
                    await one(b * n + i)
                per[name].append((time.process_time() - c0) / n)
        if profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
            for i in range(n):
                await ones["ours"](10_000 + i)
            prof.disable()
            prof.dump_stats(profile)
        while _CLOSE:
            await _CLOSE.pop()()
        return {name: sorted(v)[len(v) // 2] for name, v in per.items()}

    return asyncio.run(run())


# -- throughput --------------------------------------------------------------------------
def calls_per_s(url: str, c: int, waves: int = 6) -> float:
    """Ours: ``c * waves`` decisions, ``c`` at a time (``max_concurrency=c``), after a warm-up wave."""
    async def run() -> float:
        one = _ours(url, concurrency=c)
        await asyncio.gather(*(one(i) for i in range(c)))
        t0 = time.perf_counter()
        await asyncio.gather(*(one(c + i) for i in range(c * waves)))
        return c * waves / (time.perf_counter() - t0)

    return asyncio.run(run())


def raw_calls_per_s(url: str, c: int, waves: int = 6) -> float:
    """The best any client achieves here: the same ``c * waves`` requests, ``c`` at a
    time, as bare aiohttp POSTs (one session, no records, no checks; the answer parsed
    and validated), after a warm-up wave. On 2 cores shared with the fake server this,
    not ``c / latency``, is the ceiling a client can be judged against."""
    import aiohttp

    body = {"model": "fake", "messages": MESSAGES, "response_format": _rf(), "temperature": 0.0, "max_tokens": 256}

    async def run() -> float:
        sem = asyncio.Semaphore(c)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c)) as session:
            async def one(i: int):
                async with sem, session.post(f"{url}/chat/completions", json={**body, "seed": i},
                                             headers={"Authorization": "Bearer sk-fake"}) as r:
                    answer = await r.json()
                return Choice.model_validate_json(answer["choices"][0]["message"]["content"])

            await asyncio.gather(*(one(i) for i in range(c)))
            t0 = time.perf_counter()
            await asyncio.gather(*(one(c + i) for i in range(c * waves)))
            return c * waves / (time.perf_counter() - t0)

    return asyncio.run(run())


_INSPECT_SCRIPT = r"""
import asyncio, json, sys, time
from inspect_ai.model import get_model, GenerateConfig, ChatMessageSystem, ChatMessageUser, ResponseSchema
url, cs, waves, schema = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
from inspect_ai.util import JSONSchema
out = {}
for c in cs:
    async def run():
        model = get_model("openai/fake", base_url=url, api_key="sk-fake", responses_api=False,
                          config=GenerateConfig(max_connections=c, max_retries=0))
        rs = ResponseSchema(name="Choice", json_schema=JSONSchema.model_validate(schema))
        async def one(i):
            msgs = [ChatMessageSystem(content="You manage a fishery with four other agents. Answer in JSON."),
                    ChatMessageUser(content=f"The lake holds {i} tonnes. How much do you harvest this month?")]
            r = await model.generate(msgs, config=GenerateConfig(seed=i, temperature=0.0, max_tokens=256, max_connections=c,
                                                                 response_schema=rs))
            return r.completion
        await asyncio.gather(*(one(i) for i in range(c)))
        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(c + i) for i in range(c * waves)))
        print(f"CPU {c} {(time.process_time() - c0) / (c * waves) * 1000:.2f}", file=sys.stderr)
        return c * waves / (time.perf_counter() - t0)
    out[c] = asyncio.run(run())
print("RESULT " + json.dumps(out))
"""


def inspect_calls_per_s(url: str, cs: list[int], waves: int = 6) -> dict[int, float] | str:
    """Inspect AI's calls/s per concurrency in its own virtualenv (made under /tmp on the
    first run), or a sentence saying why it was skipped."""
    py = INSPECT_VENV / "bin" / "python"
    if not py.exists() or subprocess.run([str(py), "-c", "import inspect_ai, openai"],
                                         capture_output=True).returncode != 0:
        print(f"installing Inspect AI into {INSPECT_VENV} (once)...", flush=True)
        try:
            subprocess.run([sys.executable, "-m", "venv", str(INSPECT_VENV)], check=True, capture_output=True)
            subprocess.run([str(py), "-m", "pip", "install", "-q", INSPECT_PIN, "openai"], check=True,
                           capture_output=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as exc:
            err = getattr(exc, "stderr", b"") or b""
            return f"Inspect AI could not be installed ({type(exc).__name__}: {err.decode()[-300:].strip()})"
    env = {**os.environ, "INSPECT_LOG_DIR": "/tmp/scarce_lab_bench_inspect_logs"}
    proc = subprocess.run([str(py), "-c", _INSPECT_SCRIPT, url, json.dumps(cs), str(waves),
                           json.dumps(Choice.model_json_schema())], capture_output=True, text=True, env=env,
                          timeout=900)
    for x in proc.stderr.splitlines():
        if x.startswith("CPU "):
            print(f"Inspect AI: c={x.split()[1]}: {x.split()[2]} ms of client CPU per call")
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return f"Inspect AI run failed: {(proc.stderr or proc.stdout)[-400:].strip()}"
    return {int(k): v for k, v in json.loads(line[7:]).items()}


# -- the table ---------------------------------------------------------------------------
def _row(what: str, ours: float | None, ref: float | None, ref_name: str, goal: str, ok: bool | None,
         unit: str) -> dict[str, Any]:
    ratio = None if ours is None or not ref else ours / ref
    return {"what": what, "ours": ours, "reference": ref, "reference_name": ref_name, "unit": unit,
            "ratio": ratio, "goal": goal, "met": ok}


def print_rows(rows: list[dict[str, Any]]) -> None:
    """Print rows as a fixed-width table (one line per row; a skipped reference says why)."""
    print(f"{'what':<44} {'ours':>10} {'reference':>24} {'ratio':>7}  {'goal':<22} met?")
    for r in rows:
        ours = "-" if r["ours"] is None else f"{r['ours']:.2f} {r['unit']}"
        ref = r["reference_name"] if r["reference"] is None else f"{r['reference_name']} {r['reference']:.2f}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        met = {True: "yes", False: "NO", None: "skip"}[r["met"]]
        print(f"{r['what']:<44} {ours:>10} {ref:>24} {ratio:>7}  {r['goal']:<22} {met}")


def baseline_rows(rev: str, c: int = 32, waves: int = 6, rounds: int = 3) -> list[dict[str, Any]]:
    """Calls/s at concurrency ``c`` (200 ms server) of the package at git revision ``rev``
    and of this tree, each in a child process, interleaved over ``rounds`` (medians): what
    the whole change since ``rev`` did to throughput (the bounds on server claims must cost
    nothing visible; the faster call path is in it too)."""
    import statistics
    import tempfile

    from tests.fake_server import FakeOpenAIServer

    here = Path(__file__).resolve().parents[1]
    tree = Path(tempfile.mkdtemp(prefix="bench_calls_base_"))
    subprocess.run(f"git -C {here} archive {rev} | tar -x -C {tree}", shell=True, check=True)
    got: dict[str, list[float]] = {"before": [], "after": []}
    try:
        with FakeOpenAIServer(latency_s=LATENCY_S) as slow:
            for k in range(rounds):
                for which in (("before", "after") if k % 2 == 0 else ("after", "before")):
                    env = {**os.environ, "SCARCE_BENCH_ROOT": str(tree if which == "before" else here)}
                    out = subprocess.run([sys.executable, __file__, "--child-calls-per-s", slow.url, str(c), str(waves)],
                                         capture_output=True, text=True, env=env, cwd=env["SCARCE_BENCH_ROOT"])
                    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
                    if line is None:
                        raise RuntimeError(f"{which}: child failed: {out.stderr[-1500:]}")
                    got[which].append(float(line.split()[1]))
    finally:
        import shutil

        shutil.rmtree(tree, ignore_errors=True)
    b, a = statistics.median(got["before"]), statistics.median(got["after"])
    return [_row(f"calls/s, c={c}: this tree vs {rev} (same run)", a, b, rev, ">= 1x (bounds cost nothing)", a >= 0.95 * b,
                 "/s")]


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark, print its table and return its rows (dicts with ``what``,
    ``ours``, ``reference``, ``reference_name``, ``unit``, ``ratio``, ``goal``, ``met``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="sequential calls per CPU block")
    ap.add_argument("--waves", type=int, default=6, help="waves of c calls per throughput run")
    ap.add_argument("--rounds", type=int, default=3, help="throughput rounds (ours and bare aiohttp alternately; medians)")
    ap.add_argument("--no-inspect", action="store_true", help="skip the Inspect AI comparison")
    ap.add_argument("--profile", default=None, help="write a cProfile of ours' sequential calls here")
    ap.add_argument("--baseline-rev", default="", help="also calls/s at c=32 of the package at this git revision")
    ap.add_argument("--child-calls-per-s", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child_calls_per_s:
        url, c, waves = a.child_calls_per_s
        print(f"RESULT {calls_per_s(url, int(c), int(waves))}")
        return []
    from tests.fake_server import FakeOpenAIServer

    rows = []
    with FakeOpenAIServer(latency_s=0.0) as fast:
        cpu = cpu_per_call(fast.url, n=a.calls, profile=a.profile)
    ms = {k: v * 1000 for k, v in cpu.items()}
    for ref in ("openai SDK", "raw httpx", "litellm alone"):
        goal_ok = ms["ours"] <= 1.5 * ms[ref] if ref == "openai SDK" else None
        rows.append(_row("client CPU per call (sequential, json_schema)", ms["ours"], ms[ref], ref,
                         "<= 1.5x" if ref == "openai SDK" else "(context)", goal_ok, "ms"))
    cs = [8, 32, 128]
    import statistics

    got: dict[str, dict[int, list[float]]] = {"ours": {c: [] for c in cs}, "raw": {c: [] for c in cs}}
    with FakeOpenAIServer(latency_s=LATENCY_S) as slow:
        for k in range(a.rounds):  # ours and the bare client alternately, so load hits both alike
            for c in cs:
                for which in (("ours", "raw") if k % 2 == 0 else ("raw", "ours")):
                    f = calls_per_s if which == "ours" else raw_calls_per_s
                    got[which][c].append(f(slow.url, c, a.waves))
        insp = "skipped (--no-inspect)" if a.no_inspect else inspect_calls_per_s(slow.url, cs, a.waves)
    ours = {c: statistics.median(v) for c, v in got["ours"].items()}
    raw = {c: statistics.median(v) for c, v in got["raw"].items()}
    for c in cs:
        ideal = c / LATENCY_S
        spread = "; ".join(f"{w} " + ", ".join(f"{x:.0f}" for x in got[w][c]) for w in ("ours", "raw"))
        print(f"c={c}: rounds (calls/s): {spread}")
        rows.append(_row(f"calls/s, c={c}, {LATENCY_S * 1000:.0f} ms server", ours[c], ideal, "ideal",
                         ">= 0.7 of ideal" if c == 32 else "(context)",
                         ours[c] >= 0.7 * ideal if c == 32 else None, "/s"))
        rows.append(_row(f"calls/s, c={c} vs best achievable here", ours[c], raw[c], "bare aiohttp",
                         "(the machine's ceiling)", None, "/s"))
        if isinstance(insp, str):
            rows.append(_row(f"calls/s, c={c} vs Inspect AI", ours[c], None, insp[:60], ">= 1.5x", None, "/s"))
        else:
            rows.append(_row(f"calls/s, c={c} vs Inspect AI", ours[c], insp[c], "Inspect AI",
                             ">= 1.5x" if c >= 32 else "(context)",
                             ours[c] >= 1.5 * insp[c] if c >= 32 else None, "/s"))
    if a.baseline_rev:
        rows += baseline_rows(a.baseline_rev, waves=a.waves)
    print_rows(rows)
    if isinstance(insp, str):
        print(f"Inspect AI: {insp}")
    return rows


if __name__ == "__main__":
    main()
