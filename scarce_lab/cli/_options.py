"""Typer options generated from an environment's config model (each setting declared
once, in :mod:`scarce_lab.config`).

Every leaf field of the config (recursing into sub-models such as ``game``, ``llm``,
``economy``) becomes an option: ``--<leaf name>`` (``--<parent>-<leaf>`` where two
sub-models share a leaf name), with the field's description and default as help.
Literals and enums become choices, booleans ``--x/--no-x`` flags. Sweep fields become
repeatable options (one run per value, cartesian product); dict fields are set with
``-S key=value``. Every run command also takes ``--config FILE`` (YAML, JSON or TOML),
``-S key=value`` (dotted keys, e.g. ``-S llm.temperature=0``) and ``--seat KEY=MODEL``
(repeatable; the same as ``-S seats.KEY=MODEL``: a model per seat, see
:mod:`scarce_lab.config.seats`).

Options left out keep the value from ``--config`` or the field's default; precedence:
default < file < option < ``-S``.
"""

from __future__ import annotations

import enum
import inspect
import itertools
import types
import typing
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from ..config.base import ConfigError, ExperimentConfig, build_config, parse_override

#: Settings without a generated option: the per-run dollar cap is ``-S llm.max_cost_usd=``
#: (``--max-cost-usd`` is the sweep's cap, :mod:`scarce_lab.cli._spend`), and the sweep's
#: cap and ledger are set by that option.
NOT_OPTIONS = frozenset({"llm.max_cost_usd", "llm.sweep_max_cost_usd", "llm.spend_ledger",
                         # a newcomer is one setting: -S newcomer.round=3 -S newcomer.mode=extra
                         "newcomer.round", "newcomer.mode", "newcomer.replaces", "newcomer.leader"})


@dataclass(frozen=True)
class Leaf:
    """One config field as a CLI option."""

    path: str  # dotted
    param: str  # python parameter name
    names: tuple[str, ...]  # option names
    annotation: Any
    choices: list[str] | None
    help: str
    multiple: bool = False


def _unwrap_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _leaves(cls: type[BaseModel], prefix: str = "") -> list[tuple[str, Any, Any]]:
    out = []
    for name, f in cls.model_fields.items():
        ann = _unwrap_optional(f.annotation)
        if _is_model(ann):
            out.extend(_leaves(ann, f"{prefix}{name}."))
        else:
            out.append((f"{prefix}{name}", ann, f))
    return out


def _choices(ann: Any) -> list[str] | None:
    if typing.get_origin(ann) is typing.Literal:
        return [str(v) for v in typing.get_args(ann)]
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        return [str(m.value) for m in ann]
    return None


def _scalar(ann: Any) -> tuple[Any, list[str] | None] | None:
    """(python annotation, choices) for a scalar field, or None when it has no option."""
    choices = _choices(ann)
    if choices is not None:
        return str, choices
    return (ann, None) if any(ann is t for t in (bool, int, float, str, Path)) else None


def config_leaves(
    cls: type[ExperimentConfig],
    *,
    aliases: dict[str, tuple[str, ...]] | None = None,
    exclude: tuple[str, ...] = (),
    extra_choices: dict[str, tuple[str, ...]] | None = None,
    defaults: dict[str, str] | None = None,
) -> list[Leaf]:
    """The options of ``cls`` (see the module docstring). ``aliases`` gives extra
    option names per dotted path (e.g. ``{"model": ("-m",)}``); ``extra_choices`` adds
    shorthand values to a choice (e.g. ``{"condition": ("all",)}``); ``defaults`` is
    the default the help states where a command sets one other than the field's
    (SovSim's ``condition``: ``all``)."""
    aliases = aliases or {}
    # a fork is made by `scarce-lab fork` (scarce_lab.forks), a chain by `scarce-lab select`, never by run options
    raw = [(p, a, f) for p, a, f in _leaves(cls)
           if p not in exclude and p not in NOT_OPTIONS and not p.startswith(("fork.", "chain."))]
    counts = Counter(p.rsplit(".", 1)[-1] for p, _, _ in raw)
    sweep = set(getattr(cls, "SWEEP_FIELDS", ()))
    out = []
    for path, ann, f in raw:
        multiple = path in sweep
        if typing.get_origin(ann) is list and not multiple:
            (item,) = typing.get_args(ann)
            multiple, ann = True, _unwrap_optional(item)
        sc = _scalar(ann)
        if sc is None:
            continue  # dicts and other structures: -S key=value
        py, choices = sc
        if choices is not None:
            choices = [*choices, *(extra_choices or {}).get(path, ())]
            py = enum.StrEnum("".join(p.capitalize() for p in path.replace(".", "_").split("_")) + "Choice",
                              {c: c for c in choices})
        leaf = path.rsplit(".", 1)[-1]
        name = leaf if counts[leaf] == 1 else path
        opt = "--" + name.replace(".", "-").replace("_", "-")
        default = f.get_default(call_default_factory=True) if not f.is_required() else None
        if isinstance(default, enum.Enum):
            default = default.value
        if defaults and path in defaults:
            default = defaults[path]
        desc = (f.description or "").rstrip(".")
        hint = " (repeatable: one run per value)" if path in sweep else (" (repeatable)" if multiple else "")
        help_text = f"{desc}{hint} (default: {default})" if default is not None else f"{desc}{hint}"
        out.append(Leaf(path, path.replace(".", "__"), (opt, *aliases.get(path, ())),
                        list[py] | None if multiple else py | None, choices, help_text, multiple))
    return out


