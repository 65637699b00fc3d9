"""Run the Economy of Minds: population + task + recorder.

One run = ``episodes`` training episodes followed by ``eval_episodes`` frozen
evaluation episodes on instances that depend only on the seed (so every ablation of a
seed is evaluated on the same instances). Every episode is committed (``round`` =
episode index, training first, then evaluation; ``phase`` = ``train`` | ``eval``).

Event kinds (payloads in credits; see also :mod:`scarce_lab.envs.economy.engine`):
``birth`` (agent, origin, parent, bid, endowment, funder, genome), ``episode_start``
(episode, task; ``detail="steps"`` only), ``auction``, ``payment``, ``step``, ``reward``, ``episode_end``
(solved, steps, reward, end; with ``detail="episodes"`` also task: n_blocks / item_id), ``rent`` (amount charged to each of ``agents``, total),
``episode_agents`` (per agent: wins by step kind, paid, received, reward), ``death`` (agent, cause,
wealth, settlement, age), ``population`` (wealth {agent: credits}, bids {agent: own bid}, novices, bank,
rent_sink, total: the ledger sum, always 0).

Seeds: founders ``{seed}:founders``; instance of training episode e ``{seed}:train:e``;
evaluation instance i ``{seed}:eval:i``; auction tie-breaks ``{seed}:auction:phase:e``;
evolution ``{seed}:evo:e``.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scarce_lab import __version__
from scarce_lab.data.recorder import (
    MANIFEST,
    RunInProgressError,
    RunRecorder,
    read_manifest,
    run_in_progress,
)
from scarce_lab.data.schema import RunManifest, RunStatus
from scarce_lab.envs.economy import ABLATIONS, Economy, EconomyConfig, run_episode
from scarce_lab.envs.economy.arithmetic import make_problem
from scarce_lab.envs.economy.blocksworld import BlocksWorld, make_instance, size_for_episode
from scarce_lab.envs.economy.qa import QAItem, QATask

BASELINES = ("none", "full", "round-robin")


class EconomyRunConfig(BaseModel):
    """Everything that defines a run (stored in the manifest). Money in credits."""

    model_config = ConfigDict(extra="forbid")

    task: str = "blocksworld"
    agents: int = Field(12, ge=1)
    episodes: int = Field(300, ge=1)
    eval_episodes: int = Field(40, ge=0)
    ablation: str = "none"
    baseline: str = "none"
    model: str = "scripted/random-rules"
    seed: int = 0
    economy: dict[str, Any] = Field(default_factory=dict)
    founder_bid_min: int = Field(1, ge=0)
    founder_bid_max: int = Field(10, ge=0)
    # Blocks World
    min_blocks: int = Field(2, ge=1)
    max_blocks: int = Field(5, ge=1)
    n_colors: int = Field(3, ge=1)
    reward_per_block: int = Field(10, ge=0)
    max_steps_per_block: int = Field(4, ge=1)
    schedule: str = "uniform"
    promote_after: int = Field(3, ge=1)
    # QA tasks (arithmetic, jsonl)
    n_steps: int = Field(3, ge=1, le=6)
    qa_reward: int = Field(100, ge=0)
    qa_max_steps: int = Field(6, ge=1)
    # Recording: "steps" writes auction/payment/step/reward events; "episodes" only
    # the per-episode summaries (smaller datasets). Population snapshot every k episodes.
    detail: str = "steps"
    snapshot_every: int = Field(1, ge=1)

    @field_validator("detail")
    @classmethod
    def _detail(cls, v: str) -> str:
        if v not in ("steps", "episodes"):
            raise ValueError(f"detail must be 'steps' or 'episodes', got {v!r}")
        return v

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        if not v.strip():
            raise ValueError(f"model must be scripted/<name> or a litellm model, got {v!r}")
        return v

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, v: str) -> str:
        if v not in ("uniform", "curriculum"):
            raise ValueError(f"schedule must be 'uniform' or 'curriculum', got {v!r}")
        return v

    @field_validator("task")
    @classmethod
    def _task(cls, v: str) -> str:
        if v in ("blocksworld", "arithmetic") or (v.startswith("jsonl:") and len(v) > 6):
            return v
        raise ValueError(f"task must be blocksworld, arithmetic or jsonl:PATH, got {v!r}")

    @field_validator("ablation")
    @classmethod
    def _ablation(cls, v: str) -> str:
        if v not in ABLATIONS:
            raise ValueError(f"ablation must be one of {ABLATIONS}, got {v!r}")
        return v

    @field_validator("baseline")
    @classmethod
    def _baseline(cls, v: str) -> str:
        if v not in BASELINES:
            raise ValueError(f"baseline must be one of {BASELINES}, got {v!r}")
        return v

    @model_validator(mode="after")
    def _ranges(self) -> EconomyRunConfig:
        if self.min_blocks > self.max_blocks:
            raise ValueError(f"min_blocks ({self.min_blocks}) must be <= max_blocks ({self.max_blocks})")
        if self.founder_bid_min > self.founder_bid_max:
            raise ValueError(
                f"founder_bid_min ({self.founder_bid_min}) must be <= founder_bid_max ({self.founder_bid_max})"
            )
        unknown = sorted(set(self.economy) - set(EconomyConfig.__dataclass_fields__))
        if unknown:
            raise ValueError(f"economy: unknown field(s) {unknown}; see EconomyConfig")
        self.economy_config()  # raises ValueError naming a bad economy field
        return self

    @property
    def task_name(self) -> str:
        return "jsonl" if self.task.startswith("jsonl:") else self.task

    @property
    def condition(self) -> str:
        return self.ablation if self.baseline == "none" else f"baseline-{self.baseline}"

    def economy_config(self) -> EconomyConfig:
        return EconomyConfig(**{**self.economy, "ablation": self.ablation})


def load_qa_jsonl(path: Path) -> list[QAItem]:
    """Read question/answer pairs from a JSONL file (one object per line).

    Accepted keys: ``question`` or ``problem``; ``answer`` or ``solution``; optional
    ``id``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a line is not JSON or lacks a question/answer (names path and line).
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, expected a JSONL file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc})") from exc
    items = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{i}: not valid JSON ({exc})") from exc
        if not isinstance(obj, dict):
            raise ValueError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
        q = obj.get("question", obj.get("problem"))
        a = obj.get("answer", obj.get("solution"))
        if not isinstance(q, str) or not q.strip() or a is None:
            raise ValueError(f"{path}:{i}: needs 'question' (or 'problem') and 'answer' fields")
        items.append(QAItem(q, str(a), str(obj.get("id", i))))
    if not items:
        raise ValueError(f"{path}: no question/answer pairs")
    return items


