"""Base of every environment's config: one pydantic model declares each setting once.

From an environment's config model derive:

- the CLI options (``scarce_lab.cli._options`` builds typer options from the fields,
  their types, defaults and descriptions), and ``--config FILE`` / ``-S key=value``;
- the manifest's ``config`` (:meth:`ExperimentConfig.model_dump`);
- the manifest's ``condition_settings`` (:meth:`ExperimentConfig.condition_settings`,
  the fields named in ``CONDITION_FIELDS``) and the readable ``condition`` label
  (:meth:`ExperimentConfig.condition_label`); analysis reads the settings from the
  manifest, so tables never pool runs whose settings differ.

Size: the config model, its checks and the reading of files and ``-S`` overrides in one
module; a fork's config after its intervention (:meth:`ExperimentConfig.after_intervention`)
is here too because configs already know forks (``ForkSpec``): the reverse import would be
a cycle.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_serializer,
    model_validator,
)

from ..data.schema import calls_no_model, is_human, is_scripted
from ..data.tables import DERIVED, fork_label, label_value
from ..data.yamlcore import load_yaml
from ..forks import ForkSpec
from ..llm.human import DEFAULT_TIME_LIMIT_S as HUMAN_TIME_LIMIT_S


class ConfigError(ValueError):
    """A config could not be built; the message names the field, the value and where it
    came from (a file, an option or a ``-S`` override)."""


class ChainTag(BaseModel):
    """Where a run stands in a selection chain (:mod:`scarce_lab.runners.selection`):
    ``chain`` (0-based index of the chain in its output folder), ``generation``
    (0-based) and ``rule`` (``replicator`` or ``eom``). Every field is a condition
    setting, so each generation of each chain is its own condition and run id (never
    pooled across generations). Set by the selection planner, not by hand."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    chain: int = Field(ge=0, description="the chain's index in its output folder")
    generation: int = Field(ge=0, description="the generation (0 = the initial assignment)")
    rule: str = Field(min_length=1, description="the selection rule between generations")