def _option(leaf: Leaf) -> inspect.Parameter:
    flag = leaf.annotation == bool | None
    first = leaf.names[0]
    off = f"--{first[5:]}" if first.startswith("--no-") else f"--no-{first[2:]}"  # --no-x/--x, never --no-no-x
    names = (f"{first}/{off}", *leaf.names[1:]) if flag else leaf.names
    kw: dict[str, Any] = {"help": leaf.help, "show_default": False}
    ann = Annotated[leaf.annotation, typer.Option(*names, **kw)]
    return inspect.Parameter(leaf.param, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=None)


def common_parameters() -> list[inspect.Parameter]:
    """``--config FILE``, ``-S key=value`` and ``--seat KEY=MODEL``, shared by every run
    command."""
    return [
        inspect.Parameter("config_file", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            Path | None, typer.Option("--config", help="YAML, JSON or TOML file of settings (options override it)")]),
        inspect.Parameter("set_values", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            list[str] | None, typer.Option("--set", "-S", help="override a setting: key=value, dotted keys "
                                           "(e.g. -S llm.temperature=0 -S worker_budgets.w0=1500); repeatable")]),
        inspect.Parameter("seat_values", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            list[str] | None, typer.Option("--seat", help="a seat's model: KEY=MODEL, the same as -S seats.KEY=MODEL "
                                           "(KEY: an agent id, a role, newcomer or '*'; e.g. --seat king=openai/gpt-4o "
                                           "--seat '*=embedded/smollm2'); repeatable")]),
    ]


def seat_overrides(seats: list[str] | None) -> list[str]:
    """``--seat KEY=MODEL`` values as ``-S seats.KEY=MODEL`` overrides.

    Raises:
        ConfigError: a value without ``=``, or with an empty key or model (names it).
    """
    out = []
    for text in seats or []:
        key, sep, model = text.partition("=")
        if not sep or not key.strip() or not model.strip():
            raise ConfigError(f"--seat {text!r}: expected KEY=MODEL (e.g. --seat king=openai/gpt-4o)")
        out.append(f"seats.{key.strip()}={model.strip()}")
    return out


def with_signature(func, params: list[inspect.Parameter]):
    """Give ``func(**kwargs)`` an explicit signature that typer reads as its options."""
    func.__signature__ = inspect.Signature(params)
    return func


@dataclass
class Parsed:
    """What a generated command received: the explicit values (dotted paths), the
    sweep values and the ``--config`` / ``-S`` inputs."""

    values: dict[str, Any]
    sweep: dict[str, list[Any]]
    file: Path | None
    overrides: list[str]
    #: top-level keys of ``file`` that are not run settings (``population``)
    file_ignore: tuple[str, ...] = ()


def parse_kwargs(cls: type[ExperimentConfig], leaves: list[Leaf], kwargs: dict[str, Any]) -> Parsed:
    """Split a generated command's keyword arguments (options left out are None)."""
    sweep_fields = set(getattr(cls, "SWEEP_FIELDS", ()))
    values: dict[str, Any] = {}
    sweep: dict[str, list[Any]] = {}
    for leaf in leaves:
        v = kwargs.pop(leaf.param, None)
        if v is None or (leaf.multiple and not v):
            continue
        if leaf.multiple:
            v = [x.value if isinstance(x, enum.Enum) else x for x in v]
        elif isinstance(v, enum.Enum):
            v = v.value
        if leaf.path in sweep_fields:
            sweep[leaf.path] = list(dict.fromkeys(v))  # keep order, drop repeats
        else:
            values[leaf.path] = list(v) if leaf.multiple else v
    try:
        seats = seat_overrides(kwargs.pop("seat_values", None))  # before -S: an -S seats.KEY wins
    except ConfigError as exc:
        raise fail(exc, "--seat") from None
    return Parsed(values, sweep, kwargs.pop("config_file", None), seats + list(kwargs.pop("set_values", None) or []))


def expand(cls: type[ExperimentConfig], parsed: Parsed, *, order: tuple[str, ...],
           replicates: int | None = None, expand_values: dict[str, dict[str, list[str]]] | None = None
           ) -> list[ExperimentConfig]:
    """Every config of the sweep, validated before anything runs.

    ``order`` lists the sweep fields (and ``cls.REPLICATE_FIELD`` when ``replicates``
    is given) from the outermost loop to the innermost; ``expand_values`` maps a field's
    shorthand value to several (e.g. ``{"condition": {"all": [...]}}``).

    Raises:
        ConfigError: a value that does not validate (field, value and origin named).
    """
    axes: list[tuple[str, list[Any]]] = []
    overridden = {parse_override(o)[0] for o in parsed.overrides}
    for field in order:
        if field == getattr(cls, "REPLICATE_FIELD", None) and replicates is not None:
            axes.append((field, list(range(replicates))))
            continue
        vals = parsed.sweep.get(field)
        if not vals or field in overridden:
            continue
        out: list[Any] = []
        for v in vals:
            for x in (expand_values or {}).get(field, {}).get(str(v), [v]):
                if x not in out:
                    out.append(x)
        axes.append((field, out))
    configs = []
    for combo in itertools.product(*(vals for _, vals in axes)) if axes else [()]:
        values = dict(parsed.values)
        for (field, _), v in zip(axes, combo, strict=True):
            values[field] = v
        configs.append(build_config(cls, file=parsed.file, values=values, overrides=parsed.overrides,
                                    file_ignore=parsed.file_ignore))
    return configs


def fail(exc: Exception, hint: str | None = None) -> typer.BadParameter:
    """A one-line CLI error for a config problem."""
    return typer.BadParameter(str(exc), param_hint=hint)
