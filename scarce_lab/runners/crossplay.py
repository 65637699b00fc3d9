"""Cross-play planning: every focal-vs-background composition of a population, over
the sweep's seeds or simulations (Melting Pot's focal/background protocol: Leibo et
al. 2021, "Scalable evaluation of multi-agent reinforcement learning with Melting
Pot"; the focal population fills the focal seats, a background population the rest).

Given the configs of a sweep (one per seed/simulation and other axis), a population
``A,B,C``, a background ``A[,B]`` (default: the population) and the focal seats, the
plan holds one config per (focal member F, background member B, base config): the
focal seats get F, every other seat B, through the config's ``seats`` map (the one
spelling of :mod:`scarce_lab.config.seats`). Each composition is its own condition:
the seats are in the config, so they are recorded in the manifest and hashed into the
run id; nothing is pooled.

Focal seats: a count ``N`` (the first ``N`` seats in the environment's seat order,
:attr:`scarce_lab.registry.EnvironmentSpec.seat_keys`; the plan names them) or
seat keys (agent ids or aliases, e.g. ``king``, ``a0,a1``). ``part`` names the part
of each seat the population plays, for environments whose agents are several models
(SCARCE: ``negotiator``; default: the whole seat).

Prefixes repeat across compositions: a decision's seed derives from the run seed
(seed/simulation, not the composition), the round and the agent, and the response
cache keys on ``(model, messages, params with the seed)``
(:func:`scarce_lab.llm.cache.cache_key`); so a seat that plays the same model in two
compositions with the same seed sends the same first prompts and the second run's
calls are cache hits until the play diverges. The plan states this; the count of hits
is in each run's ``llm_calls`` (``cache_hit``).

Used by the run commands (``--population/--background/--focal-seats/--seat-part`` or a
``population:`` block of ``--config``; :mod:`scarce_lab.cli._crossplay`) and by
``sl.crossplay``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config.seats import ANY_SEAT, parse_seats, short_model

__all__ = ["Composition", "CrossPlayError", "CrossPlayPlan", "PopulationSettings", "focal_seat_ids",
           "format_plan", "plan_crossplay", "split_members"]


class CrossPlayError(ValueError):
    """A population, background, focal-seat or part setting that cannot be planned
    (the message names the setting and the value)."""


def split_members(value: str | Iterable[str] | None, where: str) -> tuple[str, ...]:
    """``"A,B,C"`` or ``["A", "B"]`` -> ``("A", "B", "C")`` (order kept, repeats refused).

    Raises:
        CrossPlayError: an empty member or a repeated one (``where`` names the setting).
    """
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    out: list[str] = []
    for raw in items:
        if not isinstance(raw, str) or not raw.strip():
            raise CrossPlayError(f"{where}: empty member in {value!r}")
        m = raw.strip()
        if m in out:
            raise CrossPlayError(f"{where}: {m!r} is listed twice in {value!r}")
        out.append(m)
    return tuple(out)


@dataclass(frozen=True)
class PopulationSettings:
    """What to cross: ``members`` (models or ``scripted/<policy>``), ``background``
    (default: the members), ``focal_seats`` (a count or seat keys) and ``part``."""

    members: tuple[str, ...]
    background: tuple[str, ...] = ()
    focal_seats: int | tuple[str, ...] = 1
    part: str | None = None

    @classmethod
    def parse(cls, members: Any, background: Any = None, focal_seats: Any = 1, part: Any = None,
              where: str = "population") -> PopulationSettings:
        """From CLI text or a ``population:`` block (``members``, ``background``,
        ``focal_seats``, ``part``).

        Raises:
            CrossPlayError: no members, a bad count (< 1) or key, a part that is not text.
        """
        mem = split_members(members, f"{where}.members")
        if not mem:
            raise CrossPlayError(f"{where}.members: a population needs at least one model, got {members!r}")
        bg = split_members(background, f"{where}.background") or mem
        if isinstance(focal_seats, bool):
            raise CrossPlayError(f"{where}.focal_seats: {focal_seats!r} is neither a count nor seat keys")
        if isinstance(focal_seats, int) or (isinstance(focal_seats, str) and focal_seats.strip().isdigit()):
            n = int(focal_seats)
            if n < 1:
                raise CrossPlayError(f"{where}.focal_seats: a count must be >= 1, got {focal_seats!r}")
            focal: int | tuple[str, ...] = n
        else:
            focal = split_members(focal_seats, f"{where}.focal_seats")
            if not focal:
                raise CrossPlayError(f"{where}.focal_seats: no seats in {focal_seats!r}")
            if ANY_SEAT in focal or any("." in k for k in focal):
                raise CrossPlayError(f"{where}.focal_seats: name seats (agent ids or roles), not '*' or "
                                     f"'seat.part' (the part is {where}.part), got {focal_seats!r}")
        if part is not None and (not isinstance(part, str) or not part.strip()):
            raise CrossPlayError(f"{where}.part: expected a part name, got {part!r}")
        return cls(mem, bg, focal, part.strip() if isinstance(part, str) else None)

    @classmethod
    def from_block(cls, block: Any, where: str = "population") -> PopulationSettings:
        """A config file's ``population:`` block (a mapping, or a list / text of members).

        Raises:
            CrossPlayError: unknown keys (named) or bad values.
        """
        if isinstance(block, str | list | tuple):
            return cls.parse(block, where=where)
        if not isinstance(block, Mapping):
            raise CrossPlayError(f"{where}: expected a mapping (members, background, focal_seats, part), got {block!r}")
        unknown = sorted(set(block) - {"members", "background", "focal_seats", "part"})
        if unknown:
            raise CrossPlayError(f"{where}: unknown key(s) {unknown}; keys are members, background, focal_seats, part")
        return cls.parse(block.get("members"), block.get("background"), block.get("focal_seats", 1),
                         block.get("part"), where=where)


@dataclass(frozen=True)
class Composition:
    """One focal-vs-background composition of a plan."""

    focal: str
    background: str
    focal_seats: tuple[str, ...]
    part: str | None

    @property
    def label(self) -> str:
        """``focal=greedy@a3, background=smollm2`` (the part after the seats when set)."""
        where = "+".join(self.focal_seats) + (f".{self.part}" if self.part else "")
        return f"focal={short_model(self.focal)}@{where}, background={short_model(self.background)}"

    def seats(self) -> dict[str, str]:
        """The ``seats`` entries of this composition (seat key -> model)."""
        suffix = f".{self.part}" if self.part else ""
        return {f"{ANY_SEAT}{suffix}": self.background} | {f"{s}{suffix}": self.focal for s in self.focal_seats}


@dataclass
class CrossPlayPlan:
    """The grid: ``runs`` is one ``(composition, config)`` per run, compositions
    outermost, the base configs (seeds/simulations and other axes) inside."""

    environment: str
    settings: PopulationSettings
    compositions: list[Composition]
    runs: list[tuple[Composition, Any]] = field(default_factory=list)
    base_runs: int = 0

    @property
    def configs(self) -> list[Any]:
        """The configs to run, in plan order (``sl.run`` each, or a run command)."""
        return [cfg for _, cfg in self.runs]

    def preview(self) -> Any:
        """The dry run's plan of :attr:`configs` (runs, model calls per model, prompt
        tokens, cost range; :func:`scarce_lab.runners.preview.preview`); nothing is sent."""
        from .preview import preview

        return preview(self.environment, self.configs)

    def describe(self, calls: bool = True) -> str:
        """The grid as text, with the model calls per model when ``calls``."""
        return format_plan(self, self.preview() if calls else None)

    def __str__(self) -> str:
        return format_plan(self)


def _seat_map(environment: str) -> tuple[Callable[[Any], Mapping[str, tuple[str, ...]]], tuple[str, ...]]:
    from ..registry import get

    spec = get(environment)
    if spec.seat_keys is None:
        raise CrossPlayError(f"environment {environment!r} names no seats (EnvironmentSpec.seat_keys): "
                             "a cross-play grid cannot be planned for it")
    return spec.seat_keys, spec.seat_parts


def focal_seat_ids(seats: Mapping[str, tuple[str, ...]], focal: int | tuple[str, ...]) -> tuple[str, ...]:
    """The agent ids of the focal seats: the first ``focal`` seats in seat order, or
    the seats ``focal`` names (agent ids or aliases), in seat order.

    Raises:
        CrossPlayError: a key naming no seat (the seats and aliases are listed), or
            focal seats covering every seat (no background is left).
    """
    order = list(seats)
    if isinstance(focal, int):
        if focal >= len(order):
            raise CrossPlayError(f"focal_seats: {focal} of {len(order)} seats leaves no background seat")
        return tuple(order[:focal])
    chosen: set[str] = set()
    for key in focal:
        hits = [a for a, aliases in seats.items() if key == a or key in aliases]
        if not hits:
            named = [f"{a} ({', '.join(al)})" if al else a for a, al in seats.items()]
            raise CrossPlayError(f"focal_seats: no seat {key!r} in this run; seats are {named}")
        chosen.update(hits)
    if len(chosen) >= len(order):
        raise CrossPlayError(f"focal_seats: {list(focal)} names every seat ({order}): no background seat is left")
    return tuple(a for a in order if a in chosen)


def _with_seats(cfg: Any, add: Mapping[str, str]) -> Any:
    """``cfg`` rebuilt (validated) with ``add`` merged into its ``seats``.

    Raises:
        CrossPlayError: the config has no ``seats`` setting, or already sets a model on
            a seat key (the planner's composition would not be the one run).
    """
    if "seats" not in type(cfg).model_fields:
        raise CrossPlayError(f"{type(cfg).__name__} has no 'seats' setting: this environment cannot run a "
                             "mixed population yet")
    existing = parse_seats(getattr(cfg, "seats", None) or {})
    setting_model = sorted(k for k, s in existing.items() if s.model is not None)
    if setting_model:
        raise CrossPlayError(f"seats: the base config already gives a model to {setting_model}; a cross-play "
                             "grid sets the models itself (keep per-seat settings without 'model')")
    merged: dict[str, Any] = {k: s.model_dump(exclude_none=True) for k, s in existing.items()}
    merged |= {key: {**merged.get(key, {}), "model": model} for key, model in add.items()}
    try:
        return type(cfg).model_validate(cfg.model_dump(mode="json", exclude_unset=True) | {"seats": merged})
    except ValueError as exc:
        raise CrossPlayError(f"composition {dict(add)}: {exc}") from None


def plan_crossplay(configs: Sequence[Any], settings: PopulationSettings, *,
                   environment: str | None = None,
                   seat_keys: Callable[[Any], Mapping[str, tuple[str, ...]]] | None = None,
                   seat_parts: tuple[str, ...] | None = None) -> CrossPlayPlan:
    """The cross-play grid over ``configs`` (see the module docstring).

    Args:
        configs: the base configs (one per seed/simulation and other sweep axis), all
            of one environment; their own ``model`` is what seats outside ``part``
            keep (SCARCE: the solvers when ``part="negotiator"``).
        settings: the population, background, focal seats and part.
        environment: the registered environment (default: that of ``configs[0]``);
            ``seat_keys``/``seat_parts`` default to its spec's.

    Returns:
        The plan: ``len(population) x len(background) x len(configs)`` runs.

    Raises:
        CrossPlayError: no configs, a part the environment has not, a focal seat that
            names no seat, a config that cannot hold seats, two planned runs with one
            run id (they would be one run).
    """
    if not configs:
        raise CrossPlayError("a cross-play grid needs at least one base config")
    if environment is None:
        from ..registry import for_config

        environment = for_config(configs[0]).name
    if seat_keys is None:
        seat_keys, spec_parts = _seat_map(environment)
        seat_parts = spec_parts if seat_parts is None else seat_parts
    parts = tuple(seat_parts or ())
    if settings.part is not None and settings.part not in parts:
        raise CrossPlayError(f"part {settings.part!r}: {environment} seats have "
                             f"{'the parts ' + str(list(parts)) if parts else 'no parts'}")
    compositions: dict[tuple[str, str, tuple[str, ...]], Composition] = {}
    plan = CrossPlayPlan(environment, settings, [], base_runs=len(configs))
    seen: dict[str, str] = {}
    for f in settings.members:
        for b in settings.background:
            for cfg in configs:
                focal = focal_seat_ids(seat_keys(cfg), settings.focal_seats)
                comp = compositions.setdefault((f, b, focal), Composition(f, b, focal, settings.part))
                planned = _with_seats(cfg, comp.seats())
                rid = planned.run_id
                if rid in seen:
                    raise CrossPlayError(f"compositions {seen[rid]} and {comp.label} give one run id {rid!r}: "
                                         "the seats are not in the run id of this environment")
                seen[rid] = comp.label
                plan.runs.append((comp, planned))
    plan.compositions = list(compositions.values())
    return plan


def format_plan(plan: CrossPlayPlan, preview: Any | None = None) -> str:
    """The plan as text, printed before anything runs: compositions, runs, and (with a
    :class:`scarce_lab.runners.preview.Preview` of ``plan.configs``) the model calls
    per model."""
    s = plan.settings
    focal = (f"the first {s.focal_seats} seat(s) in seat order" if isinstance(s.focal_seats, int)
             else "seats " + ", ".join(s.focal_seats))
    lines = [
        f"cross-play grid ({plan.environment}): {len(s.members)} focal x {len(s.background)} background = "
        f"{len(plan.compositions)} composition(s) x {plan.base_runs} base run(s) (seeds/simulations) = "
        f"{len(plan.runs)} run(s)",
        f"  focal seats: {focal}" + (f", part {s.part}" if s.part else "") + "; each composition is its own "
        "condition (never pooled)",
    ]
    for c in plan.compositions:
        n = sum(1 for comp, _ in plan.runs if comp is c)
        lines.append(f"  {c.label}: {n} run(s)")
    if preview is not None:
        if not preview.models:
            lines.append("  model calls: none (every seat is a scripted policy)")
        for m in preview.models.values():
            calls = f"{m.calls_low}-{m.calls_high} calls"
            if m.per_unit:
                calls += f" + {m.per_unit} {m.unit}"
            lines.append(f"  model calls, {m.model}: {calls}")
    if preview is not None and preview.models:
        lines.append("  repeated prefixes are answered from the response cache (keyed on model, messages and parameters "
                     "with the seed): a seat that plays the same model with the same seed asks the same questions in "
                     "every composition until it sees another seat's move; the counts above include those calls")
    return "\n".join(lines)
