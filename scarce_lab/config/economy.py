"""The Economy of Minds' one config: every setting of a run, declared once."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..envs.economy.core import EconomyConfig
from ..llm.client import LLMSettings
from ..llm.models import model_slug
from .base import ExperimentConfig

BASELINES = ("none", "full", "round-robin")


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
    LABEL_FIELD: ClassVar[str] = "ablation"
    SWEEP_FIELDS: ClassVar[tuple[str, ...]] = ("ablation", "seed")

    task: str = Field("blocksworld", description="blocksworld, arithmetic or jsonl:PATH (question/answer pairs)")
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
    founder_bid_min: int = Field(1, ge=0, description="founders' bids are drawn from [min, max] credits")
    founder_bid_max: int = Field(10, ge=0, description="founders' bids are drawn from [min, max] credits")
    min_blocks: int = Field(2, ge=1, description="Blocks World: fewest blocks")
    max_blocks: int = Field(5, ge=1, description="Blocks World: most blocks")
    n_colors: int = Field(3, ge=1, description="Blocks World: block colours")
    reward_per_block: int = Field(10, ge=0, description="Blocks World: reward per block when solved (credits)")
    max_steps_per_block: int = Field(4, ge=1, description="Blocks World: step budget per block")
    schedule: Literal["uniform", "curriculum"] = Field("uniform", description="Blocks World sizes: uniform or curriculum")
    promote_after: int = Field(3, ge=1, description="curriculum: solved episodes in a row before the next size")
    n_steps: int = Field(3, ge=1, le=6, description="operations per arithmetic problem")
    qa_reward: int = Field(100, ge=0, description="reward for a correct answer (credits)")
    qa_max_steps: int = Field(6, ge=1, description="steps per question-answer episode")
    detail: Literal["steps", "episodes"] = Field(
        "steps", description="steps: every auction/payment/step event; episodes: per-episode summaries only")
    snapshot_every: int = Field(1, ge=1, description="population snapshot every k episodes")
    llm: EconomyLLM = Field(default_factory=EconomyLLM, description="model client settings")

    @field_validator("task")
    @classmethod
    def _task(cls, v: str) -> str:
        if v in ("blocksworld", "arithmetic") or (v.startswith("jsonl:") and len(v) > 6):
            return v
        raise ValueError(f"task must be blocksworld, arithmetic or jsonl:PATH, got {v!r}")

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
        return self

    @property
    def task_name(self) -> str:
        """``blocksworld``, ``arithmetic`` or ``jsonl``."""
        return "jsonl" if self.task.startswith("jsonl:") else self.task

    @property
    def condition(self) -> str:
        """The ablation, or ``baseline-<name>`` for a baseline run."""
        return self.ablation if self.baseline == "none" else f"baseline-{self.baseline}"

    def condition_label(self) -> str:
        """:attr:`condition`, then the other settings that differ from the defaults."""
        extra = [f"{k.split('.')[-1]}={v}" for k, v in self.non_default_settings().items() if k != "baseline"]
        return ",".join([self.condition, *extra])

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