def make_policy(cfg: EconomyRunConfig, *, client=None, record_calls=lambda calls: None, llm_kwargs=None):
    """The agent layer for ``cfg.model`` and ``cfg.task``.

    Raises:
        ValueError: an LLM model on Blocks World, or an unknown scripted policy.
    """
    from scarce_lab.llm.models import scripted_policy

    sp = scripted_policy(cfg.model)
    if cfg.task_name == "blocksworld":
        from scarce_lab.agents.economy.rules import RulePolicy

        if sp is None:
            raise ValueError(
                f"model {cfg.model!r}: Blocks World runs rule agents; use --model scripted/random-rules"
            )
        name = "expert" if cfg.baseline == "full" else sp[0]
        return RulePolicy(name)
    if sp is not None:
        from scarce_lab.agents.economy.partial import ScriptedPartialPolicy

        return ScriptedPartialPolicy("full" if cfg.baseline == "full" else sp[0])
    from scarce_lab.agents.economy.llm import LLMPartialPolicy

    if client is None:
        from scarce_lab.llm import LLMClient, LLMSettings

        client = LLMClient(LLMSettings(temperature=0.0))
    return LLMPartialPolicy(
        cfg.model, client, seed=cfg.seed, record_calls=record_calls, full=cfg.baseline == "full",
        **(llm_kwargs or {}),
    )


