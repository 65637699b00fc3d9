"""The Economy of Minds' one config: every setting of a run, declared once."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)

from ...config.base import ExperimentConfig
from ...config.seats import (
    SeatSettings,
    check_seat_keys,
    composition_label,
    parse_seats,
    resolve_seat,
)
from ...llm.client import LLMSettings
from ...llm.models import model_slug
from .world.core import MAX_CREDITS, EconomyConfig
from .world.qa import CAPABILITIES
from .world.reference import PRESETS, ReferenceConfig

_MISSING = object()
BASELINES = ("none", "full", "round-robin")
#: ``default`` (our economy, the paper's text) or the authors' engine (see
#: :mod:`scarce_lab.environments.economy.world.reference`): bare, or with a shipped config's values.
ECONOMY_PRESETS = ("default", *PRESETS)


class EconomyLLM(LLMSettings):
    """Client settings with the Economy's defaults: greedy decoding; ``max_tokens``
    (the client's default, 256) is the answer tokens every agent's decision sends (the
    runner passes it to the policy, so the recorded ``llm.max_tokens`` is what each
    call sends; it stays 256 so shipped runs keep their run ids)."""

    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature")


#: The seat key of the agent that joins mid-run (``newcomer``), an alias every
#: environment gives its joining seat.
NEWCOMER_SEAT = "newcomer"


class EconomyNewcomer(BaseModel):
    """One agent with its own seat (seat key ``newcomer``) that joins the economy at the
    start of training episode ``episode`` (after episode ``episode - 1`` closed: rent,
    bankruptcies, births).

    Rule (ours, built on the economy's own newcomer rule, :mod:`scarce_lab.environments.economy.world.core`
    "Newcomers"): like an exploration newcomer it is funded by the bank (``wealth``
    credits; default ``economy.initial_wealth``, the paper's funding of every new agent),
    starts as a novice (its first training auction it bids the highest veteran bid plus
    ``epsilon``), and its own bid is ``bid`` or, by default, drawn from
    ``[1, highest veteran bid]`` with the seed ``{seed}:newcomer``; its genome is a fresh
    one from its seat's policy (``newcomer(rng)``, same seed), or with ``role`` (question-answer
    tasks) the founders' genome of that capability from its seat's policy. Our departures: it joins at
    a fixed episode chosen by the experimenter (not every ``explore_interval``), also
    under the ``no-exploration`` ablation and above ``economy.max_agents`` (it is the
    experiment's intervention, not the economy's exploration). Its offspring inherit its
    seat.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    episode: int = Field(..., ge=1, description="the training episode at whose start it joins (1 .. episodes-1)")
    wealth: int | None = Field(None, ge=0, le=MAX_CREDITS, description="its endowment from the bank (credits; "
                               "default economy.initial_wealth)")
    bid: int | None = Field(None, ge=1, le=MAX_CREDITS, description="its own bid (credits; default drawn from "
                            "[1, highest veteran bid])")
    role: str | None = Field(None, description="question-answer tasks: its capability (plan, compute, check, "
                             "answer) with the founders' prompt and trigger for it; default a fresh random agent")


class EconomyRunConfig(ExperimentConfig):
    """One Economy of Minds run (EoM sec. 3-5): ``episodes`` training episodes, then
    ``eval_episodes`` frozen-evaluation episodes, on a task; money in credits.

    Condition-defining settings: everything except ``model`` (a separate axis of every
    table), ``seed``, the recording detail and the client's transport settings.
    """

    ENVIRONMENT: ClassVar[str] = "economy"
    CONDITION_FIELDS: ClassVar[tuple[str, ...]] = (
        "task", "agents", "episodes", "eval_episodes", "ablation", "baseline", "economy.*",
        "founder_bid_min", "founder_bid_max", "min_blocks", "max_blocks", "n_colors", "reward_per_block",
        "max_steps_per_block", "schedule", "promote_after", "n_steps", "qa_reward", "qa_max_steps",
        "llm.temperature", "llm.max_tokens",
    )
    #: Settings recorded only where they apply (left out of the manifest otherwise, so a
    #: default-preset run's manifest, run id and condition are what they were before the
    #: presets existed): ``preset`` and ``reference.*`` under an eom-reference preset,
    #: ``sandbox`` and ``verifier_timeout`` for task directories.
    PRESET_FIELDS: ClassVar[tuple[str, ...]] = ("preset", "reference")
    TASKDIR_FIELDS: ClassVar[tuple[str, ...]] = ("sandbox", "verifier_timeout", "sandbox_image")
    LABEL_FIELD: ClassVar[str] = "ablation"
    SWEEP_FIELDS: ClassVar[tuple[str, ...]] = ("ablation", "seed")

    task: str = Field("blocksworld", description=(
        "blocksworld, arithmetic, jsonl:PATH (question/answer pairs) or dir:PATH (a task directory: "
        "instruction.md, environment/, tests/compute_reward.py, task.toml)"))
    preset: Literal[ECONOMY_PRESETS] = Field(  # type: ignore[valid-type]
        "default", description=(
            "default (our economy) or the authors' engine: eom-reference, eom-reference:research, "
            "eom-reference:cloudcast, eom-reference:arch_dse (their shipped configs' values)"))
    reference: ReferenceConfig = Field(default_factory=ReferenceConfig, description=(
        "the eom-reference preset's rules (credits: 1000 per reference unit); set by --preset"))
    sandbox: Literal["local", "docker", "auto"] = Field(
        "local", description="dir: tasks: where the verifier runs (never on the host)")
    verifier_timeout: float = Field(300.0, gt=0, allow_inf_nan=False, description="dir: tasks: wall seconds of one verifier run")
    sandbox_image: str | None = Field(None, description=(
        "dir: tasks with --sandbox docker: the image the verifier runs in (default: the sandbox's own), "
        "e.g. one with the Python packages the task's verifier imports"))
    agents: int = Field(12, ge=1, description="founding population size")
    episodes: int = Field(300, ge=1, description="training episodes")
    eval_episodes: int = Field(40, ge=0, description="frozen evaluation episodes after training")
    ablation: Literal["none", "no-auction", "no-exploration", "no-exploitation"] = Field(
        "none", description="none, no-auction, no-exploration or no-exploitation (EoM sec. 5)")
    baseline: Literal["none", "full", "round-robin"] = Field(
        "none", description="none (the economy), full (one agent with every capability) or round-robin (partial agents in fixed order)")
    model: str = Field("scripted/random-rules", min_length=1,
                       description="scripted/<name> (rule or scripted agents) or a litellm model such as embedded/smollm2")
    seed: int = Field(0, description="run seed")
    economy: EconomyConfig = Field(default_factory=EconomyConfig, description="economic parameters (credits)")
    founder_bid_min: int = Field(1, ge=0, le=MAX_CREDITS, description="founders' bids are drawn from [min, max] credits")
    founder_bid_max: int = Field(10, ge=0, le=MAX_CREDITS, description="founders' bids are drawn from [min, max] credits")
    min_blocks: int = Field(2, ge=1, description="Blocks World: fewest blocks")
    max_blocks: int = Field(5, ge=1, description="Blocks World: most blocks")
    n_colors: int = Field(3, ge=1, description="Blocks World: block colours")
    reward_per_block: int = Field(10, ge=0, le=MAX_CREDITS, description="Blocks World: reward per block when solved (credits)")
    max_steps_per_block: int = Field(4, ge=1, description="Blocks World: step budget per block")
    schedule: Literal["uniform", "curriculum"] = Field("uniform", description="Blocks World sizes: uniform or curriculum")
    promote_after: int = Field(3, ge=1, description="curriculum: solved episodes in a row before the next size")
    n_steps: int = Field(3, ge=1, le=6, description="operations per arithmetic problem")
    qa_reward: int = Field(100, ge=0, le=MAX_CREDITS, description="reward for a correct answer (credits)")
    qa_max_steps: int = Field(6, ge=1, description="steps per question-answer episode")
    detail: Literal["steps", "episodes"] = Field(
        "steps", description="steps: every auction/payment/step event; episodes: per-episode summaries only")
    snapshot_every: int = Field(1, ge=1, description="population snapshot every k episodes")
    llm: EconomyLLM = Field(default_factory=EconomyLLM, description="model client settings")
    seats: dict[str, SeatSettings] | None = Field(None, description=(
        "per-seat model and settings (config.seats): keys are founding agent ids (a0, a1, ...), founder "
        "roles (question-answer tasks: plan, compute, check, answer; full), 'newcomer' and '*'; "
        "e.g. -S seats.a0=openai/gpt-4o -S 'seats.*=scripted/partial'; offspring inherit their parent's seat"))
    newcomer: EconomyNewcomer | None = Field(None, description=(
        "an agent with its own seat joins at the start of training episode k: -S newcomer.episode=5 "
        "[-S newcomer.wealth=40] [-S newcomer.bid=3]"))

    @field_validator("seats", mode="before")
    @classmethod
    def _parse_seats(cls, v: Any) -> Any:
        return parse_seats(v) or None if v is not None else None

    @field_validator("task")
    @classmethod
    def _task(cls, v: str) -> str:
        if v in ("blocksworld", "arithmetic") or (v.startswith(("jsonl:", "dir:")) and len(v.split(":", 1)[1]) > 0):
            return v
        raise ValueError(f"task must be blocksworld, arithmetic, jsonl:PATH or dir:PATH, got {v!r}")

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        """A preset's values under the ones given (given values win): ``reference.*``
        and the founders' number (``agents``) of the shipped config."""
        if not isinstance(data, dict) or data.get("preset") not in PRESETS:
            return data
        p = PRESETS[data["preset"]]
        data = dict(data)
        given = data.get("reference", {})
        if isinstance(given, ReferenceConfig):
            given = given.model_dump(exclude_unset=True)
        if isinstance(given, dict):
            data["reference"] = {**p["reference"], **given}
        if p["founders"] and "agents" not in data:
            data["agents"] = p["founders"]
        return data

    @field_validator("economy", mode="before")
    @classmethod
    def _no_ablation_inside(cls, v: Any) -> Any:
        """``economy.ablation`` is refused unless ``"none"``, the value a dump writes (so a
        manifest's config validates again: a fork re-plays its parent's config)."""
        if isinstance(v, dict) and "ablation" in v:
            if v["ablation"] != "none":
                raise ValueError("set the ablation with the run's 'ablation' field, not inside 'economy'")
            v = {k: x for k, x in v.items() if k != "ablation"}
        return v

    @model_validator(mode="after")
    def _ranges(self) -> EconomyRunConfig:
        if self.min_blocks > self.max_blocks:
            raise ValueError(f"min_blocks ({self.min_blocks}) must be <= max_blocks ({self.max_blocks})")
        if self.founder_bid_min > self.founder_bid_max:
            raise ValueError(f"founder_bid_min ({self.founder_bid_min}) must be <= founder_bid_max ({self.founder_bid_max})")
        if self.task_name != "dir" and (self.sandbox, self.verifier_timeout, self.sandbox_image) != ("local", 300.0, None):
            raise ValueError(f"sandbox / verifier_timeout / sandbox_image apply to task directories (--task dir:PATH) "
                             f"only; got task {self.task!r} with sandbox={self.sandbox!r}, "
                             f"verifier_timeout={self.verifier_timeout}, sandbox_image={self.sandbox_image!r}")
        if self.sandbox_image is not None and self.sandbox != "docker":
            raise ValueError(f"sandbox_image {self.sandbox_image!r} needs --sandbox docker (got {self.sandbox!r})")
        if self.preset == "default":
            if self.reference != ReferenceConfig():
                raise ValueError("reference.* settings apply only with an eom-reference preset (--preset); "
                                 f"got preset {self.preset!r} with reference {self.reference.model_dump(exclude_defaults=True)}")
            if self.task_name == "dir":
                raise ValueError(f"task {self.task!r}: task directories run under an eom-reference preset (--preset)")
        else:
            if self.economy != EconomyConfig():
                raise ValueError(f"preset {self.preset!r} runs the reference's rules; economy.* settings "
                                 f"({self.economy.model_dump(exclude_defaults=True)}) would be ignored: set reference.* instead")
            if self.baseline != "none":
                raise ValueError(f"preset {self.preset!r} runs the economy; baseline {self.baseline!r} has no reference rules")
        self._check_seats()
        if self.seats and self.resolved_seats() == self.model_copy(update={"seats": None}).resolved_seats():
            # seats that change no seat are the run without them (one condition, one run id); not setattr:
            # validate_assignment would re-run this validator
            self.__dict__["seats"] = None
        return self

    # -- seats and the newcomer ------------------------------------------------------
    def founder_ids(self) -> list[str]:
        """The founding agents' ids, ``a0 .. a{agents-1}`` (the economy numbers agents
        in order of birth, :meth:`scarce_lab.environments.economy.world.core.Economy.add_agent`)."""
        return [f"a{i}" for i in range(self.agents)]

    def founder_role(self, i: int) -> str | None:
        """The role of founder ``i`` as the Economy names it: on question-answer tasks its
        capability (founders cycle through plan, compute, check, answer; ``full`` under
        the full baseline: :func:`scarce_lab.environments.economy.agents.partial.founder_genomes`);
        ``None`` on Blocks World (rule agents have no role)."""
        if self.task_name not in ("arithmetic", "jsonl"):
            return None
        return "full" if self.baseline == "full" else CAPABILITIES[i % len(CAPABILITIES)]

    def seat_aliases(self) -> dict[str, tuple[str, ...]]:
        """The agents that have a seat, each with the other keys that name it (the spec's
        ``seat_keys``): the founders ``a0 .. a{n-1}`` in order, each also named by its role
        where the task gives founders roles (:meth:`founder_role`); ``newcomer`` when one
        joins."""
        roles = [self.founder_role(i) for i in range(self.agents)]
        out = {agent: (role,) if role else () for agent, role in zip(self.founder_ids(), roles, strict=True)}
        if self.newcomer is not None:
            out[NEWCOMER_SEAT] = ()
        return out

    def seat_keys(self) -> list[str]:
        """The seat keys this run has: founder ids, founder roles, ``newcomer`` when one
        joins (``*`` is always valid)."""
        roles = [r for r in (self.founder_role(i) for i in range(self.agents)) if r is not None]
        return [*self.founder_ids(), *dict.fromkeys(roles), *([NEWCOMER_SEAT] if self.newcomer else [])]

    def seat_default(self, max_tokens: int | None = None) -> SeatSettings:
        """What a seat runs with where no key sets a field: ``model``, and for a model the
        client's ``llm.temperature`` / ``llm.reasoning_effort`` and the policy's answer
        tokens (``max_tokens``: what an LLM partial agent sends, ``llm.max_tokens``
        unless given)."""
        return SeatSettings(model=self.model, temperature=self.llm.temperature,
                            max_tokens=self.llm.max_tokens if max_tokens is None else max_tokens,
                            reasoning_effort=self.llm.reasoning_effort)

    def resolved_seats(self, max_tokens: int | None = None) -> dict[str, SeatSettings]:
        """Seat -> the settings it runs with (:func:`scarce_lab.config.seats.resolve_seat`,
        default :meth:`seat_default`): every founder id, then ``newcomer`` when one joins,
        then ``*`` (the seat of agents of no founder's lineage: the economy's exploration
        newcomers). A scripted seat keeps only its model (sampling settings do not reach a
        policy). Without ``seats`` every seat is the default."""
        seats = self.seats or {}
        default = self.seat_default(max_tokens)
        out = {agent: _bare(resolve_seat(seats, agent, aliases, default=default))
               for agent, aliases in self.seat_aliases().items()}
        out["*"] = _bare(resolve_seat({k: v for k, v in seats.items() if k == "*"}, "*", default=default))
        return out

    def composition(self) -> str:
        """The readable composition of the founders and the newcomer, e.g.
        ``a0=gpt-4o, others=partial`` (:func:`scarce_lab.config.seats.composition_label`;
        a seat's settings are named where they differ from :meth:`seat_default`)."""
        default = self.seat_default().model_dump(exclude_none=True)
        seats = {k: SeatSettings(model=v.model, **{f: x for f, x in v.model_dump(exclude_none=True).items()
                                                  if f != "model" and default.get(f) != x})
                 for k, v in self.resolved_seats().items() if k != "*"}
        return composition_label(seats)

    def _check_seats(self) -> None:
        if self.newcomer is not None:
            if not self.newcomer.episode < self.episodes:
                raise ValueError(f"newcomer.episode: {self.newcomer.episode} must be a training episode after the "
                                 f"first (1 .. {self.episodes - 1}): frozen evaluation moves no money")
            if self.baseline != "none":
                raise ValueError(f"newcomer: baseline {self.baseline!r} has no economy to join (no auction, no wealth)")
            if self.newcomer.role is not None and (self.founder_role(0) is None or self.newcomer.role not in CAPABILITIES):
                raise ValueError(f"newcomer.role: {self.newcomer.role!r}: a role is one of {list(CAPABILITIES)} on "
                                 f"question-answer tasks (task {self.task!r})")
        if self.seats is None and self.newcomer is None:
            return
        if self.preset != "default" or self.task_name == "dir":
            raise ValueError(f"seats / newcomer: not available under preset {self.preset!r} with task {self.task!r} "
                             "(the default economy on blocksworld, arithmetic or jsonl: tasks runs them)")
        if self.seats:
            check_seat_keys(self.seats, self.seat_keys())
            from ...llm.models import resolve_model
            from ...llm.params import ignored_settings

            for key, s in self.seats.items():
                try:
                    ref = resolve_model(s.model) if s.model else None
                except ValueError as exc:
                    raise ValueError(f"seats.{key}.model: {exc}") from None
                extra = s.model_dump(exclude_none=True, exclude={"model"})
                if ref is not None and ref.kind == "scripted" and extra:
                    raise ValueError(f"seats.{key}: {extra} would not reach the scripted policy {s.model!r}")
            for agent, aliases in self.seat_aliases().items():
                own = resolve_seat(self.seats, agent, aliases)
                model = own.model or self.model
                asked = {k: getattr(own, k) for k in ("temperature", "max_tokens", "reasoning_effort")}
                gone = ignored_settings(model, asked)
                if gone and not self.llm.allow_ignored_settings:
                    raise ValueError(f"seats: {gone} would not be sent to {model!r} (seat {agent}): litellm drops it "
                                     "for that model; leave it unset, or set llm.allow_ignored_settings=true")

    def scripted_names(self, field: str) -> tuple[str, ...]:
        """The task's scripted agents: Blocks World's rule agents (``random-rules``,
        ``expert``), a task directory's ``partial`` stand-in, the question tasks'
        ``partial`` and ``full`` (:mod:`.agents.rules`, :mod:`.agents.partial`)."""
        return {"blocksworld": ("random-rules", "expert"), "dir": ("partial",)}.get(self.task_name, ("partial", "full"))

    def seat_models(self) -> dict[str, str]:
        """Seat -> model for every seat of a run with seats (founder ids, ``newcomer``,
        ``*``); empty without seats (the config's ``model`` is every seat)."""
        if self.seats is None:
            return {}
        return {seat: s.model or self.model for seat, s in self.resolved_seats().items()}

    def llm_models(self) -> list[str]:
        """Every seat's model that calls the client (``scripted/`` ones left out), the
        config's ``model`` first."""
        from ...data.schema import is_scripted

        models = [self.model] + ([s.model for s in self.resolved_seats().values()] if self.seats else [])
        return [m for m in dict.fromkeys(models) if m and not is_scripted(m)]

    @model_serializer(mode="wrap")
    def _only_what_applies(self, handler):
        data = handler(self)
        if isinstance(data, dict):
            drop = (self.PRESET_FIELDS if self.preset == "default" else ()) + (
                self.TASKDIR_FIELDS if self.task_name != "dir" else ()) + tuple(
                k for k in ("seats", "newcomer", "fork", "chain") if getattr(self, k) is None)
            data = {k: v for k, v in data.items() if k not in drop}
        return self._omit_optional(data)  # and the base class's optional settings (human_time_limit_s)

    def human_refused(self, field: str) -> str | None:
        """No Economy seat is a person's: an agent bids in every step of the Hayek
        machine's auction and acts on every step it wins (hundreds of decisions an
        episode, many episodes): not a game a person can play at the table. Seat people
        in SovSim, or as a SCARCE negotiator."""
        return ("an Economy agent bids in every step of the Hayek machine's auction (hundreds of decisions an "
                "episode): not a person's game; seat people in SovSim or as a SCARCE negotiator")

    def condition_settings(self) -> dict[str, Any]:
        """The base rule's settings plus, where they apply, ``preset``, ``reference.*``,
        ``verifier_timeout`` and ``sandbox_image`` (see :attr:`PRESET_FIELDS`), and for a
        model on a task directory ``purpose_max_tokens`` (a program call, ``act:compute``,
        sends its own answer tokens, not ``llm.max_tokens``)."""
        from ...config.base import flatten

        out = super().condition_settings()
        flat = flatten(self.model_dump(mode="json"))
        out.update({k: v for k, v in flat.items()
                    if k in ("preset", "verifier_timeout", "sandbox_image") or k.startswith("reference.")})
        out.update(self.seat_settings())
        if self.task_name == "dir" and self.llm_models():  # a program call's own answer tokens, as sent
            from .agents.program import PROGRAM_TOKENS

            out["purpose_max_tokens"] = {"act:compute": PROGRAM_TOKENS}
        return out

    def seat_settings(self) -> dict[str, Any]:
        """The composition as condition settings, only when ``seats`` or a ``newcomer``
        is given (so a run without them keeps its settings, run id and trajectory):
        ``seats.<seat>.<field>`` for every founder, ``newcomer`` and ``*`` seat as
        resolved (:meth:`resolved_seats`; ``max_tokens`` as the policy sends it), plus
        ``newcomer.<field>``."""
        if self.seats is None and self.newcomer is None:
            return {}
        out = {f"seats.{seat}.{name}": value for seat, s in self.resolved_seats().items()
               for name, value in s.model_dump(exclude_none=True).items()}
        if self.newcomer is not None:
            out.update({f"newcomer.{k}": v for k, v in self.newcomer.model_dump().items() if v is not None})
        return out

    @property
    def task_name(self) -> str:
        """``blocksworld``, ``arithmetic``, ``jsonl`` or ``dir``."""
        return self.task.split(":", 1)[0]

    @property
    def condition(self) -> str:
        """The ablation, or ``baseline-<name>`` for a baseline run."""
        return self.ablation if self.baseline == "none" else f"baseline-{self.baseline}"

    def condition_label(self) -> str:
        """:attr:`condition`, then the other settings that differ from the defaults."""
        beyond = self._beyond_preset()
        extra = [f"{k.split('.')[-1]}={v}" for k, v in beyond.items()
                 if k != "baseline" and not k.startswith(("seats.", "newcomer."))]
        if self.seats is not None or self.newcomer is not None:
            extra.append(f"seats[{self.composition()}]")
        if self.newcomer is not None:
            extra.append("newcomer[" + " ".join(f"{k}={v}" for k, v in self.newcomer.model_dump().items()
                                                if v is not None) + "]")
        return ",".join([self.condition, *extra, *self.fork_label()])

    def _beyond_preset(self) -> dict[str, Any]:
        """Non-default settings less those the preset itself sets (for the label)."""
        out = self.label_settings()
        if self.preset in PRESETS:
            p = PRESETS[self.preset]
            own = ReferenceConfig(**p["reference"]).model_dump(mode="json")  # the preset's full values
            out = {k: v for k, v in out.items() if not (
                (k.startswith("reference.") and own.get(k[10:], _MISSING) == v)
                or (k == "agents" and v == p["founders"]))}
        return out

    def economy_config(self) -> EconomyConfig:
        """The economy's parameters with this run's ablation."""
        return self.economy.model_copy(update={"ablation": self.ablation})

    @property
    def run_id(self) -> str:
        """``eco-<task>-<condition>-<model slug>-s<seed>`` (plus a hash of other
        non-default settings, if any)."""
        import hashlib
        import json

        changed = {k: v for k, v in self.non_default_settings().items() if k not in ("baseline", "task")}
        extra = "-" + hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()[:8] if changed else ""
        return f"eco-{self.task_name}-{self.condition}-{model_slug(self.model)}{extra}-s{self.seed}{self.fork_tag()}"

    @property
    def run_seed(self) -> int:
        """The seed every derived seed starts from (:func:`scarce_lab.runtime.step_seed`): ``seed``."""
        return self.seed


def _bare(s: SeatSettings) -> SeatSettings:
    """A scripted seat without sampling settings (they never reach a policy)."""
    from ...llm.models import resolve_model

    if s.model and resolve_model(s.model).kind == "scripted":
        return SeatSettings(model=s.model)
    return s
