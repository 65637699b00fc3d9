"""SCARCE seats and membership: a model and settings per worker (solver and
negotiator each), and workers that join or leave between subruns.

Seats use the one spelling of :mod:`scarce_lab.config.seats`: keys are worker ids
(``w0``..), ``newcomer`` (every worker in ``joins``) and ``*``, each optionally with a
part, ``.solver`` or ``.negotiator``::

    seats: {w0: openai/gpt-4o, "*.negotiator": scripted/strategic}
    seats: {w0: {memory: cross}, "*": {memory: none}}
    -S seats.w0=openai/gpt-4o -S 'seats.*.negotiator=scripted/strategic'

A dotted ``-S`` key or a config file's nested mapping (``seats: {w0: {solver: m}}``)
reads as the part key ``w0.solver`` (:func:`normalize_seats`). Each field comes from
the most specific key that sets it (:func:`~scarce_lab.config.seats.resolve_seat`), then
from today's settings: ``model`` (solvers), ``negotiator_model`` (negotiators),
``llm.temperature``, ``llm.reasoning_effort``, ``llm.max_tokens`` (solvers and
negotiators alike: the recorded ``llm.max_tokens`` is what every decision sends; unset,
each part's own budget: 400 tokens per solver step, the negotiator's per-phase
defaults) and ``memory``. ``memory`` is a worker's,
not a part's: a part key may not set it. SCARCE's seats are :class:`ScarceSeatSettings`
(the shared :class:`~scarce_lab.config.seats.SeatSettings` and ``memory``).

Membership: ``joins: {w5: 2}`` (``w5`` plays from subrun 2 on) and ``leaves:
{w1: 1}`` (``w1`` plays subruns up to and including 1). Subruns are counted as the
events' ``subrun`` field counts them: 0-based, so ``joins: {w5: 1}`` joins at the
second subrun. A newcomer remembers nothing of the subruns before it joined, even
under ``memory=cross`` (the world filters its history); its budget and deadline apply
from its first subrun as every worker's do (they apply afresh each subrun).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from ...config.seats import ANY_SEAT, SeatSettings, check_seat_keys, composition_label, resolve_seat
from ...data.schema import calls_no_model
from ...llm.models import is_scripted, scripted_policy, via_provider
from ...llm.params import ignored_settings
from .world.state import present_workers

#: The parts of a SCARCE seat: each worker is a solver and a negotiator.
SEAT_PARTS: tuple[str, ...] = ("solver", "negotiator")
#: The alias every joining worker answers to (``seats.newcomer=...``).
NEWCOMER = "newcomer"
#: Fields a seat sets for one model (``memory`` is the worker's, see :class:`WorkerSeat`).
GENERATION_FIELDS: tuple[str, ...] = ("temperature", "max_tokens", "reasoning_effort")


class ScarceSeatSettings(SeatSettings):
    """The settings of a SCARCE seat key: the shared ones
    (:class:`~scarce_lab.config.seats.SeatSettings`) and ``memory``, the worker's memory
    horizon (``none|subrun|cross``, checked by :func:`check_seats`; on a worker key,
    never a part key). ``None``: from a less specific key, finally the config's
    ``memory``."""

    memory: str | None = Field(None, min_length=1, description="the worker's memory horizon (none|subrun|cross)")


def normalize_seats(raw: Any) -> Any:
    """``seats`` as given -> the same with nested parts written as part keys:
    ``{"w0": {"solver": m, "temperature": 0.5}}`` -> ``{"w0.solver": m, "w0": {"temperature": 0.5}}``
    (how ``-S seats.w0.solver=m`` and a nested config file arrive). Anything else is
    returned as it is, for :func:`~scarce_lab.config.seats.parse_seats` to judge."""
    if not isinstance(raw, Mapping):
        return raw
    out: dict[Any, Any] = {}
    for key, value in raw.items():
        if isinstance(value, Mapping) and any(p in value for p in SEAT_PARTS):
            rest = {k: v for k, v in value.items() if k not in SEAT_PARTS}
            for p in SEAT_PARTS:
                if p in value:
                    sub = f"{key}.{p}"
                    if sub in raw:
                        raise ValueError(f"seats: {sub!r} is given twice (as {sub!r} and nested under {key!r})")
                    out[sub] = value[p]
            if rest:
                out[key] = rest
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class WorkerSeat:
    """What one worker plays with, as its calls send it.

    Attributes:
        worker: the worker id.
        solver, negotiator: each part's model and generation settings; the generation
            fields are ``None`` for a ``scripted/`` model (nothing is sent), and
            ``max_tokens`` ``None`` means the part's own per-decision budget (solver:
            400 tokens per step; negotiator: its per-phase defaults).
        memory: the worker's memory horizon (``none``, ``subrun``, ``cross``).
        newcomer: whether the worker joins after the first subrun.
    """

    worker: str
    solver: SeatSettings
    negotiator: SeatSettings
    memory: str
    newcomer: bool = False

    def record(self) -> dict[str, Any]:
        """JSON of the seat (for the manifest and the condition settings)."""
        return {"solver": self.solver.model_dump(exclude_none=True),
                "negotiator": self.negotiator.model_dump(exclude_none=True), "memory": self.memory}


def _part_default(cfg: Any, part: str) -> ScarceSeatSettings:
    return ScarceSeatSettings(model=cfg.model if part == "solver" else cfg.negotiator,
                              **{f: getattr(cfg.llm, f) for f in GENERATION_FIELDS})


def _aliases(cfg: Any, worker: str) -> tuple[str, ...]:
    return (NEWCOMER,) if worker in cfg.joins else ()


def _sent(s: ScarceSeatSettings) -> SeatSettings:
    """A part's settings as sent (the worker's ``memory`` left out): nothing but the
    model for a scripted policy; for a provider's model, without the settings litellm
    drops for it (:func:`~scarce_lab.llm.params.ignored_settings`; a config refuses them
    unless ``llm.allow_ignored_settings``), so a seat never records what was not sent."""
    if s.model is not None and calls_no_model(s.model):
        return SeatSettings(model=s.model)
    out = SeatSettings(**s.model_dump(exclude={"memory"}))
    if s.model is not None and via_provider(s.model):
        dropped = ignored_settings(s.model, {f: getattr(s, f) for f in GENERATION_FIELDS})
        if dropped:
            out = out.model_copy(update=dict.fromkeys(dropped))
    return out


def seat_plan(cfg: Any) -> dict[str, WorkerSeat]:
    """Worker -> its resolved :class:`WorkerSeat` (every worker of ``cfg.names``,
    newcomers and leavers included). Without ``seats`` every worker plays today's
    ``model`` / ``negotiator_model`` and ``llm`` settings and ``memory``."""
    out = {}
    for w in cfg.names:
        aliases = _aliases(cfg, w)
        parts = {p: _sent(resolve_seat(cfg.seats, w, aliases, p, _part_default(cfg, p))) for p in SEAT_PARTS}
        memory = resolve_seat(cfg.seats, w, aliases, None, ScarceSeatSettings(memory=cfg.memory)).memory
        out[w] = WorkerSeat(w, parts["solver"], parts["negotiator"], memory, newcomer=w in cfg.joins)
    return out


def check_seats(cfg: Any, supported_efforts: Callable[[str], tuple[str, ...] | None]) -> None:
    """Refuse, before anything runs, a seat that would not play as written.

    Raises:
        ValueError: a seat key with no worker (``newcomer`` without ``joins``), a part
            key that sets ``memory``, a memory horizon that is not ``none|subrun|cross``,
            a scripted policy that is not one (negotiators: one of
            ``SCRIPTED_NEGOTIATORS``), a reasoning effort the seat's model does not
            accept (``supported_efforts``: the config's
            :func:`~scarce_lab.environments.scarce.config.supported_reasoning_efforts`), a
            generation setting litellm would drop for the seat's model, or a key whose
            generation settings reach only scripted seats (nothing would be sent).
    """
    from .agents import SCRIPTED_NEGOTIATORS, parse_skill
    from .world import MEMORY_HORIZONS

    seats = cfg.seats
    if not seats:
        return
    check_seat_keys(seats, [*cfg.names, *([NEWCOMER] if cfg.joins else [])], parts=SEAT_PARTS)
    for key, s in seats.items():
        base, _, part = key.partition(".")
        if s.memory is not None:
            if part:
                raise ValueError(f"seats.{key}.memory: memory is a worker's horizon, not a part's; "
                                 f"set seats.{base}.memory")
            if s.memory not in MEMORY_HORIZONS:
                raise ValueError(f"seats.{key}.memory must be one of {list(MEMORY_HORIZONS)}, got {s.memory!r}")
    plan = seat_plan(cfg)
    for w, seat in plan.items():
        for part in SEAT_PARTS:
            s: SeatSettings = getattr(seat, part)
            where = f"seats ({w}.{part})"
            m = s.model
            if calls_no_model(m) and not is_scripted(m):  # a person: who may sit is the config's check
                continue
            if is_scripted(m):
                try:
                    policy, arg = scripted_policy(m)
                except ValueError as exc:
                    raise ValueError(f"{where}: {exc}") from None
                if part == "negotiator":
                    if policy not in SCRIPTED_NEGOTIATORS or arg is not None:
                        raise ValueError(f"{where}: scripted negotiator {m!r}: the policy must be one of "
                                         f"{list(SCRIPTED_NEGOTIATORS)} without an argument")
                elif policy == "skilled":
                    try:
                        parse_skill(arg)
                    except ValueError as exc:
                        raise ValueError(f"{where}: model {m!r}: {exc}") from None
                continue
            raw = resolve_seat(seats, w, _aliases(cfg, w), part, _part_default(cfg, part))  # as asked
            if raw.reasoning_effort is not None:
                levels = supported_efforts(m)
                if levels is not None and raw.reasoning_effort not in levels:
                    raise ValueError(f"{where}: reasoning_effort {raw.reasoning_effort!r} is not accepted by {m!r} "
                                     f"(litellm lists {list(levels) or 'no effort levels'} for it)")
            seat_set = {f: getattr(raw, f) for f in GENERATION_FIELDS
                        if any(getattr(seats[k], f) is not None for k in _keys_of(seats, w, cfg, part))}
            dropped = ignored_settings(m, seat_set) if seat_set else {}
            if dropped and not cfg.llm.allow_ignored_settings:
                raise ValueError(f"{where}: {', '.join(f'{k}={v!r}' for k, v in dropped.items())} would not be "
                                 f"sent to {m!r} (litellm drops it for that model)")
    for key, s in seats.items():
        if not any(getattr(s, f) is not None for f in GENERATION_FIELDS):
            continue
        reached = [(w, p) for w in plan for p in SEAT_PARTS
                   if key in _keys_of(seats, w, cfg, p) and not calls_no_model(getattr(plan[w], p).model)]
        if not reached:
            raise ValueError(f"seats.{key}: its temperature/max_tokens/reasoning_effort would reach no model "
                             f"(every seat it names is scripted), so nothing of it would be sent")


def _keys_of(seats: Mapping[str, ScarceSeatSettings], worker: str, cfg: Any, part: str) -> list[str]:
    """The seat keys that apply to ``worker``'s ``part`` (as :func:`resolve_seat` looks them up)."""
    keys = []
    for base in (worker, *_aliases(cfg, worker), ANY_SEAT):
        keys += [f"{base}.{part}", base]
    return [k for k in keys if k in seats]


