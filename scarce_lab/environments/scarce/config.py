"""SCARCE's one config: every setting that defines a run (one pydantic model).

:meth:`ScarceConfig.world_rules` derives the rules of the pure world
(:class:`scarce_lab.environments.scarce.world.WorldRules`); :attr:`ScarceConfig.run_id` names the run
by its base condition, model, seed and a hash of its condition settings and models.

Defaults follow the SCARCE paper's baseline: cross-subrun memory (``memory="cross"``;
the memory-horizon experiment varies it to ``subrun`` and ``none``), two private-message
rounds (a recipient may reply), 1,000 credits and a 25-minute deadline per subrun.
The budget-asymmetry experiment gives one worker 500 extra credits
(``rich_worker_budget=1500``, :data:`PAPER_RICH_WORKER_BUDGET`).

Reasoning effort (Table 9 compares the highest levels a model accepts, e.g. ``high``
vs ``xhigh`` or ``max``): ``llm.reasoning_effort`` takes every level litellm knows
(:data:`~scarce_lab.environments.scarce.efforts.REASONING_EFFORTS`) and is checked against the levels litellm lists for the
model when it lists any (:func:`supported_reasoning_efforts`); litellm would otherwise
drop an unsupported level silently (``drop_params``), and the run would be recorded
under an effort it never used.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from ...config.base import ExperimentConfig, flatten
from ...config.seats import SeatSettings
from ...data.schema import calls_no_model
from ...llm.client import LLMSettings
from ...llm.models import is_scripted, model_slug, scripted_policy, via_provider
from .agents import SCRIPTED_NEGOTIATORS, parse_skill
from .efforts import REASONING_EFFORTS
from .seats import ScarceSeatSettings
from .world import (
    DEFAULT_BUDGET,
    DEFAULT_PRIVATE_ROUNDS,
    PAPER_MEMORY,
    ClockConfig,
    InstitutionRules,
    Mechanism,
    WorldRules,
)
from .world.state import present_workers

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
#: The budget of the richer worker in the paper's budget-asymmetry experiment (credits):
#: 500 more than the others' 1,000.
PAPER_RICH_WORKER_BUDGET = 1500


def supported_reasoning_efforts(model: str) -> tuple[str, ...] | None:
    """The reasoning-effort levels litellm lists for ``model`` (weakest first), ``()``
    for a model litellm knows to take none, ``None`` when litellm has no opinion
    (unknown model, or a known one without effort metadata) or for ``scripted/`` and
    ``embedded/`` models (which ignore the setting).

    Reads litellm's model map through
    ``litellm_core_utils.reasoning_effort_capability.resolve_supported_reasoning_efforts``
    (litellm is pinned; if that internal moves, this answers ``None`` and nothing is
    checked).
    """
    if not via_provider(model):
        return None
    from ...llm.client import load_litellm

    litellm = load_litellm()
    try:
        from litellm.litellm_core_utils.reasoning_effort_capability import (
            resolve_supported_reasoning_efforts,
        )

        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - unknown model or moved internal: no opinion
        return None
    levels = resolve_supported_reasoning_efforts(info, deployment_is_mapped=True)
    if levels is None:
        return None
    return tuple(e for e in REASONING_EFFORTS if e in levels)


class ScarceLLM(LLMSettings):
    """Client settings with SCARCE's defaults (greedy decoding); each seat sends them as
    :func:`.seats.seat_plan` resolves them."""

    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: int | None = Field(None, ge=1, description="answer tokens of every decision, solver steps and negotiation "
                                      "phases alike (unset: each part's own: 400 per solver step, the negotiator's "
                                      "per-phase defaults)")
    reasoning_effort: ReasoningEffort | None = Field(
        None, description="reasoning effort passed to models that take one (SCARCE Table 9: the highest levels "
                          "a model accepts, e.g. high vs xhigh or max; checked against litellm's list for the model)")


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
    OPTIONAL_CONDITION_FIELDS: ClassVar[tuple[str, ...]] = ("interviews",)
    HUMAN_SEATS: ClassVar[bool] = True

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
        PAPER_MEMORY, description="what negotiators remember: nothing, this subrun, or across subruns "
                                  "(cross: the paper's baseline)")
    interviews: bool = Field(
        False, description="at the end of each subrun, ask each LLM negotiator, from its own memory only, to "
                           "explain its play and its view of the others (a researcher-only interview event); a "
                           "condition setting when on")
    clock: Literal["virtual", "wall"] = Field("virtual", description="virtual (reproducible) or wall-clock time")
    model_call_s: float = Field(20.0, ge=0, description="virtual seconds a model decision costs")
    scripted_call_s: float = Field(2.0, ge=0, description="virtual seconds a scripted decision costs")
    command_s: float = Field(5.0, ge=0, description="virtual seconds a command costs at least")
    command_timeout_s: float = Field(20.0, gt=0, description="real seconds a command may run at most")
    sandbox: Literal["local", "docker"] = Field("local", description="sandbox backend: local (bubblewrap) or docker")
    seed: int = Field(0, description="run seed")
    slot_cap_s: int = Field(300, ge=1, description="longest slot (seconds)")
    private_rounds: int = Field(DEFAULT_PRIVATE_ROUNDS, ge=0, le=10,
                                description="rounds of private messages per contention (2: a recipient may reply)")
    rich_worker_budget: int | None = Field(
        None, ge=0, description="worker w0's budget (the richer worker; credits; the paper: 1500 vs 1000)")
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
    # seats, joins and leaves are written to the config (manifest) only when set
    # (exclude_if), so runs without them keep their manifests and run ids
    seats: dict[str, ScarceSeatSettings] = Field(default_factory=dict, exclude_if=lambda v: not v, description=(
        "per-worker models and settings: keys w0.., newcomer, '*', each optionally .solver/.negotiator; "
        "values a model or {model, temperature, max_tokens, reasoning_effort, memory} (environments/scarce/seats.py)"))
    joins: dict[str, int] = Field(default_factory=dict, exclude_if=lambda v: not v, description=(
        "workers that join at a subrun (0-based, as events count subruns): {w5: 1} plays from the second subrun"))
    leaves: dict[str, int] = Field(default_factory=dict, exclude_if=lambda v: not v, description=(
        "workers that leave after a subrun (0-based): {w1: 0} plays only the first subrun"))

    @field_validator("seats", mode="before")
    @classmethod
    def _seats_spelling(cls, v):
        """The one seat spelling (:func:`~scarce_lab.config.seats.parse_seats`), nested
        parts read as part keys (:func:`~.seats.normalize_seats`)."""
        from ...config.seats import parse_seats
        from .seats import normalize_seats

        return parse_seats(normalize_seats(v), ScarceSeatSettings)
    institutions: InstitutionRules = Field(
        default_factory=InstitutionRules, description=(
            "sanctions (off|mechanism|vote, fine, fine_to bank|harmed), public reputation and contracts "
            "in the auction (scarce_lab.environments.scarce.world.institutions); all off by default"))

    @model_serializer(mode="wrap")
    def _institutions_when_on(self, handler):
        """``institutions`` is written only when a module is on: a run with all of them
        off records exactly the config (and run id) it had before they existed."""
        data = handler(self)
        if isinstance(data, dict) and not self.institutions.on:
            data.pop("institutions", None)
        return self._omit_optional(data)  # and the base class's optional settings (interviews)

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
            if value is not None and is_scripted(value):
                try:
                    scripted_policy(value)
                except ValueError:
                    raise ValueError(f"{name} {value!r}: 'scripted/' needs a policy name, e.g. scripted/fifo") from None
        policy, arg = scripted_policy(self.model) or (None, None)
        if policy == "skilled":
            try:
                parse_skill(arg)
            except ValueError as exc:
                raise ValueError(f"model {self.model!r}: {exc}") from None
        neg = self.negotiator
        if is_scripted(neg) and not self.seats:  # with seats: each worker's negotiator (check_seats)
            policy, arg = scripted_policy(neg)
            field = "negotiator_model" if self.negotiator_model else "model"
            if policy not in SCRIPTED_NEGOTIATORS:
                raise ValueError(f"{field} {neg!r}: scripted negotiator policy must be one of "
                                 f"{list(SCRIPTED_NEGOTIATORS)}, got {policy!r}")
            if arg is not None:  # as the agents' registry (agents.scarce.negotiator_policies)
                raise ValueError(f"{field} {neg!r}: scripted negotiator policies take no argument, got {arg!r}")
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
        from .seats import check_membership, check_seats

        check_membership(self)
        check_seats(self, supported_reasoning_efforts)
        if self.seats:  # seats that change no worker's play are the run without them (one condition, one run id)
            from .seats import seat_plan

            if seat_plan(self) == seat_plan(self.model_copy(update={"seats": {}})):
                self.__dict__["seats"] = {}  # not setattr: validate_assignment would re-run this validator
        effort = self.llm.reasoning_effort
        if effort is not None and not self.seats:  # with seats: checked per seat model (check_seats)
            for field, m in (("model", self.model), ("negotiator_model", self.negotiator_model)):
                levels = supported_reasoning_efforts(m) if m else None
                if levels is not None and effort not in levels:
                    raise ValueError(f"llm.reasoning_effort {effort!r} is not accepted by {field} {m!r} "
                                     f"(litellm lists {list(levels) or 'no effort levels'} for it)")
        return self

    def condition_settings(self) -> dict:
        """The base class's condition settings, without :data:`MODEL_SOLVER_FIELDS`
        when the solver is scripted (they do not shape its trajectory), and with the
        client's sampling settings (``llm.*``) whenever a model plays: the base class
        drops them when ``model`` (the solver) is scripted, but a model negotiator
        (``negotiator_model``) is shaped by them too (without this, runs that differ
        only in reasoning effort had one run id and the second was skipped as done)."""
        out = super().condition_settings()
        if self.institutions.on:  # every institution setting defines the condition once one is on
            flat = flatten(self.model_dump(mode="json"))
            out.update({k: v for k, v in flat.items() if k.startswith("institutions.")})
        if is_scripted(self.model):
            if not self.seats or all(is_scripted(s.solver.model) for s in self.seat_plan().values()):
                for k in self.MODEL_SOLVER_FIELDS:
                    out.pop(k, None)
            if self.llm_models():  # a model negotiator, or a model seat
                flat = flatten(self.model_dump(mode="json"))
                out.update({k: flat[k] for k in self.CONDITION_FIELDS if k.startswith("llm.")})
        out = self._mark_not_sent(out)
        if self.seats:  # the composition (only when given: runs without seats keep their ids)
            out["seats"] = {w: s.record() for w, s in self.seat_plan().items()}
        for k in ("joins", "leaves"):
            if getattr(self, k):
                out[k] = dict(sorted(getattr(self, k).items()))
        return out

    def llm_models(self) -> list[str]:
        """The solvers' and the negotiators' models, where they call the client (every
        seat's, with ``seats``)."""
        if self.seats:
            plan = self.seat_plan().values()
            models = [m for s in plan for m in (s.solver.model, s.negotiator.model)]
        else:
            models = [self.model, self.negotiator]
        return list(dict.fromkeys(m for m in models if not calls_no_model(m)))

    def human_refused(self, field: str) -> str | None:
        """A person may be one worker's negotiator (``seats.<w>.negotiator``:
        declarations, reasoning, private messages, ballots); a solver stays a model or
        scripted (it writes and runs code in a sandbox on the environment's clock), and
        ``negotiator_model`` names every worker's negotiator."""
        if field.endswith(".negotiator"):
            return None
        if field == "negotiator_model":
            return ("names every worker's negotiator, and a person plays one seat: give it as "
                    "seats.<worker>.negotiator=human/<name>")
        return ("a SCARCE solver writes and runs code in a sandbox on the environment's clock: it stays a model or "
                "scripted; a person can be a worker's negotiator: seats.<worker>.negotiator=human/<name>")

    def resolved_seats(self) -> dict[str, SeatSettings]:
        """``<worker>.<part>`` -> that part's settings as sent (:meth:`seat_plan`); ``{}``
        without seats (the dry run reads each seat's ``max_tokens`` from it)."""
        if not self.seats:
            return {}
        return {f"{w}.{p}": getattr(s, p) for w, s in self.seat_plan().items() for p in ("solver", "negotiator")}

    def scripted_names(self, field: str) -> tuple[str, ...]:
        """A negotiator (``negotiator_model``, ``seats.<w>.negotiator``) plays one of
        :data:`.agents.SCRIPTED_NEGOTIATORS`; a solver (``model``, which also names the
        negotiator when ``negotiator_model`` is unset, and ``seats.<w>.solver``) plays
        the scripted routine (``routine``, or under the name of the negotiator policy it
        plays with) or ``skilled[:<skill>]`` (:mod:`.agents.solvers`, :mod:`.agents.scripted`)."""
        if field == "negotiator_model" or field.endswith(".negotiator"):
            return SCRIPTED_NEGOTIATORS
        return ("routine", "skilled", *SCRIPTED_NEGOTIATORS)

    def seat_models(self) -> dict[str, str]:
        """``<worker>.<part>`` -> model string of every seat (the preflight checks each,
        :func:`scarce_lab.runners.preflight.check_configs`); ``{}`` without seats."""
        return {k: s.model for k, s in self.resolved_seats().items()}

    def seat_plan(self):
        """Worker -> :class:`~.seats.WorkerSeat`: each worker's solver and
        negotiator model and settings as sent, and its memory horizon (without
        ``seats``: today's ``model``, ``negotiator_model``, ``llm`` and ``memory``)."""
        from .seats import seat_plan

        return seat_plan(self)

    def composition_label(self) -> str:
        """A readable label of the seats (``w0=gpt-4o, others=fifo``); ``""`` without seats."""
        from .seats import composition

        return composition(self) if self.seats else ""

    def present(self, subrun: int) -> list[str]:
        """The workers that play ``subrun`` (0-based; ``joins``/``leaves``)."""
        return list(present_workers(self.names, self.joins, self.leaves, subrun))

    def condition_settings_defaults(self) -> dict:
        """The defaults of :meth:`condition_settings`, with the defaults of
        :data:`MODEL_SOLVER_FIELDS` (the default model is scripted, which drops them)."""
        out = super().condition_settings_defaults()
        out.update({f"institutions.{k}": v for k, v in InstitutionRules().model_dump(mode="json").items()})
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
    def base_condition(self) -> str:
        """``<scheduler>_<mechanism>_mem-<memory>``: the three settings every SCARCE
        experiment varies first."""
        return f"{self.scheduler}_{Mechanism(self.mechanism).value}_mem-{self.memory}"

    def condition_label(self) -> str:
        """:attr:`base_condition`, then every other condition setting that differs from
        its default (``name=value``)."""
        extra = [f"{k.split('.')[-1] if k.startswith('llm.') else k}={v}" for k, v in self.label_settings().items()
                 if k not in ("scheduler", "mechanism", "memory", "seats", "joins", "leaves")]
        if self.seats:
            extra.append(f"seats=[{self.composition_label()}]")
        for k in ("joins", "leaves"):
            if getattr(self, k):
                extra.append(f"{k}=[{' '.join(f'{w}@{n}' for w, n in sorted(getattr(self, k).items()))}]")
        return ",".join([self.base_condition, *extra, *self.fork_label()])

    @property
    def run_seed(self) -> int:
        """The seed every derived seed starts from (:func:`scarce_lab.runtime.step_seed`): ``seed``."""
        return self.seed

    @property
    def run_id(self) -> str:
        """``scarce_<base condition>_<solver model slug>_s<seed>_<hash>[-fork<j>]``: the hash
        covers the condition settings (a fork's step and intervention among them) and both models."""
        blob = json.dumps({"settings": self.condition_settings(), "model": self.model,
                           "negotiator": self.negotiator}, sort_keys=True)
        h = hashlib.sha256(blob.encode()).hexdigest()[:8]
        slug = model_slug(self.model)
        if self.seats:  # the solvers' model when they share one, else "mixed" (the seats are in the hash)
            solvers = {s.solver.model for s in self.seat_plan().values()}
            slug = model_slug(solvers.pop()) if len(solvers) == 1 else "mixed"
        return f"scarce_{self.base_condition}_{slug}_s{self.seed}_{h}{self.fork_tag()}"

    def budgets_for(self) -> dict[str, int]:
        """Worker -> budget per subrun (credits); the validator has refused overrides of
        unknown workers (and :class:`WorldRules` refuses a budget of no worker)."""
        b = dict.fromkeys(self.names, self.budget)
        if self.rich_worker_budget is not None:
            b["w0"] = self.rich_worker_budget
        return b | self.worker_budgets

    def deadlines_for(self) -> dict[str, float]:
        """Worker -> deadline in seconds since its subrun started."""
        d = dict.fromkeys(self.names, self.deadline_min * 60)
        if self.mixed_deadlines:
            n = self.workers
            spread = [10 + 15 * i / (n - 1) if n > 1 else 25 for i in range(n)]
            order = list(self.names)
            random.Random(f"{self.seed}:deadlines").shuffle(order)
            d = {w: m * 60 for w, m in zip(order, spread, strict=True)}
        return d | {w: v * 60 for w, v in self.worker_deadlines_min.items()}  # workers checked as budgets_for's

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
            **self._membership_rules(),
            institutions=self.institutions if self.institutions.on else None,
        )

    def _membership_rules(self) -> dict:
        """The world's per-worker memory horizons and joins/leaves (empty: today's world)."""
        out: dict = {}
        if self.seats:
            mem = {w: s.memory for w, s in self.seat_plan().items()}
            if any(m != self.memory for m in mem.values()):
                out["worker_memory"] = mem
        if self.joins:
            out["joins"] = dict(self.joins)
        if self.leaves:
            out["leaves"] = dict(self.leaves)
        return out
