"""SovSim's one config: every setting of a game, declared once."""

from __future__ import annotations

import hashlib
import json
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..envs.sovsim import CommonsConfig, Condition
from ..envs.sovsim_talk import TalkMode, TalkRules
from ..llm.client import LLMSettings
from ..llm.models import EMBEDDED_MODEL, model_slug
from .base import ExperimentConfig


class SovSimLLM(LLMSettings):
    """Client settings with SovSim's defaults: temperature 0.7 so that simulations are
    replicates (each decision's seed drives the sampling; at 0 identical prompts give
    identical games), and 110 tokens, which fit the reasoning and extraction answer."""

    temperature: float = Field(0.7, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: int = Field(110, ge=1, description="answer tokens per decision")


class SovSimConfig(ExperimentConfig):
    """One SovSim game (paper: Sovereignty over the Commons, sec. 3): a power
    condition, the model driving all four agents, the game's parameters (pool units)
    and the sampling settings. The run seed derives from ``seed`` and ``simulation``.

    Condition-defining settings: ``condition``, ``role_labels``, every ``game`` field,
    ``talk``, ``talk_turns``, ``talk_max_chars``, ``llm.temperature``,
    ``llm.max_tokens``, ``llm.reasoning_effort``, and ``interviews`` when on. The model is
    recorded per run and is a separate axis of every table.
    """

    ENVIRONMENT: ClassVar[str] = "sovsim"
    CONDITION_FIELDS: ClassVar[tuple[str, ...]] = (
        "condition", "role_labels", "game.*", "llm.temperature", "llm.max_tokens", "llm.reasoning_effort",
        "talk", "talk_turns", "talk_max_chars",
    )
    LABEL_FIELD: ClassVar[str] = "condition"
    SWEEP_FIELDS: ClassVar[tuple[str, ...]] = ("condition", "model")
    REPLICATE_FIELD: ClassVar[str] = "simulation"
    OPTIONAL_CONDITION_FIELDS: ClassVar[tuple[str, ...]] = ("interviews",)

    condition: Condition = Field(
        Condition.cpr, description="power condition: cpr (symmetric), bcpr (boss), kcpr (king), kcpr_m (king who may misreport the pool)"
    )
    model: str = Field(
        EMBEDDED_MODEL, min_length=1,
        description="model for every agent: a litellm model, embedded/smollm2 or scripted/<policy>[:arg]",
    )
    simulation: int = Field(0, ge=0, description="simulation index within the sweep (0-based)")
    seed: int = Field(0, description="sweep seed; each simulation derives its run seed from it")
    role_labels: Literal["default", "neutral"] = Field(
        "default", description="role names in prompts: the paper's (citizen, boss, king...) or neutral ones"
    )
    game: CommonsConfig = Field(default_factory=CommonsConfig, description="game parameters (pool units)")
    llm: SovSimLLM = Field(default_factory=SovSimLLM, description="model client settings")
    interviews: bool = Field(
        False, description="after the game, ask each LLM agent, from its own memory only, to explain its play "
                           "and its view of the others (a researcher-only interview event); a condition setting "
                           "when on")
    talk: TalkMode = Field(
        TalkMode.none,
        description="discussion before each round's extractions: none (the paper's game), public, or "
                    "public+private (messages may name recipients); the leader speaks last",
    )
    talk_turns: int = Field(1, ge=1, description="talk turns per agent and round (with talk on)")
    talk_max_chars: int = Field(200, ge=1, description="longest talk message, characters (with talk on)")

    @model_validator(mode="after")
    def _talk_settings_need_talk(self) -> SovSimConfig:
        """Refuse ``talk_turns``/``talk_max_chars`` set away from their defaults with
        ``talk=none``: they would split conditions that play the same game."""
        if self.talk == TalkMode.none:
            for name in ("talk_turns", "talk_max_chars"):
                if getattr(self, name) != type(self).model_fields[name].default:
                    raise ValueError(f"{name}={getattr(self, name)!r} needs talk=public or talk=public+private "
                                     "(with talk=none there is no discussion)")
        return self

    def talk_rules(self) -> TalkRules:
        """The discussion's rules for :class:`~scarce_lab.envs.sovsim.CommonsGame`."""
        return TalkRules(self.talk, self.talk_turns, self.talk_max_chars)

    @property
    def run_id(self) -> str:
        """``sovsim-<condition>-<model slug>[-<hash>]-s<seed>-<simulation>``; the 8-hex
        hash of the condition settings appears when any differs from its default."""
        changed = self.non_default_settings()
        extra = ""
        if changed:
            extra = "-" + hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()[:8]
        return f"sovsim-{self.condition.value}-{model_slug(self.model)}{extra}-s{self.seed}-{self.simulation}"

    @property
    def run_seed(self) -> int:
        """The run's seed, derived from the sweep seed and the simulation index."""
        from ..runtime import derive_seed

        return derive_seed("sovsim", self.seed, self.simulation)
