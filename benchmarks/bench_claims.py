"""What checking a server's claims costs, and the answer parser's growth: prints its
figures. Not a test: timings are noisy.

    .venv/bin/python benchmarks/bench_claims.py

Figures (all measured in this run):
1. per call: the usage check (``check_usage``) and the prompt count a priced call needs
   (``counted_prompt``), in microseconds and as a share of a whole priced call through
   the client against an instant fake (``litellm.acompletion`` replaced);
2. the parser on adversarial answers: seconds at 200 KB and 2 MB and their ratio (10 is
   linear; a quadratic parser gives 100; times under 1 ms count as 1 ms), next to
   ``json.loads`` of a valid 2 MB document.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel  # noqa: E402

from scarce_lab.llm import LLMClient, LLMSettings  # noqa: E402
from scarce_lab.llm.costs import check_usage, counted_prompt  # noqa: E402
from scarce_lab.llm.parsing import parse_answer  # noqa: E402


class N(BaseModel):
    n: int


def per_call(n: int = 300) -> None:
    msgs = [{"role": "system", "content": "You fish in a shared lake. " * 40},
            {"role": "user", "content": "Round 7: the lake holds 64 tons. How much do you take? " * 10}]
    answer = {"model": "priced", "usage": {"prompt_tokens": 420, "completion_tokens": 12},
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"n": 4}'}}]}
    t0 = time.perf_counter()
    for _ in range(n):
        check_usage(answer["usage"], max_tokens=64, counted=(400, 30))
    check_us = (time.perf_counter() - t0) / n * 1e6
    counted_prompt("openai/priced", msgs)  # imports litellm and its tokenizer once
    t0 = time.perf_counter()
    for _ in range(n):
        counted_prompt("openai/priced", msgs, [{"type": "json_schema"}])
    count_us = (time.perf_counter() - t0) / n * 1e6
    from scarce_lab.llm.client import load_litellm

    lit = load_litellm()

    async def fake(**kw):
        return answer

    lit.acompletion = fake
    c = LLMClient(LLMSettings(cache=False, max_retries=0, prices={"openai/priced": {"input_per_mtok": 2.5,
                                                                                   "output_per_mtok": 10}}))

    async def go():
        for i in range(n):
            await c.adecide(model="openai/priced", messages=msgs, schema=N, fallback=N(n=0), seed=i, max_tokens=64)

    t0 = time.perf_counter()
    asyncio.run(go())
    call_us = (time.perf_counter() - t0) / n * 1e6
    print(f"per priced call: {call_us:.0f} us in the client; usage check {check_us:.1f} us "
          f"({check_us / call_us:.1%}), prompt count {count_us:.0f} us ({count_us / call_us:.1%})")


def parser() -> None:
    shapes = {
        "unclosed braces": lambda n: "{" * n + "}",  # the closing brace makes the scan run
        "unclosed strings": lambda n: '{"k": "' * (n // 7) + '}',
        "unclosed <think>": lambda n: "x <think> {" * (n // 11) + "}",
        "lone </reasoning>": lambda n: "</reasoning>{}" * (n // 14),
        "many objects": lambda n: '{"n": 1} ' * (n // 9),
    }
    doc = json.dumps({"k": ["x" * 20] * (2_000_000 // 24)})
    t0 = time.perf_counter()
    json.loads(doc)
    ref = time.perf_counter() - t0
    print(f"json.loads of a valid {len(doc) / 1e6:.1f} MB document: {ref:.3f} s (reference)")
    for name, make in shapes.items():
        ts = []
        for size in (200_000, 2_000_000):
            text = make(size)
            t0 = time.perf_counter()
            parse_answer(text, N)
            ts.append(time.perf_counter() - t0)
        print(f"{name:18s} 200 KB {ts[0]:.3f} s  2 MB {ts[1]:.3f} s  ratio {ts[1] / max(ts[0], 1e-3):.1f}  "
              f"2 MB / json.loads {ts[1] / ref:.1f}x")


if __name__ == "__main__":
    per_call()
    parser()