def check_membership(cfg: Any) -> None:
    """Refuse joins and leaves that cannot be played.

    Raises:
        ValueError: a worker not in ``cfg.names``; a join subrun outside ``1..subruns-1``
            (0 is being there from the start); a leave subrun outside ``0..subruns-2``
            (after the last subrun there is nothing to leave); a worker that leaves
            before it joins; or a subrun with no worker present. Subruns 0-based.
    """
    n = cfg.subruns
    for field, values, lo, hi in (("joins", cfg.joins, 1, n - 1), ("leaves", cfg.leaves, 0, n - 2)):
        for w, k in values.items():
            if w not in cfg.names:
                raise ValueError(f"{field}: unknown worker {w!r} (have {cfg.names})")
            if isinstance(k, bool) or not isinstance(k, int) or not lo <= k <= hi:
                raise ValueError(f"{field}.{w}: subrun {k!r} must be in {lo}..{hi} (subruns are 0-based, "
                                 f"this run has {n})")
    for w in set(cfg.joins) & set(cfg.leaves):
        if cfg.leaves[w] < cfg.joins[w]:
            raise ValueError(f"leaves.{w}={cfg.leaves[w]} is before joins.{w}={cfg.joins[w]}: {w} would never play")
    for k in range(n):
        if not present_workers(cfg.names, cfg.joins, cfg.leaves, k):
            raise ValueError(f"joins/leaves: no worker is present in subrun {k}")


