"""Dollar caps that hold, with a priced model on the fake server."""

from __future__ import annotations

import json
import multiprocessing as mp

import pytest

from scarce_lab.config import SovSimConfig
from scarce_lab.data.recorder import read_manifest
from scarce_lab.environments.sovsim.runner.play import run_sweep
from scarce_lab.llm.costs import SpendLedger, is_local_endpoint, price_of
from tests.fake_server import FakeOpenAIServer

PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}  # $0.001 per token


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def _cfg(srv, tmp_path, **llm):
    return SovSimConfig(condition="cpr", model="openai/priced", game={"rounds": 3},
                        llm={"api_base": srv.url, "prices": {"openai/priced": PRICE},
                             "spend_ledger": str(tmp_path / "spend.sqlite"), "cache": False, **llm})


def _calls(run):
    return [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]


def test_the_call_that_would_pass_the_cap_is_not_sent_and_the_run_resumes(tmp_path):
    with FakeOpenAIServer(latency_s=0.0) as srv:
        cfg = _cfg(srv, tmp_path, max_cost_usd=2.0)
        (res,) = run_sweep([cfg], tmp_path / "out", progress=False)
        run = tmp_path / "out" / cfg.run_id
        man = read_manifest(run)
        assert res.status == "failed" and man.status == "failed"
        assert "cost cap" in man.error and "resumed" in man.error
        calls = _calls(run)
        sent = [c for c in calls if c["outcome"] != "cost_cap"]
        capped = [c for c in calls if c["outcome"] == "cost_cap"]
        assert capped and all(c["missing"] or c["outcome"] == "cost_cap" for c in capped)
        # the server got exactly the calls that were sent, no more
        assert len(srv.stats()["bodies"]) == len(sent)
        # priced at llm.prices: the accepted prompt + completion tokens at $0.001 each
        assert all(c["usage_problem"] is None and c["served_model"] == "priced" for c in sent)
        assert all(c["cost_usd"] == pytest.approx((c["prompt_tokens"] + c["completion_tokens"]) / 1000)
                   for c in sent)
        assert sum(c["cost_usd"] for c in sent) <= 2.0
        # resumable: a larger cap continues the run from its last round
        (res2,) = run_sweep([_cfg(srv, tmp_path, max_cost_usd=100.0)], tmp_path / "out", resume=True,
                            progress=False)
        assert res2.status == "complete"


def test_a_capped_model_without_a_price_is_refused_at_start():
    with pytest.raises(ValueError, match="has no known price"):
        SovSimConfig(model="openai/no-such-model-xyz", llm={"max_cost_usd": 1.0})
    with pytest.raises(ValueError, match="has no known price"):  # a remote server under a known name
        SovSimConfig(model="openai/gpt-4o-mini", llm={"max_cost_usd": 1.0, "api_base": "https://example.com/v1"})
    SovSimConfig(model="openai/no-such-model-xyz", llm={"max_cost_usd": 1.0, "prices": {"openai/no-such-model-xyz": PRICE}})
    SovSimConfig(model="openai/x", llm={"max_cost_usd": 1.0, "api_base": "http://127.0.0.1:8011/v1"})  # local: free
    SovSimConfig(model="openai/gpt-4o-mini", llm={"max_cost_usd": 1.0})  # litellm prices it


def test_prices():
    assert price_of("openai/x", "http://127.0.0.1:9/v1") == (0.0, 0.0)
    assert price_of("openai/gpt-4o-mini", "http://10.0.0.5:8000/v1") == (0.0, 0.0)
    assert price_of("openai/gpt-4o-mini", "https://api.example.com/v1") is None
    assert price_of("openai/x", "https://api.example.com/v1", {"openai/x": PRICE}) == (0.001, 0.001)
    i, o = price_of("openai/gpt-4o-mini", None)
    assert 0 < i < o
    assert is_local_endpoint("localhost:8000") and not is_local_endpoint("https://api.openai.com/v1")


def _reserve_many(path, n, out):
    led = SpendLedger(path)
    got = 0
    for _ in range(n):
        rid, _why = led.reserve({"sweep": 5.0}, 0.1)
        if rid is not None:
            got += 1
            led.settle(rid, 0.1)
    out.put(got)


@pytest.mark.slow
def test_the_sweep_ledger_holds_across_processes(tmp_path):
    path = tmp_path / "ledger.sqlite"
    SpendLedger(path)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_reserve_many, args=(path, 20, q)) for _ in range(4)]
    for p in procs:
        p.start()
    granted = sum(q.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(60)
    assert granted == 50  # 80 asked, 5.0 / 0.1 fit
    assert SpendLedger(path).spent("sweep") == pytest.approx(5.0)


@pytest.mark.slow
def test_the_cli_sweep_cap_stops_starting_runs(tmp_path):
    from typer.testing import CliRunner

    from scarce_lab.cli import app

    with FakeOpenAIServer(latency_s=0.0) as srv:
        args = ["run", "sovsim", "-m", "openai/priced", "--api-base", srv.url, "-c", "cpr", "-n", "6", "-k", "1",
                "--no-progress", "-o", str(tmp_path / "out"), "--max-cost-usd", "1.5", "-S", "game.rounds=2",
                "-S", "llm.cache=false", "-S", 'llm.prices={"openai/priced": {"input_per_mtok": 1000, '
                '"output_per_mtok": 1000}}']
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 1, r.output
        assert "cost cap" in r.output
        # 4 games in flight (4 x --concurrency) spend the cap; the later ones never start
        assert "not_started" in r.output and "run not started" in r.output
        started = [p for p in (tmp_path / "out").iterdir() if (p / "manifest.json").exists()]
        assert 1 <= len(started) < 6
        spent = SpendLedger(tmp_path / "out" / ".spend.sqlite").spent("sweep")
        assert spent <= 1.5
        recorded = [json.loads(x) for p in started for x in (p / "llm_calls.jsonl").read_text().splitlines()]
        assert len(srv.stats()["bodies"]) == len([c for c in recorded if c["outcome"] != "cost_cap"])
        assert sum(c["cost_usd"] or 0 for c in recorded) == pytest.approx(spent)
        # resumed with a larger cap, every game runs to the end
        args[args.index("1.5")] = "100"
        r = CliRunner().invoke(app, [*args, "--resume"])
        assert r.exit_code == 0, r.output
        assert "complete 6" in r.output


def test_a_known_model_name_at_a_local_server_is_not_priced_as_that_model(tmp_path):
    import asyncio

    from scarce_lab.llm import LLMClient, LLMSettings

    with FakeOpenAIServer(latency_s=0.0) as srv:
        c = LLMClient(LLMSettings(api_base=srv.url, cache=False, max_retries=0))
        res = asyncio.run(c.acomplete("openai/gpt-4o-mini", [{"role": "user", "content": "q"}], seed=1))
        assert res.record.outcome == "ok" and res.record.cost_usd == 0.0  # a local endpoint is free
        priced = LLMClient(LLMSettings(api_base=srv.url, cache=False, prices={"openai/gpt-4o-mini": PRICE}))
        res = asyncio.run(priced.acomplete("openai/gpt-4o-mini", [{"role": "user", "content": "q"}], seed=1))
        rec = res.record  # the accepted tokens at llm.prices
        assert rec.cost_usd == pytest.approx((rec.prompt_tokens + rec.completion_tokens) / 1000)
