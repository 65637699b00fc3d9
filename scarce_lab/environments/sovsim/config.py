"""SovSim's one config: every setting of a game, declared once."""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from ...config.base import ExperimentConfig
from ...config.seats import (
    SeatSettings,
    check_seat_keys,
    composition_label,
    parse_seats,
    resolve_seat,
)
from ...data.schema import calls_no_model
from ...llm.client import LLMSettings
from ...llm.models import EMBEDDED_MODEL, model_slug
from .agents.agent import SOVSIM_MAX_TOKENS, SOVSIM_TEMPERATURE
from .world.commons import ROLES, CommonsConfig, Condition, NewcomerRule
from .world.institutions import INSTITUTION_FIELDS, InstitutionRules
from .world.talk import TalkMode, TalkRules


class SovSimLLM(LLMSettings):
    """Client settings with SovSim's defaults: temperature 0.7 so that simulations are
    replicates (each decision's seed drives the sampling; at 0 identical prompts give
    identical games), and 110 tokens, which fit the reasoning and extraction answer."""

    temperature: float = Field(SOVSIM_TEMPERATURE, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: int = Field(SOVSIM_MAX_TOKENS, ge=1, description="answer tokens per decision")


class SovSimConfig(ExperimentConfig):
    """One SovSim game (paper: Sovereignty over the Commons, sec. 3): a power
    condition, the model driving all four agents, the game's parameters (pool units)
    and the sampling settings. The run seed derives from ``seed`` and ``simulation``.

    Condition-defining settings: ``condition``, ``role_labels``, every ``game`` field,
    ``llm.temperature``, ``llm.max_tokens``, ``llm.reasoning_effort``; ``talk``,
    ``talk_turns``, ``talk_max_chars`` and ``interviews`` when set away from their
    defaults (then also written to the manifest; off, a run is recorded as before they
    existed); with ``seats``
    the composition (``composition``, ``seats``: each agent's model and sampling
    settings), with ``newcomer`` its settings (``newcomer.*``). The model is recorded
    per agent and is a separate axis of every table.

    Seat keys (:mod:`scarce_lab.config.seats` states the spelling): ``a0 .. a{n-1}`` (and the
    newcomer's ``a{n}``), the leader's role (``king``/``boss``) or ``leader``, the
    subordinates' role (``worker``/``peasant``/``citizen``), ``newcomer``, ``*``.
    Most specific first, field by field: agent id, ``newcomer``, role, ``*``, then
    ``model`` and ``llm``. A seat's role alias is its role when it first plays.
    """

    ENVIRONMENT: ClassVar[str] = "sovsim"
    CONDITION_FIELDS: ClassVar[tuple[str, ...]] = (
        "condition", "role_labels", "game.*", "llm.temperature", "llm.max_tokens", "llm.reasoning_effort",
    )
    LABEL_FIELD: ClassVar[str] = "condition"
    SWEEP_FIELDS: ClassVar[tuple[str, ...]] = ("condition", "model")
    REPLICATE_FIELD: ClassVar[str] = "simulation"
    OPTIONAL_CONDITION_FIELDS: ClassVar[tuple[str, ...]] = ("talk", "talk_turns", "talk_max_chars", "interviews",
                                                            *INSTITUTION_FIELDS)
    HUMAN_SEATS: ClassVar[bool] = True

    condition: Condition = Field(
        Condition.cpr, description="power condition: cpr (symmetric), bcpr (boss), kcpr (king), kcpr_m (king who may misreport the pool)"
    )
    model: str = Field(
        EMBEDDED_MODEL, min_length=1,
        description="model for every agent (every seat that `seats` does not set): a litellm model, "
        "embedded/smollm2 or scripted/<policy>[:arg]",
    )
    simulation: int = Field(0, ge=0, description="simulation index within the sweep (0-based)")
    seed: int = Field(0, description="sweep seed; each simulation derives its run seed from it")
    role_labels: Literal["default", "neutral"] = Field(
        "default", description="role names in prompts: the paper's (citizen, boss, king...) or neutral ones"
    )
    game: CommonsConfig = Field(default_factory=CommonsConfig, description="game parameters (pool units)")
    llm: SovSimLLM = Field(default_factory=SovSimLLM, description="model client settings")
    seats: dict[str, SeatSettings] = Field(
        default_factory=dict,
        description="per-seat model and settings (config.seats): keys a0..a{n-1}, the leader's role (king/boss) "
        "or leader, the subordinates' role (worker/peasant/citizen), newcomer, or '*'; e.g. "
        "{king: openai/gpt-4o, '*': embedded/smollm2}",
    )
    newcomer: NewcomerRule | None = Field(
        None, description="an outsider joins at round k: {round: k, mode: extra|replace, replaces: a0, "
        "leader: incumbent|newcomer} (None: nobody joins, the paper's game)",
    )

    # -- seats and newcomer (both off by default: today's configs dump, hash and run as before)
    @field_validator("seats", mode="before")
    @classmethod
    def _parse_seats(cls, v: Any) -> dict[str, SeatSettings]:
        return parse_seats(v)

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: Any) -> dict[str, Any]:
        """The config as data, without ``seats`` when empty and ``newcomer`` when off
        (a config that uses neither dumps as before they existed); seat settings
        without their unset fields."""
        out = handler(self)
        if not self.seats:
            out.pop("seats", None)
        else:
            out["seats"] = {k: v.model_dump(exclude_none=True) for k, v in self.seats.items()}
        if self.newcomer is None:
            out.pop("newcomer", None)
        return self._omit_optional(out)  # talk and interviews at their defaults too

    @model_validator(mode="after")
    def _seats_fit_the_game(self) -> SovSimConfig:
        """Refuse a seat key this game has no seat for (a typo would leave the seat on
        ``model``), a newcomer rule the game cannot play, and a per-seat sampling setting litellm would not send to
        the seat's model (unless ``llm.allow_ignored_settings``)."""
        if self.newcomer is not None:
            self.newcomer.check_game(self.condition, self.game)
            nc = self.newcomer
            if (nc.mode == "replace" and nc.leader == "newcomer" and self.condition != Condition.cpr
                    and nc.replaces == f"a{self.game.n_agents - 1}"):
                # replacing the leader seats the newcomer as leader with either spelling (the same
                # game, event for event): one spelling, so one condition and run id; not setattr
                # (validate_assignment would re-run this validator)
                self.__dict__["newcomer"] = nc.model_copy(update={"leader": "incumbent"})
        if not self.seats:
            return self
        check_seat_keys(self.seats, self.seat_keys())
        from ...llm.params import ignored_settings

        for agent, s in self.resolved_seats().items():
            asked = {k: getattr(s, k) for k in ("temperature", "max_tokens", "reasoning_effort")
                     if any(getattr(self.seats[key], k) is not None for key in self._keys_of(agent))}
            gone = ignored_settings(s.model, asked) if s.model and not calls_no_model(s.model) else {}
            if gone and not self.llm.allow_ignored_settings:
                names = ", ".join(f"{k}={v!r}" for k, v in gone.items())
                raise ValueError(f"seats: {names} of seat {agent} would not be sent to model {s.model!r} (litellm "
                                 "drops it for that model); leave it out, or set llm.allow_ignored_settings=true")
        return self

    def agent_ids(self) -> list[str]:
        """Every agent who plays: ``a0 .. a{n-1}`` (leader last outside ``cpr``), then
        the newcomer ``a{n}`` when one joins."""
        ids = [f"a{i}" for i in range(self.game.n_agents)]
        if self.newcomer is not None:
            ids.append(self.newcomer.newcomer_id(self.game))
        return ids

    def seat_roles(self) -> dict[str, str]:
        """Agent id -> its role when it first plays (the newcomer's: the role it joins
        in, see :class:`~scarce_lab.environments.sovsim.world.commons.NewcomerRule`)."""
        sub, lead = ROLES[self.condition]
        ids = self.agent_ids()
        n = self.game.n_agents
        out = {a: (lead if (i == n - 1 and self.condition != Condition.cpr) else sub)
               for i, a in enumerate(ids[:n])}
        if self.newcomer is not None:
            nc = self.newcomer
            leader = ids[n - 1] if self.condition != Condition.cpr else None
            is_lead = nc.leader == "newcomer" or (nc.mode == "replace" and nc.replaces == leader)
            out[ids[n]] = lead if is_lead and leader is not None else sub
        return out

    def seat_aliases(self, agent: str) -> list[str]:
        """Seat keys other than the id that name ``agent``, most specific first (the
        class docstring's seat keys)."""
        sub, lead = ROLES[self.condition]
        out = ["newcomer"] if self.newcomer is not None and agent == self.agent_ids()[-1] else []
        role = self.seat_roles()[agent]
        if self.condition != Condition.cpr and role == lead:
            out += [lead, "leader"]
        else:
            out.append(sub)
        return out

    def _keys_of(self, agent: str) -> list[str]:
        return [k for k in (agent, *self.seat_aliases(agent), "*") if k in self.seats]

    def seat_keys(self) -> list[str]:
        """The seat keys of this game: agent ids, role aliases, ``newcomer`` (with a
        newcomer) and ``*``."""
        keys = set(self.agent_ids())
        for a in self.agent_ids():
            keys.update(self.seat_aliases(a))
        return sorted(keys | {"*"})

    def default_seat(self) -> SeatSettings:
        """What a seat runs with when ``seats`` sets nothing: ``model`` and the ``llm``
        sampling settings."""
        return SeatSettings(model=self.model, temperature=self.llm.temperature, max_tokens=self.llm.max_tokens,
                            reasoning_effort=self.llm.reasoning_effort)

    def resolved_seats(self) -> dict[str, SeatSettings]:
        """Agent id -> the settings it runs with (:func:`~scarce_lab.config.seats.resolve_seat`:
        agent id, then ``newcomer``, then its role, then ``*``, then :meth:`default_seat`),
        for every agent of :meth:`agent_ids`. These are the settings sent with the
        agent's calls."""
        default = self.default_seat()
        return {a: resolve_seat(self.seats, a, self.seat_aliases(a), default=default) for a in self.agent_ids()}

    def scripted_names(self, field: str) -> tuple[str, ...]:
        """Every seat plays the SovSim policies (:data:`.agents.scripted.POLICIES`, and
        ``fixed[:<N>]``)."""
        from .agents.scripted import POLICIES

        return (*POLICIES, "fixed")

    def human_refused(self, field: str) -> str | None:
        """Any SovSim seat may be a person (leader or not: extraction, announcement,
        talk)."""
        return None

    def seat_models(self) -> dict[str, str]:
        """Agent id -> model string."""
        return {a: s.model or self.model for a, s in self.resolved_seats().items()}

    def llm_models(self) -> list[str]:
        """Every seat's model that calls the client (``scripted/`` ones left out), once
        each, in seat order (so cost caps and the ignored-settings check cover each)."""
        if not self.seats:
            return super().llm_models()
        return [m for m in dict.fromkeys(self.seat_models().values()) if not calls_no_model(m)]

    def seat_condition(self) -> dict[str, dict[str, Any]]:
        """Agent id -> the condition-defining part of its seat: the model, and for a
        model-driven seat its sampling settings (a setting litellm drops for the model
        reads "not sent")."""
        from ...llm.params import NOT_SENT, ignored_settings

        out: dict[str, dict[str, Any]] = {}
        for a, s in self.resolved_seats().items():
            d = s.model_dump(exclude_none=True)
            if calls_no_model(s.model or ""):
                d = {"model": s.model}
            else:
                for k in ignored_settings(s.model or "", {k: v for k, v in d.items() if k != "model"}):
                    d[k] = NOT_SENT
            out[a] = d
        return out

    def is_mixed(self) -> bool:
        """Whether the seats run different models or settings (a mixed population); a
        ``seats`` that gives every seat the same is the game of ``model`` + ``llm`` set
        to it, with the same condition settings and run id."""
        return len({json.dumps(v, sort_keys=True) for v in self.seat_condition().values()}) > 1 if self.seats else False

    def composition(self) -> str:
        """The readable composition label (:func:`~scarce_lab.config.seats.composition_label`):
        seats named by role for the leader and ``newcomer`` for the newcomer; a seat's
        sampling settings appear only where they differ from the ``llm`` ones."""
        default = self.default_seat()
        shown = {}
        for a, s in self.resolved_seats().items():
            d = {k: v for k, v in s.model_dump(exclude_none=True).items()
                 if k == "model" or getattr(default, k, None) != v}
            if calls_no_model(s.model or ""):
                d = {"model": s.model}
            shown[a] = SeatSettings(**d)
        names = {}
        roles = self.seat_roles()
        _, lead = ROLES[self.condition]
        for a in shown:
            if self.newcomer is not None and a == self.agent_ids()[-1]:
                names[a] = "newcomer"
            elif self.condition != Condition.cpr and roles[a] == lead and a == f"a{self.game.n_agents - 1}":
                names[a] = lead
        return composition_label(shown, names)

    def condition_settings(self) -> dict[str, Any]:
        """:meth:`ExperimentConfig.condition_settings`, plus (only when set, so other
        games keep theirs) ``composition`` (the readable label) and ``seats`` (agent id ->
        :meth:`seat_condition`) for a mixed population (:meth:`is_mixed`; seats that are
        all alike set ``llm.*`` instead, as ``model`` + ``llm`` would), and ``newcomer.*``
        (the join's round, mode, replaced agent and leader position)."""
        out = super().condition_settings()
        if self.seats:
            per_seat = self.seat_condition()
            if self.is_mixed():
                out["composition"] = self.composition()
                out["seats"] = per_seat
            else:  # every seat alike: the same condition as `model` + `llm` set to it
                one = next(iter(per_seat.values()))
                llm_keys = [k for k in self.CONDITION_FIELDS if k.startswith("llm.")]
                for k in llm_keys:
                    out.pop(k, None)
                if not calls_no_model(one["model"]):
                    out.update({k: one.get(k[4:]) for k in llm_keys})
                order = list(dict.fromkeys([*super().condition_settings(), *out]))
                out = {k: out[k] for k in order if k in out}
        if self.newcomer is not None:
            out.update({f"newcomer.{k}": v for k, v in self.newcomer.model_dump(mode="json").items()})
        return out

    def condition_label(self) -> str:
        """:meth:`ExperimentConfig.condition_label` with the composition shown by its
        readable label (``seats`` holds the same, per agent)."""
        from ...data.tables import label_value

        head = [str(self.condition_settings()[self.LABEL_FIELD])]
        extra = [f"{k.split('.')[-1] if k != 'composition' else k}={label_value(v)}"
                 for k, v in self.label_settings().items() if k != "seats" and not k.startswith("newcomer.")]
        if (nc := self.newcomer) is not None:  # e.g. newcomer=replace:a0@3, newcomer=extra@3:leader
            extra.append(f"newcomer={nc.mode}{':' + nc.replaces if nc.replaces else ''}@{nc.round}"
                         + (":leader" if nc.leader == "newcomer" else ""))
        return ",".join(head + extra + self.fork_label())
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
    # institutions (world/institutions.py states each rule and its source); all off: the paper's game
    sanctions: bool = Field(False, description="peer sanctions after each round: costly punishment points")
    sanction_cost: int = Field(1, ge=1, description="points a punishment point costs its sender (with sanctions)")
    sanction_impact: int = Field(3, ge=1, description="points a punishment point removes from its target")
    sanction_max_points: int = Field(10, ge=1, description="most points per target and round (with sanctions)")
    quota: Literal["off", "all", "leader"] = Field(
        "off", description="a vote on a quota before each round's extractions (the lower median of the "
                           "proposals binds): off, all (every agent's cap) or leader (the leader's cap)")
    elections: int = Field(0, ge=0, description="elect the leader every N rounds (boss/king conditions; 0: never)")

    @model_validator(mode="after")
    def _talk_settings_need_talk(self) -> SovSimConfig:
        """Refuse ``talk_turns``/``talk_max_chars`` set away from their defaults with
        ``talk=none``: they would split conditions that play the same game."""
        if self.talk != TalkMode.none and self.newcomer is not None:
            raise ValueError(f"talk={self.talk.value!r} with newcomer={self.newcomer.model_dump(mode='json')}: a "
                             "discussion in a game whose membership changes is not built yet (the talk turns and "
                             "prompts assume the seats of round 1); run talk or a newcomer, not both")
        if self.talk == TalkMode.none:
            for name in ("talk_turns", "talk_max_chars"):
                if getattr(self, name) != type(self).model_fields[name].default:
                    raise ValueError(f"{name}={getattr(self, name)!r} needs talk=public or talk=public+private "
                                     "(with talk=none there is no discussion)")
        return self

    @model_validator(mode="after")
    def _institutions_fit(self) -> SovSimConfig:
        """The institutions' own checks (:meth:`InstitutionRules.check_config`)."""
        self.institution_rules().check_config(self.condition.value, self.game.rounds, self.newcomer is not None)
        return self

    def institution_rules(self) -> InstitutionRules:
        """The institutions for :class:`~scarce_lab.environments.sovsim.world.commons.CommonsGame`."""
        return InstitutionRules(**{k: getattr(self, k) for k in INSTITUTION_FIELDS})

    def talk_rules(self) -> TalkRules:
        """The discussion's rules for :class:`~scarce_lab.environments.sovsim.world.commons.CommonsGame`."""
        return TalkRules(self.talk, self.talk_turns, self.talk_max_chars)

    @property
    def run_id(self) -> str:
        """``sovsim-<condition>-<model slug>[-<hash>]-s<seed>-<simulation>[-fork<j>]``; the 8-hex
        hash of the condition settings appears when any differs from its default (the
        composition and the newcomer included); the model slug reads ``mixed`` when the
        seats run different models."""
        changed = self.non_default_settings()
        extra = ""
        if changed:
            extra = "-" + hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()[:8]
        models = set(self.seat_models().values()) if self.seats else {self.model}
        slug = model_slug(next(iter(models))) if len(models) == 1 else "mixed"
        return f"sovsim-{self.condition.value}-{slug}{extra}-s{self.seed}-{self.simulation}{self.fork_tag()}"

    @property
    def run_seed(self) -> int:
        """The run's seed, derived from the sweep seed and the simulation index."""
        from ...runtime import derive_seed

        return derive_seed("sovsim", self.seed, self.simulation)
