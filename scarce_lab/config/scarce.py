"""SCARCE's one config: every setting that defines a run (one pydantic model).

:meth:`ScarceConfig.world_rules` derives the rules of the pure world
(:class:`scarce_lab.envs.slots.WorldRules`); :attr:`ScarceConfig.run_id` names the run
by its base condition, model, seed and a hash of its condition settings and models.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..agents.scarce import SCRIPTED_NEGOTIATORS
from ..envs.slots import DEFAULT_BUDGET, ClockConfig, Mechanism, WorldRules
from ..llm.client import LLMSettings
from ..llm.models import model_slug
from .base import ExperimentConfig, flatten


class ScarceLLM(LLMSettings):
    """Client settings with SCARCE's defaults: greedy decoding; ``max_tokens`` unset
    means each decision's own budget (the negotiator's per-phase defaults)."""

    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: int | None = Field(None, ge=1, description="answer tokens per decision (unset: per-phase defaults)")
    reasoning_effort: Literal["low", "medium", "high"] | None = Field(
        None, description="reasoning effort passed to models that take one (SCARCE Table 9)")


class ScarceConfig(ExperimentConfig):
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

    ENVIRONMENT: ClassVar[str] = "scarce"
    CONDITION_FIELDS: ClassVar[tuple[str, ...]] = (
        "scheduler", "mechanism", "memory", "workers", "subruns", "budget", "deadline_min", "clock",
        "model_call_s", "scripted_call_s", "command_s", "command_timeout_s", "slot_cap_s", "private_rounds",
        "rich_worker_budget", "mixed_deadlines", "worker_budgets.*", "worker_deadlines_min.*", "tasks",
        "task_assignment", "max_solver_steps", "output_limit", "history_k", "transcript_k", "zero_score_on_miss",
        "stuck_repeats", "llm.temperature", "llm.max_tokens", "llm.reasoning_effort",
    )
    #: Settings that shape only a model solver's trajectory: left out of the condition
    #: settings of runs with a scripted solver (as the client's sampling settings are).
    MODEL_SOLVER_FIELDS: ClassVar[tuple[str, ...]] = ("stuck_repeats",)
    SWEEP_FIELDS: ClassVar[tuple[str, ...]] = ("seed",)

    workers: int = Field(5, ge=1, le=26, description="workers (Solver + Negotiator pairs) sharing the sandbox")
    model: str = Field("scripted/fifo", description="the solvers' model (the coding agents): litellm, embedded/... or scripted/<policy>")
    negotiator_model: str | None = Field(None, description="the negotiators' model (default: the solvers' model)")
    subruns: int = Field(4, ge=1, le=4, description="subruns, each with its own task, deadline and budget")
    budget: int = Field(DEFAULT_BUDGET, ge=0, description="each worker's budget per subrun (credits)")
    deadline_min: float = Field(25.0, gt=0, description="each worker's deadline per subrun (minutes)")
    mechanism: Mechanism = Field(Mechanism.fixed, description="fixed bids, or bids revisable after the private messages")
    scheduler: Literal["ballots", "fifo", "sjf", "edf", "highest-bid"] = Field(
        "ballots", description="negotiated ballots, or a centralised baseline schedule")
    memory: Literal["none", "subrun", "cross"] = Field(
        "subrun", description="what negotiators remember: nothing, this subrun, or across subruns")
    clock: Literal["virtual", "wall"] = Field("virtual", description="virtual (reproducible) or wall-clock time")
    model_call_s: float = Field(20.0, ge=0, description="virtual seconds a model decision costs")
    scripted_call_s: float = Field(2.0, ge=0, description="virtual seconds a scripted decision costs")
    command_s: float = Field(5.0, ge=0, description="virtual seconds a command costs at least")
    command_timeout_s: float = Field(20.0, gt=0, description="real seconds a command may run at most")
    sandbox: Literal["local", "docker"] = Field("local", description="sandbox backend: local (bubblewrap) or docker")
    seed: int = Field(0, description="run seed")
    slot_cap_s: int = Field(300, ge=1, description="longest slot (seconds)")
    private_rounds: int = Field(1, ge=0, le=10, description="rounds of private messages per contention")
    rich_worker_budget: int | None = Field(None, ge=0, description="worker w0's budget (the richer worker; credits)")
    mixed_deadlines: bool = Field(False, description="deadlines spread over 10..25 minutes instead of deadline_min")
    worker_budgets: dict[str, int] = Field(default_factory=dict, description="per-worker budgets (credits)")
    worker_deadlines_min: dict[str, float] = Field(default_factory=dict, description="per-worker deadlines (minutes)")
    tasks: list[str] | None = Field(None, description="task ids of the shipped suite to draw from (default: all)")
    task_assignment: Literal["distinct", "shared"] = Field(
        "distinct", description="each worker its own task per subrun, or one shared task")
    max_solver_steps: int = Field(60, ge=1, description="solver steps per subrun before automatic submission")
    output_limit: int = Field(2000, ge=100, description="characters of command output recorded")
    history_k: int = Field(5, ge=0, description="past contentions shown to negotiators")
    transcript_k: int = Field(8, ge=1, description="past tool results shown to the solver")
    zero_score_on_miss: bool = Field(True, description="a missed deadline scores 0")
    stuck_repeats: int = Field(3, ge=2, description=(
        "a model solver that repeats the same failing action this many times in a row ends its subrun "
        "as 'stuck' (scripted solvers: not applied)"))
    llm: ScarceLLM = Field(default_factory=ScarceLLM, description="model client settings")

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
            from ..tasks.suite import list_task_ids

            have = list_task_ids()
            unknown = [t for t in self.tasks if t not in have]
            if unknown:
                raise ValueError(f"tasks: unknown task id(s) {unknown} (shipped: {have})")
        for field, values in (("worker_budgets", self.worker_budgets), ("worker_deadlines_min", self.worker_deadlines_min)):
            unknown = [w for w in values if w not in self.names]
            if unknown:
                raise ValueError(f"{field}: unknown worker(s) {unknown} (have {self.names})")
        return self

    def condition_settings(self) -> dict:
        """The base class's condition settings, without :data:`MODEL_SOLVER_FIELDS`
        when the solver is scripted (they do not shape its trajectory), and with the
        client's sampling settings (``llm.*``) whenever a model plays: the base class
        drops them when ``model`` (the solver) is scripted, but a model negotiator
        (``negotiator_model``) is shaped by them too (without this, runs that differ
        only in reasoning effort had one run id and the second was skipped as done)."""
        out = super().condition_settings()
        if self.model.startswith("scripted/"):
            for k in self.MODEL_SOLVER_FIELDS:
                out.pop(k, None)
            if not self.negotiator.startswith("scripted/"):
                flat = flatten(self.model_dump(mode="json"))
                out.update({k: flat[k] for k in self.CONDITION_FIELDS if k.startswith("llm.")})
        return out

    def condition_settings_defaults(self) -> dict:
        """The defaults of :meth:`condition_settings`, with the defaults of
        :data:`MODEL_SOLVER_FIELDS` (the default model is scripted, which drops them)."""
        out = super().condition_settings_defaults()
        for k in self.MODEL_SOLVER_FIELDS:
            out.setdefault(k, type(self).model_fields[k].default)
        return out

    @property
    def names(self) -> list[str]:
        return [f"w{i}" for i in range(self.workers)]

    @property
    def negotiator(self) -> str:
        return self.negotiator_model or self.model

    @property
    def reasoning_effort(self) -> str | None:
        """The reasoning effort passed to the models (``llm.reasoning_effort``)."""
        return self.llm.reasoning_effort

    @property
    def base_condition(self) -> str:
        """``<scheduler>_<mechanism>_mem-<memory>``: the three settings every SCARCE
        experiment varies first."""
        return f"{self.scheduler}_{Mechanism(self.mechanism).value}_mem-{self.memory}"

    def condition_label(self) -> str:
        """:attr:`base_condition`, then every other condition setting that differs from
        its default (``name=value``)."""
        extra = [f"{k.split('.')[-1] if k.startswith('llm.') else k}={v}" for k, v in self.non_default_settings().items()
                 if k not in ("scheduler", "mechanism", "memory")]
        return ",".join([self.base_condition, *extra])

    @property
    def run_id(self) -> str:
        """``scarce_<base condition>_<solver model slug>_s<seed>_<hash>``: the hash covers
        the condition settings and both models."""
        blob = json.dumps({"settings": self.condition_settings(), "model": self.model,
                           "negotiator": self.negotiator}, sort_keys=True)
        h = hashlib.sha256(blob.encode()).hexdigest()[:8]
        return f"scarce_{self.base_condition}_{model_slug(self.model)}_s{self.seed}_{h}"

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
    """The run id of ``cfg`` (:attr:`ScarceConfig.run_id`)."""
    return cfg.run_id
