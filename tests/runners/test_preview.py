"""Know before you spend (--dry-run, sl.run(dry_run=True), --check)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scarce_lab.cli import app
from scarce_lab.config import SovSimConfig
from scarce_lab.environments.sovsim.runner.play import run_sweep
from scarce_lab.runners.preview import format_preview, preview
from tests.fake_server import FakeOpenAIServer

PRICES = {"openai/priced": {"input_per_mtok": 1000.0, "output_per_mtok": 2000.0}}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def test_preview_matches_the_calls_a_run_makes(tmp_path):
    with FakeOpenAIServer(latency_s=0.0) as srv:
        cfgs = [SovSimConfig(condition=c, model="openai/priced", game={"rounds": 2}, seed=3,
                             llm={"api_base": srv.url, "prices": PRICES, "cache": False}) for c in ("cpr", "kcpr")]
        p = preview("sovsim", cfgs)
        assert len(srv.stats()["bodies"]) == 0  # nothing sent
        plan = p.models["openai/priced"]
        # cpr: 4 agents x 2 rounds; kcpr: 3 subordinates + the king's decision, x 2 rounds
        assert (plan.calls_low, plan.calls_high) == (16, 32)
        assert plan.max_tokens == 110 and plan.prompt_tokens and 100 < plan.prompt_tokens < 2000
        low, high = plan.cost_range
        assert low == pytest.approx(16 * plan.prompt_tokens * 0.001)
        assert high == pytest.approx(32 * (plan.prompt_tokens * 0.001 + 110 * 0.002))
        text = format_preview(p)
        assert "2 sovsim run(s)" in text and "16-32 calls" in text and f"{plan.prompt_tokens} prompt tokens" in text
        res = run_sweep(cfgs, tmp_path / "out", progress=False)
        assert {r.status for r in res} == {"complete"}
        made = sum(len((tmp_path / "out" / c.run_id / "llm_calls.jsonl").read_text().splitlines()) for c in cfgs)
        assert plan.calls_low <= made <= plan.calls_high and made == 16  # the fake server's answers all validate
        first = json.loads((tmp_path / "out" / cfgs[0].run_id / "llm_calls.jsonl").read_text().splitlines()[0])
        assert first["params"]["max_tokens"] == plan.max_tokens


def test_cli_dry_run_sends_nothing_and_writes_nothing(tmp_path):
    with FakeOpenAIServer(latency_s=0.0) as srv:
        r = CliRunner().invoke(app, [
            "run", "sovsim", "-m", "openai/priced", "--api-base", srv.url, "-c", "cpr", "-n", "2", "--no-progress",
            "-o", str(tmp_path / "out"), "-S", "game.rounds=3", "--dry-run", "-S",
            'llm.prices={"openai/priced": {"input_per_mtok": 1000, "output_per_mtok": 2000}}'])
        assert r.exit_code == 0, r.output
        assert "dry run: 2 sovsim run(s), nothing sent" in r.output and "24-48 calls" in r.output
        assert "$" in r.output
        assert len(srv.stats()["bodies"]) == 0
    assert not any((tmp_path / "out").glob("*/manifest.json"))


def test_cli_check_reports_key_endpoint_and_mode(tmp_path):
    with FakeOpenAIServer(latency_s=0.0, refuse=("json_schema",)) as srv:
        r = CliRunner().invoke(app, ["run", "sovsim", "-m", "openai/checked", "--api-base", srv.url, "-c", "cpr",
                                     "-n", "1", "--no-progress", "-o", str(tmp_path / "out"), "--check"])
        assert r.exit_code == 0, r.output
        assert f"ok: openai/checked at {srv.url}" in r.output
        assert "structured output: json_object" in r.output and "refused: json_schema" in r.output
    r = CliRunner().invoke(app, ["run", "sovsim", "-m", "openai/checked", "--api-base", "http://127.0.0.1:9/v1",
                                 "-c", "cpr", "-n", "1", "--no-progress", "-o", str(tmp_path / "o2"), "--check"])
    assert r.exit_code == 1 and "FAILED: openai/checked" in r.output


def test_sl_run_dry_run(tmp_path):
    import scarce_lab as sl

    p = sl.run(SovSimConfig(condition="cpr", model="scripted/greedy", game={"rounds": 2}), out=tmp_path,
               dry_run=True)
    assert p.environment == "sovsim" and p.models == {} and len(p.runs) == 1
    assert not any(tmp_path.iterdir())


def test_calls_per_unit_of_play_are_named_by_the_spec(monkeypatch, tmp_path):
    """The third number of ``plan_calls`` (calls whose count depends on the play) is
    printed with the spec's ``plan_unit``; a spec that gives one without naming it is
    refused instead of printed as someone else's unit."""
    import dataclasses

    from scarce_lab import registry as environments
    from scarce_lab.runners.preview import ModelPlan, Preview

    p = Preview("scarce", runs=["r1"], models={"m": ModelPlan("m", None, 0, 10, per_unit=6,
                                                              unit="negotiator calls per contention")})
    assert "m: 0-10 calls + 6 negotiator calls per contention;" in format_preview(p)
    assert environments.get("scarce").plan_unit == "negotiator calls per contention"
    unnamed = dataclasses.replace(environments.get("sovsim"), plan_calls=lambda cfg, model: (1, 2, 3))
    monkeypatch.setattr(environments, "get", lambda name: unnamed)
    cfg = SovSimConfig(condition="cpr", model="openai/priced", game={"rounds": 2}, llm={"prices": PRICES})
    with pytest.raises(ValueError, match="names no unit"):
        preview("sovsim", [cfg])


def test_cli_dry_run_of_scarce_plans_the_negotiators_per_contention(tmp_path):
    """SCARCE leaves ``llm.max_tokens`` unset (per-phase defaults): the dry run builds
    its capture client as the runner's client is built, and plans the negotiator."""
    r = CliRunner().invoke(app, ["run", "scarce", "-m", "scripted/routine", "--negotiator-model", "openai/gpt-4o-mini",
                                 "--dry-run", "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "dry run: 1 scarce run(s), nothing sent" in r.output
    assert "openai/gpt-4o-mini: 0-0 calls + 25 negotiator calls per contention (at most 12000 in all);" in r.output  # 5 workers x 60 x 4 subruns x 5 x 2
    assert "(first negotiation:declaration prompt)" in r.output
    assert not (tmp_path / "out").exists()