class ExperimentConfig(BaseModel):
    """Base class: closed (unknown fields are errors), validated on assignment.

    Subclasses set:
        ENVIRONMENT: the environment name (``sovsim``, ``scarce``, ``economy``).
        CONDITION_FIELDS: dotted field paths that define a condition (a path ending in
            ``.*`` takes every field of a sub-model).
        LABEL_FIELD: the field whose value starts the condition label.
        OPTIONAL_CONDITION_FIELDS: top-level fields added after runs were recorded
            without them: condition-defining only when set away from their default,
            and left out of dumps (manifests) at their default, so a run with the
            setting off is recorded byte for byte as before the setting existed.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_enum_values=False)

    ENVIRONMENT: ClassVar[str] = ""
    CONDITION_FIELDS: ClassVar[tuple[str, ...]] = ()
    LABEL_FIELD: ClassVar[str | None] = None
    OPTIONAL_CONDITION_FIELDS: ClassVar[tuple[str, ...]] = ()
    #: whether some seat of the environment can be a person's (``human/<name>``;
    #: :meth:`human_refused` says which and why not)
    HUMAN_SEATS: ClassVar[bool] = False

    fork: ForkSpec | None = Field(
        None, description="a counterfactual fork of a recorded run (scarce_lab.forks): parent run id, its digest, "
        "the step, the seed (0: the parent's) and the intervention; set by `scarce-lab fork`, not by hand")
    human_time_limit_s: float = Field(
        HUMAN_TIME_LIMIT_S, gt=0, le=86400,
        description="seconds a person (a human/<name> seat) has for each decision; then the decision's documented "
        "fallback is played (outcome human_timeout). Only with a human seat")
    chain: ChainTag | None = Field(
        None, description="the run's place in a selection chain (chain, generation, rule); set by the selection "
        "runner (scarce_lab.runners.selection), not by hand")

    @model_serializer(mode="wrap")
    def _omit_optional_at_default(self, handler: Any) -> Any:
        """Leave each :attr:`OPTIONAL_CONDITION_FIELDS` field out of a dump while it
        holds its default (see the class docstring)."""
        return self._omit_optional(handler(self))

    def _omit_optional(self, data: Any) -> Any:
        """``data`` (a dump) without the :attr:`OPTIONAL_CONDITION_FIELDS` at their
        default; a subclass with its own ``model_serializer`` (which replaces this
        class's) calls it."""
        if isinstance(data, dict):
            for name in ("fork", "chain"):  # none: dumped as before forks and chains existed
                if name in data and data[name] is None:
                    del data[name]
            if data.get("human_time_limit_s") == HUMAN_TIME_LIMIT_S:  # dumped as before human seats existed
                del data["human_time_limit_s"]
            for name in self.OPTIONAL_CONDITION_FIELDS:
                if name in data and getattr(self, name) == type(self).model_fields[name].default:
                    del data[name]
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _booleans_are_not_numbers(cls, data: Any, handler: Any) -> Any:
        """Refuse a boolean given for a number anywhere in the config (pydantic's lax
        mode would play ``rounds=true`` as 1 round): the policy of model decisions
        (:mod:`scarce_lab.llm.decisions`) applied to settings."""
        model = handler(data)
        if isinstance(data, dict):
            found = boolean_as_number(data, model)
            if found:
                path, value = found
                raise ValueError(f"{path}: {value!r} is a boolean, not a number")
        return model

    @model_validator(mode="after")
    def _settings_reach_the_models(self) -> ExperimentConfig:
        """Refuse, before anything runs:

        - a condition setting the user set (``llm.temperature``, ``llm.max_tokens``,
          ``llm.reasoning_effort``) that litellm would not send to a model (e.g.
          temperature for ``openai/o3-mini``), unless ``llm.allow_ignored_settings``;
          either way, and for settings left at their defaults, the condition records it
          as "not sent" (so ``--model openai/gpt-5`` runs with its defaults);
        - a dollar cap (``llm.max_cost_usd``, ``llm.sweep_max_cost_usd``) on a model
          whose price is unknown (:func:`scarce_lab.llm.costs.price_of`), unless
          ``llm.prices`` gives one.
        """
        llm = getattr(self, "llm", None)
        if llm is None:
            return self
        asked = getattr(llm, "model_fields_set", set())  # what the user set; defaults are recorded "not sent"
        for model in self.llm_models():
            ignored = {k: v for k, v in self.ignored_settings(model).items() if k in asked}
            if ignored and not getattr(llm, "allow_ignored_settings", False):
                names = ", ".join(f"llm.{k}={v!r}" for k, v in ignored.items())
                raise ValueError(
                    f"llm: {names} would not be sent to model {model!r} (litellm drops it for that model), so runs "
                    f"that differ in it would be the same condition; leave it at its default, or set "
                    f"llm.allow_ignored_settings=true to run with it recorded as 'not sent'")
            capped = getattr(llm, "max_cost_usd", None) or getattr(llm, "sweep_max_cost_usd", None)
            if capped:
                from ..llm.costs import price_of

                if price_of(model, llm.api_base, llm.prices) is None:
                    raise ValueError(
                        f"llm.max_cost_usd: model {model!r} has no known price (litellm lists none"
                        + (f", or it is served at {llm.api_base}" if llm.api_base else "")
                        + "); give one in llm.prices (USD per million tokens: "
                        f"-S 'llm.prices={{\"{model}\": {{\"input_per_mtok\": 1, \"output_per_mtok\": 2}}}}')")
        return self

    @model_validator(mode="after")
    def _human_seats_allowed(self) -> ExperimentConfig:
        """Refuse, naming the field: a ``human/<name>`` where the environment seats no
        person (:meth:`human_refused` says why), one person in two seats (a person
        plays one seat of a game), a fork with a person (its prefix replays recorded
        model answers; a person's are none), and ``human_time_limit_s`` set without a
        human seat (a setting that would change nothing)."""
        from ..llm.models import person_of

        where: dict[str, list[str]] = {}
        for field, model in self._model_fields():
            if not is_human(model):
                continue
            try:
                person_of(model)
            except ValueError as exc:
                raise ValueError(f"{field}: {exc}") from None
            why = self.human_refused(field)
            if why:
                raise ValueError(f"{field}: {model!r}: {why}")
            where.setdefault(model, []).append(field)
        for model, fields in where.items():
            seats = [f for f in fields if f.startswith("seats.")] or fields
            if len(seats) > 1:
                raise ValueError(f"{seats[0]}: {model!r} sits in {', '.join(seats)}: a person plays one seat of a game "
                                 "(give the others another model, or another person's name)")
        if where and self.fork is not None:
            raise ValueError(f"fork: {next(iter(where.values()))[0]} is {next(iter(where))!r}: a fork replays its "
                             "parent's recorded model answers, and a person's answers are no model calls to replay")
        if not where and self.human_time_limit_s != HUMAN_TIME_LIMIT_S:
            raise ValueError(f"human_time_limit_s: {self.human_time_limit_s!r} is set, but no seat is a person "
                             "(human/<name>): it would change nothing")
        return self

    def human_refused(self, field: str) -> str | None:
        """Why the seat ``field`` (``model``, ``seats.a1``, ``seats.w1.negotiator``)
        cannot be a person, ``None`` when it can. The base seats no person; an
        environment that has human seats overrides it."""
        return f"{self.ENVIRONMENT or type(self).__name__} has no human seats"

    def human_seats(self) -> dict[str, str]:
        """Seat (agent id, or ``<worker>.<part>``) -> ``human/<name>`` of every seat a
        person plays (``{}`` for none)."""
        seat_models = getattr(self, "seat_models", None)
        models = seat_models() if callable(seat_models) else {}
        return {a: m for a, m in models.items() if is_human(m)}

    @model_validator(mode="after")
    def _scripted_names_known(self) -> ExperimentConfig:
        """Refuse, like an unknown model, a ``scripted/<name>`` this environment has no
        policy ``<name>`` for, in any field that names a model (``model``,
        ``negotiator_model``, every seat): a typo would otherwise run some default
        routine recorded under the typo. The names come from :meth:`scripted_names`. A
        default left unset is not checked here (the Economy's ``scripted/random-rules``
        on a question task): the preflight refuses it if it is run."""
        from ..llm.models import scripted_policy

        for field, model in self._model_fields():
            if not model or not is_scripted(model) or (field in type(self).model_fields
                                                       and field not in self.model_fields_set):
                continue
            try:
                policy, _ = scripted_policy(model)
            except ValueError as exc:
                raise ValueError(f"{field}: {exc}") from None
            known = self.scripted_names(field)
            if policy not in known:
                raise ValueError(f"{field}: {model!r} names no scripted policy of {self.ENVIRONMENT or type(self).__name__}"
                                 f" here; known: {', '.join('scripted/' + k for k in known) or 'none'}")
        return self

    def scripted_names(self, field: str) -> tuple[str, ...]:
        """The scripted policies (``scripted/<name>``, without an argument) that the
        model named in ``field`` (``model``, ``negotiator_model``, ``seats.<seat>``)
        can be in this config. An environment with scripted policies overrides it; the
        base knows none, so every scripted name is refused."""
        return ()

    def llm_models(self) -> list[str]:
        """The model strings that call the client (``scripted/`` and ``human/`` ones left out)."""
        m = getattr(self, "model", None)
        return [m] if isinstance(m, str) and not calls_no_model(m) else []

    def ignored_settings(self, model: str) -> dict[str, Any]:
        """The condition settings ``llm.<name>`` litellm would not send to ``model``:
        name -> requested value (:func:`scarce_lab.llm.params.ignored_settings`)."""
        llm = getattr(self, "llm", None)
        from ..llm.models import is_embedded

        if llm is None or is_scripted(model) or is_embedded(model):
            return {}
        from ..llm.params import CONDITION_PARAMS, ignored_settings

        wanted = {k[4:] for k in self.CONDITION_FIELDS if k.startswith("llm.")} & set(CONDITION_PARAMS)
        return ignored_settings(model, {k: getattr(llm, k, None) for k in sorted(wanted)})

    def _mark_not_sent(self, out: dict[str, Any]) -> dict[str, Any]:
        """Condition settings with each ``llm.<name>`` no model receives recorded as
        "not sent" (runs that differ only in it sent the same requests)."""
        from ..llm.params import NOT_SENT

        models = self.llm_models()
        if not models:
            return out
        gone = set.intersection(*(set(self.ignored_settings(m)) for m in models))
        return out | {f"llm.{name}": NOT_SENT for name in gone if f"llm.{name}" in out}

    # -- conditions ----------------------------------------------------------------
    def after_intervention(self, intervention: Any, seat: Any) -> ExperimentConfig:
        """The config a fork's play follows from the fork step on: this config (without
        ``fork``) with a ``rule``'s dotted setting set as ``-S`` sets it
        (:func:`set_dotted`) or a ``seat_model``'s seat changed by the environment's
        ``seat(data, intervention)`` (it edits the config dump in place: how a seat is
        written is the environment's), validated as every config is; this config itself
        for the other kinds (:mod:`scarce_lab.forks`).

        Raises:
            scarce_lab.forks.ForkError: the config refuses the value (the message names
                the setting or seat and the value).
        """
        from ..forks import ForkError

        if intervention.kind not in ("rule", "seat_model"):
            return self
        data = self.model_dump(mode="json", exclude={"fork"})
        if intervention.kind == "rule":
            set_dotted(data, intervention.setting, intervention.value)
            what = f"rule {intervention.setting}={intervention.value!r}"
        else:
            seat(data, intervention)
            what = f"seat {intervention.seat}={intervention.model!r}"
        try:
            return type(self).model_validate(data)
        except (ValidationError, ValueError) as exc:
            raise ForkError(f"{what}: {exc}") from exc

    def condition_settings(self) -> dict[str, Any]:
        """Every condition-defining setting as ``dotted.name -> JSON value`` (the model
        client's sampling settings are left out for ``scripted/`` models, which they do
        not affect).

        Raises:
            KeyError: a ``CONDITION_FIELDS`` entry names no field (a bug in the config).
        """
        flat = flatten(self.model_dump(mode="json"))
        if is_scripted(getattr(self, "model", None)):
            # sampling settings do not shape a scripted policy's trajectory
            flat = {k: v for k, v in flat.items() if not k.startswith("llm.")}
        out: dict[str, Any] = {}
        for path in self.CONDITION_FIELDS:
            if path.startswith("llm.") and not any(k.startswith("llm.") for k in flat):
                continue
            if path.endswith(".*"):
                prefix = path[:-1]
                keys = [k for k in flat if k.startswith(prefix) or k == path[:-2]]
                if not keys:
                    raise KeyError(f"{type(self).__name__}.CONDITION_FIELDS: no field under {path!r}")
                out.update({k: flat[k] for k in keys})
            else:
                if path not in flat:
                    raise KeyError(f"{type(self).__name__}.CONDITION_FIELDS: no field {path!r}")
                out[path] = flat[path]
        for name in (*self.OPTIONAL_CONDITION_FIELDS, "human_time_limit_s"):  # only when set away from the default
            if name in flat:
                out[name] = flat[name]
        # a fork: its step and intervention (parent, digest and seed are replicates' details)
        out.update({k: v for k, v in flat.items() if k == "fork.at" or k.startswith("fork.intervention.")})
        # a selection chain: chain, generation and rule (each generation its own condition)
        out.update({k: v for k, v in flat.items() if k.startswith("chain.")})
        if out.get("interviews") is True and any(not is_scripted(m) for _, m in self.played_models()):
            # an interview is a call with its own answer budget: recorded, so that the record
            # gate (data/sent.py) finds what each interview call sends
            from ..agents.interviews import MAX_TOKENS

            out["purpose_max_tokens"] = {**(out.get("purpose_max_tokens") or {}), "interview": MAX_TOKENS}
        return self._mark_not_sent(out)

    def played_models(self) -> list[tuple[str, str]]:
        """``(field, model)`` of every model this config plays (scripted ones included),
        each model once, under the first field that names it: ``model``,
        ``negotiator_model``, then ``seats.<agent id>`` (the config's ``seat_models()``,
        where it has seats)."""
        first: dict[str, str] = {}
        for name, model in self._model_fields():
            if model:
                first.setdefault(model, name)
        return [(name, model) for model, name in first.items()]

    def _model_fields(self) -> list[tuple[str, str | None]]:
        """Every ``(field, model)``, repeats included (:meth:`played_models`)."""
        seat_models = getattr(self, "seat_models", None)
        return [("model", getattr(self, "model", None)), ("negotiator_model", getattr(self, "negotiator_model", None)),
                *((f"seats.{a}", m) for a, m in (seat_models() if callable(seat_models) else {}).items())]

    def non_default_settings(self) -> dict[str, Any]:
        """The condition settings (except ``LABEL_FIELD``) that differ from the
        config's defaults."""
        defaults = self.condition_settings_defaults()
        return {k: v for k, v in sorted(self.condition_settings().items())
                if k != self.LABEL_FIELD and defaults.get(k) != v}

    def condition_label(self) -> str:
        """A readable label: the ``LABEL_FIELD`` value, then every other condition
        setting that differs from the config's default, as ``name=value`` (sorted)."""
        head = [str(self.condition_settings()[self.LABEL_FIELD])] if self.LABEL_FIELD else []
        extra = [f"{k.split('.')[-1]}={label_value(v)}" for k, v in self.label_settings().items()]
        return ",".join(head + extra + self.fork_label()) or "default"

    def fork_label(self) -> list[str]:
        """``["fork@<at>:<intervention>"]`` for a fork (:mod:`scarce_lab.forks`), else
        ``[]``: the last part of every environment's condition label."""
        return [] if self.fork is None else [fork_label(flatten({"fork": self.fork.model_dump(mode="json")}))]

    def fork_tag(self) -> str:
        """What a fork adds to its run id after the parent's: ``-fork<seed>`` (forks of
        one parent, step and intervention differ only in the seed), ``""`` without one."""
        return "" if self.fork is None else f"-fork{self.fork.seed}"

    #: Condition settings set by other settings (:data:`scarce_lab.data.tables.DERIVED`):
    #: compared like every setting, never shown in a label.
    DERIVED_SETTINGS: ClassVar[tuple[str, ...]] = DERIVED

    def label_settings(self) -> dict[str, Any]:
        """:meth:`non_default_settings` without the :attr:`DERIVED_SETTINGS` (what every
        environment's :meth:`condition_label` shows)."""
        return {k: v for k, v in self.non_default_settings().items()
                if not k.startswith(self.DERIVED_SETTINGS) and not k.startswith("fork.")}

    def condition_settings_defaults(self) -> dict[str, Any]:
        """:meth:`condition_settings` of a config with every field at its default (for
        fields without a default, the value of this config)."""
        base = {name: getattr(self, name, None) for name, f in type(self).model_fields.items() if f.is_required()}
        try:
            return type(self).model_validate(base).condition_settings()
        except ValidationError:
            return {}


def boolean_as_number(raw: Any, built: Any, path: str = "") -> tuple[str, bool] | None:
    """The first ``(dotted path, value)`` where ``raw`` holds a boolean and the
    validated ``built`` a number (pydantic's lax mode made ``True`` a 1); ``None`` when
    there is none. Used for configs and notebook parameters alike."""
    if isinstance(raw, bool):
        return (path.rstrip("."), raw) if isinstance(built, int | float) and not isinstance(built, bool) else None
    if isinstance(raw, dict):
        for k, v in raw.items():
            sub = getattr(built, k, None) if isinstance(built, BaseModel) else (
                built.get(k) if isinstance(built, dict) else None)
            if (found := boolean_as_number(v, sub, f"{path}{k}.")) is not None:
                return found
    if isinstance(raw, list | tuple) and isinstance(built, list | tuple) and len(raw) == len(built):
        for i, (v, b) in enumerate(zip(raw, built, strict=True)):
            if (found := boolean_as_number(v, b, f"{path}{i}.")) is not None:
                return found
    return None


def flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> ``{"a.b": value}`` (lists and scalars are leaves)."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and all(isinstance(x, str) for x in v):
            sub = flatten(v, key + ".")
            if sub:
                out.update(sub)
                continue
        out[key] = v.value if isinstance(v, Enum) else v
    return out


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """``data["a"]["b"] = value`` for ``key = "a.b"`` (creating dicts on the way)."""
    parts = key.split(".")
    cur = data
    for i, p in enumerate(parts[:-1]):
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            # a seat given as a model string, then a setting of it (-S seats.w0=m -S seats.w0.memory=none)
            nxt = {"model": nxt} if _seat_path(parts[:i + 1]) and isinstance(nxt, str) else {}
            cur[p] = nxt
        cur = nxt
    if _seat_path(parts) and isinstance(value, str) and isinstance(cur.get(parts[-1]), dict):
        cur[parts[-1]]["model"] = value  # the seat's model, its other settings kept
        return
    cur[parts[-1]] = value


def _seat_path(parts: list[str]) -> bool:
    """``seats.<key>`` or ``seats.<key>.<part>`` (:mod:`.seats`): where a model string and
    a mapping of settings are two spellings of one seat."""
    from .seats import SeatSettings

    return len(parts) in (2, 3) and parts[0] == "seats" and (len(parts) == 2 or parts[2] not in SeatSettings.model_fields)




def parse_override(text: str) -> tuple[str, Any]:
    """``"key=value"`` -> ``(key, value)``; the value is parsed by :func:`load_yaml`
    (so ``3``, ``0.7``, ``true``, ``[a, b]`` and ``{w0: 500}`` work; ``0120`` is 120)
    and kept as text otherwise.

    Raises:
        ConfigError: no ``=`` or an empty key.
    """
    import yaml

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"-S {text!r}: expected key=value (e.g. -S llm.temperature=0.7)")
    try:
        value = load_yaml(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def read_config_file(path: Path | str) -> dict[str, Any]:
    """A YAML, JSON or TOML config file as a dict.

    Raises:
        ConfigError: missing, unreadable, or not a mapping (path in the message).
    """
    import tomllib

    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    text = path.read_text(encoding="utf-8-sig")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else load_yaml(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'YAML/JSON'} ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return data


def build_config(
    cls: type[ExperimentConfig],
    *,
    file: Path | str | None = None,
    values: dict[str, Any] | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    file_ignore: tuple[str, ...] = (),
) -> ExperimentConfig:
    """Build ``cls`` from (lowest to highest precedence) its defaults, a config file,
    ``values`` (dotted keys allowed, e.g. from CLI options) and ``-S key=value``
    overrides. ``file_ignore``: top-level keys of the file that are not settings of
    one run (a run command's ``population:`` block, read by the cross-play planner).

    Raises:
        ConfigError: a bad file, an unknown field, or a value that does not validate
            (the message names the field, the value and where it came from).
    """
    data: dict[str, Any] = {}
    origin: dict[str, str] = {}
    if file is not None:
        raw = {k: v for k, v in read_config_file(file).items() if k not in file_ignore}
        for k, v in flatten(raw).items():
            set_dotted(data, k, v)
            origin[k] = str(file)
    for k, v in (values or {}).items():
        set_dotted(data, k, v)
        origin[k] = "option --" + k.replace("_", "-").replace(".", "-")
    for text in overrides:
        k, v = parse_override(text)
        set_dotted(data, k, v)
        origin[k] = f"-S {text}"
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, cls.__name__, origin)) from None


def describe_validation_error(exc: ValidationError, name: str, origin: dict[str, str] | None = None) -> str:
    """One line per error: ``field: message (got value) [from where]``."""
    lines = []
    import re

    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        msg = err["msg"]
        got = f" (got {err['input']!r:.80})" if "input" in err and err["type"] != "missing" else ""
        if not err["loc"] and (m := re.fullmatch(r"Value error, ([\w.]+): (.*)", msg, re.DOTALL)):
            loc, msg, got = m[1], m[2], ""  # a whole-config check that names its field
        src = (origin or {}).get(loc)
        lines.append(f"{name}.{loc}: {msg}{got}" + (f" [from {src}]" if src else ""))
    return "; ".join(lines)
