"""Task directories in the CloudCast format (``--task dir:PATH``): the loader, the
verifier inside the sandbox (never on the host), and whole runs whose verifier score
enters the economy under the reference preset's reward rules.

Uses ``tests/taskdirs/tiny-target`` (made for these tests: the program returns a
number, the verifier scores ``1 - |value - 7| / 7``); nothing of the authors' task."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scarce_lab.environments.economy.config import EconomyRunConfig
from scarce_lab.environments.economy.runner.play import run_economy
from scarce_lab.environments.economy.world.program import ProgramEdit, ProgramEpisode, ProgramState
from scarce_lab.sandbox.local import detect_capabilities
from scarce_lab.tasks.taskdir import (
    SandboxVerifier,
    TaskDirError,
    Verification,
    load_task_dir,
    parse_reward,
)

TINY = Path(__file__).parents[1] / "taskdirs" / "tiny-target"
CAPS = detect_capabilities()
needs_bwrap = pytest.mark.skipif(CAPS.mode != "bwrap", reason=f"bubblewrap sandbox unavailable: {CAPS.reason}")


def _copy(tmp_path) -> Path:
    d = tmp_path / "task"
    shutil.copytree(TINY, d)
    return d


def test_loader_reads_the_format_and_names_what_is_missing(tmp_path):
    t = load_task_dir(TINY)
    assert (t.task_id, t.program) == ("tiny-target", "program.py")
    assert "compute_reward.py" in t.tests and t.timeout_s(300) == 30.0 and t.memory_bytes() == 512 << 20
    for part in ("task.toml", "instruction.md", "tests/compute_reward.py"):
        d = _copy(tmp_path)
        (d / part).unlink()
        with pytest.raises(TaskDirError, match=part.split("/")[-1]):
            load_task_dir(d)
        shutil.rmtree(d)
    d = _copy(tmp_path)
    (d / "environment" / "other.py").write_text("x = 1\n")
    with pytest.raises(TaskDirError, match="exactly one top-level .py"):
        load_task_dir(d)
    (d / "task.toml").write_text((d / "task.toml").read_text() + '\n[scarce_lab]\nprogram = "program.py"\n')
    assert load_task_dir(d).program == "program.py"
    (d / "task.toml").write_text("not = [toml")
    with pytest.raises(TaskDirError, match="task.toml"):
        load_task_dir(d)
    with pytest.raises(TaskDirError, match="no such folder"):
        load_task_dir(tmp_path / "nowhere")


def test_a_link_in_the_task_directory_is_not_followed(tmp_path):
    d = _copy(tmp_path)
    (d / "environment" / "secret").symlink_to("/etc/hostname")
    with pytest.raises(TaskDirError, match="environment/"):
        load_task_dir(d)


def test_reward_json_gives_a_score_only_when_it_is_a_number_in_0_1():
    assert parse_reward(b'{"score": 0.25, "reason": "ok"}') == (0.25, "ok")
    for bad in (b'{"score": 1.5}', b'{"score": NaN}', b'{"score": true}', b'{"score": "0.5"}', b"[]", b"{",
                None):
        s, why = parse_reward(bad)
        assert s is None and why


def test_program_episode_carries_the_best_program_and_reports_the_score():
    state = ProgramState("GUESS = 2\n")
    scores = iter([0.5, 0.25])
    ep = ProgramEpisode("do it", state, lambda p: Verification(next(scores), "r"), max_steps=5)
    assert ep.apply(ProgramEdit("compute", "edit", "GUESS = 5\n")).done is False
    r = ep.apply(ProgramEdit("answer", "submit", submit=True))
    assert r.done and r.info["score"] == 0.5 and r.info["answer"] == "score=0.5"
    assert state.program == "GUESS = 5\n" and state.best_score == 0.5
    ep2 = ProgramEpisode("do it", state, lambda p: Verification(next(scores), "r"), max_steps=5)
    ep2.apply(ProgramEdit("compute", "edit", "GUESS = 0\n"))
    ep2.apply(ProgramEdit("answer", "submit", submit=True))
    assert state.program == "GUESS = 5\n"  # a worse program does not replace the best one
    ep3 = ProgramEpisode("do it", state, lambda p: Verification(None, "crashed"), max_steps=5)
    assert ep3.apply(ProgramEdit("compute", "edit", "")).info == {"invalid": True}
    assert ep3.apply(ProgramEdit("compute", "edit", "x = '\ud800'\n")).info == {"invalid": True}
    assert ep3.apply(ProgramEdit("compute", "edit", "#" * 300_000)).info == {"invalid": True}
    assert ep3.apply(ProgramEdit("answer", "submit", submit=True)).info["score"] is None


@needs_bwrap
def test_verifier_runs_in_the_local_sandbox_not_on_the_host(tmp_path):
    t = load_task_dir(TINY)
    v = SandboxVerifier(t, sandbox="local", timeout_s=30)
    assert v(t.program_text).score == pytest.approx(1 - 5 / 7)
    assert v(t.program_text.replace("GUESS = 2", "GUESS = 7")).score == 1.0
    canary = tmp_path / "canary.txt"
    canary.write_text("host secret")
    probe = f"GUESS = len(open({str(canary)!r}).read())\n\n\ndef value():\n    return GUESS\n"
    r = v(probe)
    assert r.score == 0.0 and "FileNotFoundError" in r.reason  # the host's files are not there
    # a program that exits, hangs or floods: tests/tasks/test_taskdir_hostile.py


@needs_bwrap
def test_a_task_directory_runs_end_to_end_and_its_score_is_paid_and_recorded(tmp_path):
    cfg = EconomyRunConfig(task=f"dir:{TINY}", preset="eom-reference:cloudcast", model="scripted/partial",
                           episodes=4, eval_episodes=1, seed=0, reference={"max_steps_per_episode": 6})
    run = run_economy(cfg, tmp_path)
    ev = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    subs = [e for e in ev if e["kind"] == "step" and e["payload"]["action"]["answer"] == "submit"]
    assert subs and all(e["payload"]["final_answer"].startswith("score=") for e in subs)
    scores = {e["round"]: float(e["payload"]["final_answer"][6:]) for e in subs}
    ends = {e["round"]: e["payload"] for e in ev if e["kind"] == "episode_end"}
    assert len(ends) == 5
    ref = cfg.reference
    for rnd, s in scores.items():
        if rnd >= cfg.episodes:
            continue
        paths = [e["payload"] for e in ev if e["kind"] == "payment" and e["round"] == rnd
                 and e["payload"]["reason"] == "path_reward"]
        # cloudcast: uncentred, path_reward_scale 2, env_reward_scale 2, split over unique authors
        authors = len(paths)
        assert authors and all(abs(p["amount"] - 2.0 * 2.0 * s * 1000 / authors) <= 0.5 for p in paths)
        assert ends[rnd]["reward"] == sum(p["amount"] for p in paths)
    assert ref.terminal_output_bonus_scale == 0.0
    assert all(p["payload"]["total"] == 0 for p in ev if p["kind"] == "population")


@pytest.mark.docker
@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client on this machine")
def test_verifier_runs_in_docker_when_an_engine_answers(tmp_path):
    from scarce_lab.sandbox.docker import docker_available

    if not docker_available():
        pytest.skip("no docker engine answers")
    t = load_task_dir(TINY)
    r = SandboxVerifier(t, sandbox="docker", timeout_s=60)(t.program_text.replace("GUESS = 2", "GUESS = 7"))
    assert r.score == 1.0 and r.backend == "DockerSandbox"


def test_frozen_evaluation_episodes_leave_the_program_as_it_was():
    from scarce_lab.environments.economy.runner.play import ProgramTask

    task = ProgramTask(load_task_dir(TINY), verify=lambda p: Verification(1.0, "ok"), max_steps=4)
    ep = task.episode(frozen=True)
    ep.apply(ProgramEdit("compute", "edit", "GUESS = 7\n"))
    ep.apply(ProgramEdit("answer", "submit", submit=True))
    assert task.program.best_score is None and "GUESS = 2" in task.program.program
    ep = task.episode()
    ep.apply(ProgramEdit("compute", "edit", "GUESS = 7\n"))
    ep.apply(ProgramEdit("answer", "submit", submit=True))
    assert task.program.best_score == 1.0 and task.program.program == "GUESS = 7\n"


def test_llm_program_agents_edit_with_a_code_block_and_fall_back_without_one():
    from scarce_lab.environments.economy.agents.program import LLMProgramPolicy, extract_program
    from scarce_lab.environments.economy.world.program import ProgramObs
    from scarce_lab.llm import LLMClient, LLMSettings

    assert extract_program("Here:\n```python\nGUESS = 7\n```\n") == "GUESS = 7\n"
    assert extract_program("no code") is None
    calls = []
    pol = LLMProgramPolicy("openai/gpt-4o-mini", LLMClient(LLMSettings(cache=False)), seed=0,
                           record_calls=calls.extend, mock_response="Try 7.\n```python\nGUESS = 7\n```")
    founders = pol.founders(4, None)  # plan, compute, check, answer
    compute = founders[1]
    obs = ProgramObs("Hit the target", "GUESS = 2\n", (), 0, None)
    edit = pol.act(compute, obs, agent="a1", episode=0, step=0)
    assert edit.program == "GUESS = 7\n" and not calls[-1].fallback_used
    pol.kwargs["mock_response"] = "I would change the guess."
    edit = pol.act(compute, obs, agent="a1", episode=0, step=1)
    assert edit.program is None and calls[-1].fallback_used
    assert pol.act(founders[3], obs, agent="a3", episode=0, step=2).submit


def test_the_verifier_image_is_passed_to_the_docker_sandbox(tmp_path, monkeypatch):
    import scarce_lab.sandbox as sbx
    from scarce_lab.sandbox import ExecResult
    from scarce_lab.tasks.program_proxy import HOST_FILE, PROGRAM_SOCKET, VERIFIER_SOCKET

    seen = {}

    class Box:
        folder = tmp_path
        w = type("W", (), {"name": "grade-x"})

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def run(self, argv, limits):
            if argv[-1] == HOST_FILE:  # the program's box (its process never connects here)
                return ExecResult(" ".join(argv), 0, "", "", 0.1)
            seen["argv"] = argv
            (tmp_path / "out").mkdir(exist_ok=True)
            (tmp_path / "out" / "reward.json").write_text('{"score": 0.5}')
            return ExecResult(" ".join(argv), 0, "", "", 0.1)

    class Sb:
        def grading_box(self, files, binds):
            seen.setdefault("files", []).append(sorted(files))
            seen.setdefault("binds", []).append(sorted(binds))
            return Box()

        def close_slot(self, name):
            seen["stopped"] = name

        def close(self):
            seen["closed"] = True

    def fake(kind, **kw):
        seen["kind"], seen["kw"] = kind, kw
        return Sb()

    monkeypatch.setattr(sbx, "make_sandbox", fake)
    t = load_task_dir(TINY)
    r = SandboxVerifier(t, sandbox="docker", image="verifier:with-networkx")("GUESS = 7\n")
    assert r.score == 0.5 and seen["kind"] == "docker" and seen["kw"] == {"image": "verifier:with-networkx"}
    assert seen["files"] == [[HOST_FILE, "app/program.py"], ["app/program.py", "tests/compute_reward.py"]]
    assert seen["binds"] == [[PROGRAM_SOCKET], [VERIFIER_SOCKET]] and seen["closed"] and seen["stopped"]
    assert seen["argv"][:2] == ["python3", "tests/compute_reward.py"]
    with pytest.raises(ValueError, match="needs --sandbox docker"):
        EconomyRunConfig(task=f"dir:{TINY}", preset="eom-reference", sandbox_image="x")
