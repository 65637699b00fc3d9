"""SCARCE's run configuration: every setting that defines a run (one pydantic model).

:meth:`ScarceConfig.world_rules` derives the rules of the pure world
(:class:`scarce_lab.envs.slots.WorldRules`); :func:`run_id_for` names the run by its
condition, model, seed and a hash of the whole config.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...agents.scarce import SCRIPTED_NEGOTIATORS
from ...envs.slots import DEFAULT_BUDGET, ClockConfig, Mechanism, WorldRules


class ScarceConfig(BaseModel):
    """Everything that defines a SCARCE run. Units: seconds, minutes where named
    ``_min``, credits for budgets.

    Per-worker overrides: ``rich_worker_budget`` gives worker ``w0`` that budget;
    ``mixed_deadlines`` spreads deadlines evenly over 10..25 minutes (replacing
    ``deadline_min``), assigned to workers by a seeded permutation;
    ``worker_budgets`` / ``worker_deadlines_min`` override single workers last.
    Budgets and deadlines apply afresh in every subrun. ``task_assignment``:
    ``distinct`` gives each worker its own task per subrun (a seeded rotation of the
    pool), ``shared`` one task per subrun for everyone.
    """

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(5, ge=1, le=26)
    model: str = "scripted/fifo"
    negotiator_model: str | None = None
    subruns: int = Field(4, ge=1, le=4)
    budget: int = Field(DEFAULT_BUDGET, ge=0)
    deadline_min: float = Field(25.0, gt=0)
    mechanism: Mechanism = Mechanism.fixed
    scheduler: Literal["ballots", "fifo", "sjf", "edf", "highest-bid"] = "ballots"
    memory: Literal["none", "subrun", "cross"] = "subrun"
    clock: Literal["virtual", "wall"] = "virtual"
    model_call_s: float = Field(20.0, ge=0)
    scripted_call_s: float = Field(2.0, ge=0)
    command_s: float = Field(5.0, ge=0)
    command_timeout_s: float = Field(20.0, gt=0)
    sandbox: Literal["local", "docker"] = "local"
    seed: int = 0
    slot_cap_s: int = Field(300, ge=1)
    private_rounds: int = Field(1, ge=0, le=10)
    rich_worker_budget: int | None = Field(None, ge=0)
    mixed_deadlines: bool = False
    worker_budgets: dict[str, int] = Field(default_factory=dict)
    worker_deadlines_min: dict[str, float] = Field(default_factory=dict)
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    tasks: list[str] | None = None
    task_assignment: Literal["distinct", "shared"] = "distinct"
    max_solver_steps: int = Field(60, ge=1)
    output_limit: int = Field(2000, ge=100)
    history_k: int = Field(5, ge=0)
    transcript_k: int = Field(8, ge=1)
    zero_score_on_miss: bool = True
    temperature: float = Field(0.0, ge=0)
    max_tokens: int | None = None
    condition: str | None = None

    @field_validator("worker_budgets")
    @classmethod
    def _budgets_ok(cls, v: dict[str, int]) -> dict[str, int]:
        for w, b in v.items():
            if b < 0:
                raise ValueError(f"worker_budgets[{w!r}] must be >= 0 credits, got {b}")
        return v

    @model_validator(mode="after")
    def _models_tasks_workers(self) -> ScarceConfig:
        """Reject, before anything is written: an empty model name, an unknown scripted
        negotiator policy, task ids not in the shipped suite, per-worker overrides for
        workers that do not exist."""
        for name, value in (("model", self.model), ("negotiator_model", self.negotiator_model)):
            if value is not None and not value.strip():
                raise ValueError(f"{name} must be a model name (litellm, embedded/... or scripted/<policy>), got {value!r}")
            if value is not None and value.startswith("scripted/"):
                policy = value.removeprefix("scripted/").partition(":")[0]
                if not policy:
                    raise ValueError(f"{name} {value!r}: 'scripted/' needs a policy name, e.g. scripted/fifo")
        neg = self.negotiator
        if neg.startswith("scripted/"):
            policy = neg.removeprefix("scripted/").partition(":")[0]
            if policy not in SCRIPTED_NEGOTIATORS:
                field = "negotiator_model" if self.negotiator_model else "model"
                raise ValueError(f"{field} {neg!r}: scripted negotiator policy must be one of "
                                 f"{list(SCRIPTED_NEGOTIATORS)}, got {policy!r}")
        if self.tasks is not None:
            from ...tasks.suite import list_task_ids

            have = list_task_ids()
            unknown = [t for t in self.tasks if t not in have]
            if unknown:
                raise ValueError(f"tasks: unknown task id(s) {unknown} (shipped: {have})")
        for field, values in (("worker_budgets", self.worker_budgets), ("worker_deadlines_min", self.worker_deadlines_min)):
            unknown = [w for w in values if w not in self.names]
            if unknown:
                raise ValueError(f"{field}: unknown worker(s) {unknown} (have {self.names})")
        return self

    @property
    def names(self) -> list[str]:
        return [f"w{i}" for i in range(self.workers)]

    @property
    def negotiator(self) -> str:
        return self.negotiator_model or self.model

    def condition_label(self) -> str:
        """A readable condition name (used in the run id and tables)."""
        if self.condition:
            return self.condition
        parts = [self.scheduler, str(self.mechanism), f"mem-{self.memory}"]
        if self.rich_worker_budget is not None:
            parts.append(f"rich{self.rich_worker_budget}")
        if self.mixed_deadlines:
            parts.append("mixeddl")
        if self.reasoning_effort:
            parts.append(f"effort-{self.reasoning_effort}")
        return "_".join(parts)

    def budgets_for(self) -> dict[str, int]:
        b = dict.fromkeys(self.names, self.budget)
        if self.rich_worker_budget is not None:
            b["w0"] = self.rich_worker_budget
        for w, v in self.worker_budgets.items():
            if w not in b:
                raise ValueError(f"worker_budgets: unknown worker {w!r} (have {self.names})")
            b[w] = v
        return b

    def deadlines_for(self) -> dict[str, float]:
        """Worker -> deadline in seconds since its subrun started."""
        d = dict.fromkeys(self.names, self.deadline_min * 60)
        if self.mixed_deadlines:
            n = self.workers
            spread = [10 + 15 * i / (n - 1) if n > 1 else 25 for i in range(n)]
            order = list(self.names)
            random.Random(f"{self.seed}:deadlines").shuffle(order)
            d = {w: m * 60 for w, m in zip(order, spread, strict=True)}
        for w, v in self.worker_deadlines_min.items():
            if w not in d:
                raise ValueError(f"worker_deadlines_min: unknown worker {w!r} (have {self.names})")
            d[w] = v * 60
        return d

    def clock_config(self) -> ClockConfig:
        """Time costs of decisions and commands (seconds)."""
        return ClockConfig(kind=self.clock, model_call_s=self.model_call_s,
                           scripted_call_s=self.scripted_call_s, command_s=self.command_s)

    def world_rules(self) -> WorldRules:
        """The rules of this run's world (budgets and deadlines per worker resolved)."""
        return WorldRules(
            workers=tuple(self.names), budgets=self.budgets_for(), deadlines_s=self.deadlines_for(),
            subruns=self.subruns, scheduler=self.scheduler, mechanism=self.mechanism, slot_cap_s=self.slot_cap_s,
            private_rounds=self.private_rounds, memory=self.memory, clock=self.clock_config(),
            max_solver_steps=self.max_solver_steps, history_k=self.history_k, transcript_k=self.transcript_k,
            zero_score_on_miss=self.zero_score_on_miss, seed=self.seed,
        )


def run_id_for(cfg: ScarceConfig) -> str:
    """Deterministic run id: condition, models and a hash of the whole config."""
    blob = json.dumps(cfg.model_dump(mode="json"), sort_keys=True)
    h = hashlib.sha256(blob.encode()).hexdigest()[:8]
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in cfg.model.replace("/", "-"))
    return f"scarce_{cfg.condition_label()}_{slug}_s{cfg.seed}_{h}"
