"""A SovSim sweep spread over several processes plays exactly the
games of a one-process sweep, splits the limits, and reports a dead child's games."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scarce_lab.environments.sovsim.runner import processes as sovsim_processes
from scarce_lab.environments.sovsim.runner.play import plan_sweep, run_sweep
from scarce_lab.environments.sovsim.runner.processes import run_sweep_processes, split_settings
from scarce_lab.llm.client import LLMSettings
from scarce_lab.llm.ratelimit import RateLimit


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("start", ["fork", "exec"])
@pytest.mark.slow
def test_processes_play_the_same_games_as_one_process(tmp_path, start):
    configs = plan_sweep(["all"], ["scripted/sustainable", "scripted/greedy"], 1, seed=3, rounds=4)
    one = run_sweep(configs, tmp_path / "one", progress=False)
    many = run_sweep_processes(configs, tmp_path / "many", processes=3, concurrency=4, progress=False,
                               start=start)
    assert [r.run_id for r in many] == [c.run_id for c in configs]
    assert [(r.status, r.rounds_played, r.collapsed) for r in many] == [
        (r.status, r.rounds_played, r.collapsed) for r in one
    ]
    assert {r.status for r in many} == {"complete"}
    for cfg in configs:
        assert _events(tmp_path / "many" / cfg.run_id) == _events(tmp_path / "one" / cfg.run_id)
    # a second call finds every run complete (the one resume rule)
    again = run_sweep_processes(configs, tmp_path / "many", processes=2, concurrency=4, progress=False,
                                start=start)
    assert {r.status for r in again} == {"skipped"}


def test_split_settings_divides_concurrency_and_rate_limits():
    s = LLMSettings(rate_limits={"openai": RateLimit(rpm=100, tpm=None), "x": RateLimit(rpm=3, tpm=7)})
    per = split_settings(s, 3, 32)
    assert [split_settings(s, 3, 32, i).max_concurrency for i in range(3)] == [11, 11, 10]
    assert per.rate_limits["openai"].rpm == 33 and per.rate_limits["openai"].tpm is None
    assert per.rate_limits["x"].rpm == 1 and per.rate_limits["x"].tpm == 2
    assert s.rate_limits["openai"].rpm == 100  # the caller's settings are untouched
    for bad in [(0, 8, 0), (4, 3, 0), (2, 8, 2)]:
        with pytest.raises(ValueError, match="processes="):
            split_settings(s, *bad)
    with pytest.raises(ValueError, match="x.rpm=3 cannot be split over 4"):  # never rounded up past the limit
        split_settings(s, 4, 8)


def test_a_dead_child_fails_its_games_with_its_status(tmp_path, monkeypatch):
    configs = plan_sweep(["cpr"], ["scripted/sustainable"], 2, rounds=2)
    monkeypatch.setattr(sovsim_processes.sys, "executable", "/bin/false")
    res = run_sweep_processes(configs, tmp_path, processes=2, concurrency=2, progress=False, start="exec")
    assert [r.status for r in res] == ["failed", "failed"]
    assert all("exited with status 1" in r.error for r in res)


def test_a_forked_child_that_raises_reports_the_error(tmp_path, monkeypatch):
    configs = plan_sweep(["cpr", "bcpr"], ["scripted/sustainable"], 1, rounds=2)

    def boom(payload, out):
        raise OSError("disk on fire")

    monkeypatch.setattr(sovsim_processes, "_run_shard", boom)  # the fork inherits it
    res = run_sweep_processes(configs, tmp_path, processes=2, concurrency=2, progress=False, start="fork")
    assert [r.status for r in res] == ["failed", "failed"]
    assert all("status 1" in r.error and "OSError: disk on fire" in r.error for r in res)


def test_the_same_game_twice_is_refused(tmp_path):
    configs = plan_sweep(["cpr"], ["scripted/sustainable"], 1, rounds=2)
    with pytest.raises(ValueError, match="same game more than once"):
        run_sweep_processes(configs * 2, tmp_path, processes=2, concurrency=2, progress=False)


@pytest.mark.slow
def test_children_stop_when_the_parent_dies(tmp_path):
    """A parent killed by SIGKILL (the OOM killer, a closed terminal) left its forked
    children playing and calling the model, then blocked forever on a full pipe while
    holding run locks; now they die with it and the runs resume."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.fake_server import FakeOpenAIServer

    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from scarce_lab.llm.client import LLMSettings\n"
        "from scarce_lab.environments.sovsim.runner.play import plan_sweep\n"
        "from scarce_lab.environments.sovsim.runner.processes import run_sweep_processes\n"
        "specs = plan_sweep(['all'], ['openai/fake'], 1, rounds=8)\n"
        "run_sweep_processes(specs, Path(sys.argv[2]), processes=2, concurrency=4, progress=False,\n"
        "                    settings=LLMSettings(api_base=sys.argv[1], cache=False, max_retries=0))\n"
    )
    with FakeOpenAIServer(latency_s=0.3) as server:
        env = dict(os.environ, OPENAI_API_KEY="sk-fake", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        parent = subprocess.Popen([sys.executable, "-c", script, server.url, str(tmp_path / "runs")], env=env)
        kids: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (len(kids) < 2 or server.stats()["requests"] < 4):
            time.sleep(0.2)
            kids = [int(k) for f in Path(f"/proc/{parent.pid}/task").glob("*/children")
                    for k in f.read_text().split()]
        assert len(kids) == 2, "the sweep did not start its two children"
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        at_kill = server.stats()["requests"]

        def alive():
            out = []
            for k in kids:
                try:
                    out += [k] if Path(f"/proc/{k}/stat").read_text().split()[2] != "Z" else []
                except OSError:  # gone
                    pass
            return out

        deadline = time.monotonic() + 60  # (waited for: a fixed 2 s, on a loaded machine, was not always enough)
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive() == []
        # they died at once, not after their games: no call after the kill but those
        # already on their way (at most the sweep's 4 in flight)
        assert server.stats()["requests"] - at_kill <= 4
        before = server.stats()["requests"]
        time.sleep(1)
        assert server.stats()["requests"] == before  # nobody calls the model any more
