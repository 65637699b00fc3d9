"""The Economy of Minds' one config: every setting of a run, declared once."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from ..envs.economy.core import MAX_CREDITS, EconomyConfig
from ..envs.economy.reference import PRESETS, ReferenceConfig
from ..llm.client import LLMSettings
from ..llm.models import model_slug
from .base import ExperimentConfig

_MISSING = object()
BASELINES = ("none", "full", "round-robin")
#: ``default`` (our economy, the paper's text) or the authors' engine (see
#: :mod:`scarce_lab.envs.economy.reference`): bare, or with a shipped config's values.
ECONOMY_PRESETS = ("default", *PRESETS)


class EconomyLLM(LLMSettings):
    """Client settings with the Economy's defaults (greedy decoding)."""

    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature")


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
        if isinstance(v, dict) and "ablation" in v:
            raise ValueError("set the ablation with the run's 'ablation' field, not inside 'economy'")
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
        return self

    @model_serializer(mode="wrap")
    def _only_what_applies(self, handler):
        data = handler(self)
        if isinstance(data, dict):
            drop = (self.PRESET_FIELDS if self.preset == "default" else ()) + (
                self.TASKDIR_FIELDS if self.task_name != "dir" else ())
            data = {k: v for k, v in data.items() if k not in drop}
        return data

    def condition_settings(self) -> dict[str, Any]:
        """The base rule's settings plus, where they apply, ``preset``, ``reference.*``,
        ``verifier_timeout`` and ``sandbox_image`` (see :attr:`PRESET_FIELDS`)."""
        from .base import flatten

        out = super().condition_settings()
        flat = flatten(self.model_dump(mode="json"))
        out.update({k: v for k, v in flat.items()
                    if k in ("preset", "verifier_timeout", "sandbox_image") or k.startswith("reference.")})
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
        extra = [f"{k.split('.')[-1]}={v}" for k, v in self._beyond_preset().items() if k != "baseline"]
        return ",".join([self.condition, *extra])

    def _beyond_preset(self) -> dict[str, Any]:
        """Non-default settings less those the preset itself sets (for the label)."""
        out = self.non_default_settings()
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
        return f"eco-{self.task_name}-{self.condition}-{model_slug(self.model)}{extra}-s{self.seed}"