def composition(cfg: Any) -> str:
    """The readable composition of ``cfg``'s seats, e.g. ``w0=gpt-4o, others=fifo``
    (:func:`~scarce_lab.config.seats.composition_label`); a worker whose solver and
    negotiator differ reads ``<solver>+<negotiator>`` (``w0=gpt-4o+strategic``); a
    generation setting or ``memory`` is named where it is not the run's default."""
    from ...config.seats import _shown_names

    resolved = {}
    defaults = {p: _sent(_part_default(cfg, p)) for p in SEAT_PARTS}
    plan = seat_plan(cfg)
    # whole model strings where two models share a short name (openai/gpt-4o, azure/gpt-4o)
    shown = _shown_names(m for seat in plan.values() for m in (seat.solver.model, seat.negotiator.model))
    for w, seat in plan.items():
        s, n = seat.solver, seat.negotiator
        model = shown[s.model] if s.model == n.model else f"{shown[s.model]}+{shown[n.model]}"
        fields: dict[str, Any] = {}
        for f in GENERATION_FIELDS:
            per = {part: getattr(x, f) for part, x in (("solver", s), ("negotiator", n))
                   if getattr(x, f) is not None and getattr(x, f) != getattr(defaults[part], f)}
            both_models = s.model is not None and n.model is not None and not (calls_no_model(s.model) or calls_no_model(n.model))
            if (len(per) == 2 and len(set(per.values())) == 1) or (len(per) == 1 and not both_models):
                fields[f] = next(iter(per.values()))  # both parts', or the one model part's
            elif per:  # one of two model parts, or two values: name the part (two seats never read as one)
                fields[f] = "/".join(f"{part} {v}" for part, v in per.items())
        # model_construct: the label's model text is a name for people, not a model string
        resolved[w] = ScarceSeatSettings.model_construct(
            model=model, memory=seat.memory if seat.memory != cfg.memory else None, **fields)
    return composition_label(resolved)


__all__ = ["GENERATION_FIELDS", "NEWCOMER", "SEAT_PARTS", "ScarceSeatSettings", "WorkerSeat", "check_membership",
           "check_seats", "composition", "normalize_seats", "seat_plan"]