class _Tasks:
    """Builds the task instance of each episode (deterministic in the seed)."""

    def __init__(self, cfg: EconomyRunConfig, items: list[QAItem] | None):
        self.cfg = cfg
        self.size: int | None = None
        self.streak = 0
        self.train_items = self.eval_items = None
        if cfg.task_name == "jsonl":
            items = items if items is not None else load_qa_jsonl(Path(cfg.task[6:]))
            order = list(items)
            random.Random(f"{cfg.seed}:jsonl").shuffle(order)
            k = min(cfg.eval_episodes, len(order) // 2)
            self.eval_items, self.train_items = order[:k], order[k:] or order

    def make(self, phase: str, episode: int):
        cfg = self.cfg
        rng = random.Random(f"{cfg.seed}:{phase}:{episode}")
        if cfg.task_name == "blocksworld":
            schedule = cfg.schedule if phase == "train" else "uniform"
            n = size_for_episode(
                episode, rng, min_blocks=cfg.min_blocks, max_blocks=cfg.max_blocks,
                schedule=schedule, current=self.size, streak=self.streak, promote_after=cfg.promote_after,
            )
            if phase == "train" and schedule == "curriculum":
                if n != self.size:
                    self.streak = 0
                self.size = n
            target, stacks = make_instance(n, cfg.n_colors, rng)
            env = BlocksWorld(
                target, stacks, reward_per_block=cfg.reward_per_block,
                max_steps=cfg.max_steps_per_block * (n + 1),
            )
            return env, {"n_blocks": n, "target": list(target), "stacks": [list(s) for s in stacks]}
        if cfg.task_name == "arithmetic":
            item = make_problem(f"{cfg.seed}:{phase}:{episode}", cfg.n_steps).to_item(f"{phase}-{episode}")
        else:
            pool = self.train_items if phase == "train" else self.eval_items
            item = pool[episode % len(pool)]
        env = QATask(item, reward=cfg.qa_reward, max_steps=cfg.qa_max_steps)
        return env, {"item_id": item.item_id, "question": item.question, "answer": item.answer}

    def record(self, solved: bool) -> None:
        self.streak = self.streak + 1 if solved else 0


def run_id_for(cfg: EconomyRunConfig) -> str:
    """Deterministic run id: ``eco-<task>-<condition>-<model slug>-s<seed>``."""
    from scarce_lab.llm.models import model_slug

    return f"eco-{cfg.task_name}-{cfg.condition}-{model_slug(cfg.model)}-s{cfg.seed}"


def run_economy(
    cfg: EconomyRunConfig,
    out_dir: Path,
    *,
    client=None,
    llm_kwargs: dict | None = None,
    items: list[QAItem] | None = None,
    run_id: str | None = None,
    skip_complete: bool = True,
) -> Path:
    """Train (``cfg.episodes``) then evaluate frozen (``cfg.eval_episodes``); record it.

    Returns the run directory ``out_dir/<run_id>``. The model/policy and the task
    (e.g. the JSONL file) are checked before anything is written. Re-running a
    configuration: with ``skip_complete`` a complete run is returned as it is; an
    interrupted or failed one is moved aside to ``<run_id>.incomplete-<n>`` (kept as
    data; :func:`~scarce_lab.data.loaders.load_dataset` counts each run id once) and
    the run restarts from episode 0 (same seed, so the same trajectory).

    Raises:
        ValueError: unknown scripted policy, LLM model on Blocks World, bad JSONL task.
        FileNotFoundError: the JSONL task file does not exist.
        FileExistsError: a complete run exists and ``skip_complete`` is false.
        RunInProgressError: another live process is writing the same run.
        RuntimeError: frozen evaluation moved money (a bug; never expected).
    """
    run_id = run_id or run_id_for(cfg)
    run_dir = Path(out_dir) / run_id
    if (run_dir / MANIFEST).exists():
        if skip_complete and read_manifest(run_dir).status == RunStatus.complete:
            return run_dir
        if run_in_progress(run_dir):
            raise RunInProgressError(f"{run_dir} is being written by another process; not restarting it")
        if read_manifest(run_dir).status != RunStatus.complete:
            n = 0
            while run_dir.with_name(f"{run_id}.incomplete-{n}").exists():
                n += 1
            shutil.move(str(run_dir), str(run_dir.with_name(f"{run_id}.incomplete-{n}")))
    tasks = _Tasks(cfg, items)
    recorder: list[RunRecorder] = []
    policy = make_policy(cfg, client=client, record_calls=lambda calls: recorder[0].record_calls(calls),
                         llm_kwargs=llm_kwargs)
    manifest = RunManifest(
        run_id=run_id,
        environment="economy",
        condition=cfg.condition,
        config=cfg.model_dump(),
        models={"agents": cfg.model},
        seed=cfg.seed,
        package_version=__version__,
        notes={"economy": asdict(cfg.economy_config())},
    )
    rec = RunRecorder.create(run_dir, manifest)
    recorder.append(rec)
    try:
        _play(cfg, rec, policy, tasks)
    except BaseException as exc:
        rec.finish(RunStatus.failed, error=f"{type(exc).__name__}: {exc}")
        raise
    rec.finish()
    return rec.run_dir


def _play(cfg: EconomyRunConfig, rec: RunRecorder, policy, tasks: _Tasks) -> None:
    economy = Economy(cfg.economy_config())
    frng = random.Random(f"{cfg.seed}:founders")
    for genome in policy.founders(cfg.agents, frng):
        bid = frng.randint(cfg.founder_bid_min, cfg.founder_bid_max)
        a, tr = economy.add_agent(genome, episode=0, origin="founder", bid=bid)
        rec.emit("birth", round=0, phase="train", agent=a.agent_id, payload={
            "agent": a.agent_id, "origin": "founder", "parent": None, "bid": bid,
            "endowment": tr.amount, "funder": tr.src, "episode": 0, "genome": policy.genome_json(genome),
        })
    baseline = cfg.baseline != "none"
    order = [a.agent_id for a in economy.living()]

    def trigger(a, obs):
        return policy.trigger(a.genome, obs)

    for phase, count, offset in (("train", cfg.episodes, 0), ("eval", cfg.eval_episodes, cfg.episodes)):
        training = phase == "train" and not baseline
        before = economy.ledger.balances() if phase == "eval" else None
        for e in range(count):
            rnd = offset + e
            if hasattr(policy, "episode"):
                policy.episode = rnd
            env, info = tasks.make(phase, e)
            if cfg.detail == "steps":
                rec.emit("episode_start", round=rnd, phase=phase, payload={"episode": e, "task": info})
            else:  # the summary keeps only the instance's size / id, in episode_end
                info = {k: v for k, v in info.items() if k in ("n_blocks", "item_id")}

            summary = _EpisodeSummary()

            def emit(kind, step, agent, payload, _rnd=rnd, _phase=phase, _sum=summary):
                _sum.add(kind, agent, payload)
                if cfg.detail == "steps":
                    rec.emit(kind, round=_rnd, phase=_phase, agent=agent, payload={"step": step, **payload})

            taken: list[str] = []

            def act_counted(a, obs, _rnd=rnd, _taken=taken):
                out = policy.act(a.genome, obs, agent=a.agent_id, episode=_rnd, step=len(_taken))
                _taken.append(a.agent_id)
                return out

            rng = random.Random(f"{cfg.seed}:auction:{phase}:{e}")
            if cfg.baseline == "round-robin":
                res = _round_robin_episode(economy, env, order, act_counted, emit)
            else:
                res = run_episode(
                    economy, env, trigger=trigger, act=act_counted, training=training, rng=rng,
                    emit=emit, action_to_json=lambda x: x.to_json(),
                )
            if phase == "train":
                tasks.record(res.solved)
            rec.emit("episode_end", round=rnd, phase=phase, payload={
                "episode": e, "solved": res.solved, "steps": res.steps, "reward": res.reward, "end": res.end,
                **({"task": info} if cfg.detail == "episodes" else {}),
            })
            rec.emit("episode_agents", round=rnd, phase=phase, payload={"agents": summary.agents})
            if training:
                _evolve(cfg, economy, policy, rec, rnd, e)
            if e % cfg.snapshot_every == 0 or e == count - 1:
                _snapshot(economy, rec, rnd, phase)
            rec.commit_round(rnd)
        if before is not None and economy.ledger.balances() != before:
            raise RuntimeError("frozen evaluation changed wealth")


def _evolve(cfg, economy: Economy, policy, rec: RunRecorder, rnd: int, e: int) -> None:
    end = economy.end_episode(e, random.Random(f"{cfg.seed}:evo:{e}"), policy.mutate, policy.newcomer)
    if end.rent:
        rec.emit("rent", round=rnd, phase="train", payload={
            "amount": end.rent[0].amount, "agents": [tr.src for tr in end.rent],
            "total": sum(tr.amount for tr in end.rent),
        })
    for d in end.deaths:
        rec.emit("death", round=rnd, phase="train", agent=d["agent"], payload=d)
    for b in end.births:
        genome = economy.agents[b["agent"]].genome
        rec.emit("birth", round=rnd, phase="train", agent=b["agent"],
                 payload={**b, "genome": policy.genome_json(genome)})


def _snapshot(economy: Economy, rec: RunRecorder, rnd: int, phase: str) -> None:
    bal = economy.ledger.balances()
    rec.emit("population", round=rnd, phase=phase, payload={
        "wealth": {a.agent_id: bal[a.agent_id] for a in economy.living()},
        "bids": {a.agent_id: a.bid for a in economy.living()},
        "novices": [a.agent_id for a in economy.living() if a.novice],
        "bank": bal["bank"],
        "rent_sink": bal["rent_sink"],
        "total": economy.ledger.total(),
    })


class _EpisodeSummary:
    """Per-agent aggregates of one episode, from the engine's events: ``wins`` by step
    kind, ``paid`` (bids paid, credits), ``received`` (payments received from the next
    winner), ``reward`` (credits). Realised value of an agent's wins = received + reward.
    """

    def __init__(self) -> None:
        self.agents: dict[str, dict] = {}

    def _a(self, agent: str) -> dict:
        return self.agents.setdefault(agent, {"wins": {}, "paid": 0, "received": 0, "reward": 0})

    def add(self, kind: str, agent: str | None, payload: dict) -> None:
        if kind == "auction":
            w = self._a(payload["winner"])["wins"]
            w[payload["step_kind"]] = w.get(payload["step_kind"], 0) + 1
        elif kind == "payment":
            self._a(payload["payer"])["paid"] += payload["amount"]
            if payload["payee"] in self.agents:
                self._a(payload["payee"])["received"] += payload["amount"]
        elif kind == "reward":
            self._a(agent)["reward"] += payload["amount"]


def _round_robin_episode(economy: Economy, env, order: list[str], act, emit):
    """Baseline without an economy: founders act in a fixed cyclic order; no money moves."""
    from scarce_lab.envs.economy.engine import EpisodeResult

    winners: list[str] = []
    total = 0
    end = "max_steps"
    solved = False
    alive = [a for a in order if a in economy.agents]
    if not alive:
        return EpisodeResult(False, 0, 0, [], "no_eligible")
    for step in range(env.max_steps):
        obs = env.observe()
        kind = env.step_kind(obs)
        agent = alive[step % len(alive)]
        emit("auction", step, agent, {
            "eligible": [agent], "bids": {}, "winner": agent, "price": 0, "tie": False,
            "random_winner": False, "step_kind": kind, "round_robin": True,
        })
        action = act(economy.agents[agent], obs)
        result = env.apply(action)
        winners.append(agent)
        emit("step", step, agent, {
            "action": action.to_json(), "step_kind": kind, "reward": result.reward,
            "done": result.done, "solved": result.solved,
        })
        total += result.reward
        if result.done:
            solved = result.solved
            end = "solved" if solved else "done"
            break
    return EpisodeResult(solved, len(winners), total, winners, end)
