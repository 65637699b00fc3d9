"""Selection over models across generations: chains of ordinary runs whose seats are
reassigned between generations by payoff.

A *chain* is a population of seats (every seat of the environment, or the seats
named), each assigned a model from a set (``population``). Generation ``g`` is ``games``
ordinary runs (a config with ``seats``) played with that assignment; each seat's payoff
is read from the runs' records through the environment's
:attr:`~scarce_lab.registry.EnvironmentSpec.seat_payoffs` (summed over the games), and
the next generation's assignment follows a rule:

* ``replicator``: fitness-proportional resampling (a Wright-Fisher process with
  selection, Imhof & Nowak 2006, "Evolutionary game dynamics in a Wright-Fisher
  process", J. Math. Biol. 52: 667-681, at selection intensity 1). Every seat of the
  next generation draws its model independently, model ``m`` with probability
  ``F_m / sum(F)``, ``F_m`` the total payoff of the seats that played ``m``; the
  expected share of ``m`` is then ``x_m f_m / f_bar``, the discrete-time replicator
  dynamic (Taylor & Jonker 1978). Payoffs must be >= 0 (a negative one is refused,
  naming the seat); when every payoff is 0 the draw is neutral (probability
  proportional to the seats each model holds), and the generation's record says so.
* ``eom``: the Economy of Minds' birth/death rule applied to models (Qi et al. 2026,
  "Economy of Minds", arXiv:2606.02859, sec. 3; :mod:`scarce_lab.environments`' Hayek
  economy follows the same rules for agents). Each seat has a wealth, carried over
  generations (``initial_wealth`` at the start): after a generation it gains its payoff
  and pays ``rent`` (default: the generation's mean payoff per seat, so that wealth
  measures payoff relative to the population; a number: a fixed rent as in EoM). A seat
  whose wealth is below zero is bankrupt (EoM: ``wealth < 0``) and dies; its seat is
  taken by a copy of the richest surviving seat's model (EoM's reproduction of the
  rich, which here fills the freed seat: the number of seats is fixed), endowed with
  ``initial_wealth`` by the bank (EoM funds a replacement so). Ties for richest are
  drawn. When every seat is bankrupt there is no one to copy: each seat is replaced by
  its own model afresh (EoM's replacement of the bankrupt by a repair of the failed
  agent), with ``initial_wealth``, and the record says so.

The initial assignment deals the population round-robin over the seats in an order
shuffled per chain (shares as equal as the seat count allows). Every random draw of a
chain comes from ``random.Random(derive_seed("selection", seed, chain, g))`` for the
draws after generation ``g`` (``seed``: the base config's ``seed``), and the games of
generation ``g`` play with seed ``derive_seed("selection", seed, chain, g, game)``: the
same seed gives the same chain, a resumed chain the same draws, and chains are
independent of each other.

Recording: every run's config carries ``chain`` (:class:`~scarce_lab.config.base.ChainTag`:
chain, generation, rule), a condition setting, so each generation of each chain is its
own condition and run id (never pooled). ``OUT/selection.json`` (the chain state) holds
the settings, the base config and per chain every generation's assignment, run ids,
payoffs, wealth, deaths and births; it is written before each generation plays and
after it is read, and read through the data read gate and validated on every read
(:func:`read_state`: a hostile or damaged file is refused naming the field). A rerun
into ``OUT`` resumes each chain at the generation it stopped (an unfinished run from its
last durable step); a finished chain runs nothing; other settings are refused naming the
difference. ``OUT/.selection.lock`` keeps two processes from writing one folder.

Analysis: :func:`shares` (one row per chain x generation x model) and
:func:`share_summary` (the mean share over chains, the independent units, with a 95%
interval from :data:`MIN_CHAINS` chains: see its docstring).

Size: the rules, the chain state's schema and gate, the generation loop and the share
analysis share one state file's meaning and stay together.
"""

from __future__ import annotations

import inspect
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..config.seats import ANY_SEAT, parse_seats
from ..data.runlock import folder_lock
from ..runtime import derive_seed

__all__ = ["MIN_CHAINS", "RULES", "STATE_FILE", "EomStep", "SelectionError", "SelectionResult", "SelectionSettings",
           "SelectionState", "eom_step", "initial_assignment", "read_state", "replicator_step", "seat_rows", "select",
           "share_finding", "share_summary", "shares"]

#: The rules between generations.
RULES = ("replicator", "eom")
#: The chain state inside the output folder.
STATE_FILE = "selection.json"
#: The advisory lock of the output folder.
LOCK = ".selection.lock"
#: Chains from which :func:`share_summary` prints a 95% interval (see its docstring).
MIN_CHAINS = 3


class SelectionError(ValueError):
    """A selection that cannot be planned, run or read (the message names the setting,
    file, field or seat and the value)."""


# -- the rules -------------------------------------------------------------------------------
def _finite(payoffs: Mapping[str, float], where: str) -> None:
    for seat, p in payoffs.items():
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p):
            raise SelectionError(f"{where}: payoff of seat {seat!r} is {p!r}, not a finite number")


def replicator_step(assignment: Mapping[str, str], payoffs: Mapping[str, float],
                    rng: random.Random) -> tuple[dict[str, str], str]:
    """The next assignment by fitness-proportional resampling (module docstring,
    ``replicator``): ``(seat -> model, note)``; ``note`` is ``""`` or says the draw was
    neutral (every payoff 0).

    Args:
        assignment: seat -> model of the generation just played (seat order kept).
        payoffs: seat -> payoff (>= 0) of every seat of ``assignment``.
        rng: the chain's draw for this generation.

    Raises:
        SelectionError: a seat without a payoff, a payoff that is not finite or is negative.
    """
    _check_payoffs(assignment, payoffs)
    bad = {s: p for s, p in payoffs.items() if p < 0}
    if bad:
        seat, p = next(iter(bad.items()))
        raise SelectionError(f"replicator: seat {seat!r} has payoff {p!r} < 0; fitness-proportional selection needs "
                             "payoffs >= 0 (use rule eom, whose wealth may fall below zero)")
    models = sorted(set(assignment.values()))
    weight = {m: sum(payoffs[s] for s, a in assignment.items() if a == m) for m in models}
    note = ""
    if sum(weight.values()) <= 0:
        weight = {m: float(sum(a == m for a in assignment.values())) for m in models}
        note = "neutral draw: every payoff was 0"
    total = sum(weight.values())
    out = {}
    for seat in assignment:
        u, acc = rng.random() * total, 0.0
        pick = models[-1]
        for m in models:
            acc += weight[m]
            if u < acc:
                pick = m
                break
        out[seat] = pick
    return out, note


@dataclass
class EomStep:
    """One application of the ``eom`` rule: the next ``assignment``, the ``wealth``
    each seat carries into it, the seats that died (seat -> wealth at death), the births
    (seat -> the seat whose model it copied) and a ``note``."""

    assignment: dict[str, str]
    wealth: dict[str, float]
    deaths: dict[str, float] = field(default_factory=dict)
    births: dict[str, str] = field(default_factory=dict)
    note: str = ""


def eom_step(assignment: Mapping[str, str], payoffs: Mapping[str, float], wealth: Mapping[str, float],
             rng: random.Random, *, initial_wealth: float = 0.0, rent: float | None = None) -> EomStep:
    """The Economy of Minds' birth/death rule applied to models (module docstring, ``eom``).

    Args:
        assignment: seat -> model of the generation just played.
        payoffs: seat -> payoff of that generation (any sign).
        wealth: seat -> wealth carried into it.
        rng: the chain's draw for this generation (ties for richest).
        initial_wealth: a newborn seat's wealth (the bank's endowment).
        rent: paid by every seat per generation; ``None``: the generation's mean payoff.

    Raises:
        SelectionError: a seat without a payoff or wealth, a value that is not finite.
    """
    _check_payoffs(assignment, payoffs)
    _finite(wealth, "eom: wealth")
    missing = [s for s in assignment if s not in wealth]
    if missing:
        raise SelectionError(f"eom: no wealth for seat(s) {missing}")
    due = sum(payoffs[s] for s in assignment) / len(assignment) if rent is None else float(rent)
    after = {s: float(wealth[s]) + float(payoffs[s]) - due for s in assignment}
    dead = [s for s in assignment if after[s] < 0]
    step = EomStep(dict(assignment), dict(after), {s: after[s] for s in dead})
    alive = [s for s in assignment if s not in dead]
    if dead and not alive:
        step.note = "every seat was bankrupt: each replaced by its own model (EoM's repair of the failed agent)"
        step.births = {s: s for s in dead}
    elif dead:
        top = max(after[s] for s in alive)
        parent = rng.choice([s for s in alive if after[s] == top])
        step.births = dict.fromkeys(dead, parent)
    for seat, parent in step.births.items():
        step.assignment[seat] = assignment[parent]
        step.wealth[seat] = float(initial_wealth)
    return step


def _check_payoffs(assignment: Mapping[str, str], payoffs: Mapping[str, float]) -> None:
    missing = [s for s in assignment if s not in payoffs]
    if missing:
        raise SelectionError(f"no payoff for seat(s) {missing}")
    _finite({s: payoffs[s] for s in assignment}, "payoffs")


def initial_assignment(seats: Sequence[str], population: Sequence[str], rng: random.Random) -> dict[str, str]:
    """Generation 0: the population, in an order shuffled by ``rng``, dealt round-robin
    over the seats, also taken in a shuffled order (each model holds
    ``len(seats) // len(population)`` seats or one more; which models hold one more is
    drawn, so no model is favoured by its place in the list), returned in seat order."""
    order, models = list(seats), list(population)
    rng.shuffle(order)
    rng.shuffle(models)
    dealt = {s: models[i % len(models)] for i, s in enumerate(order)}
    return {s: dealt[s] for s in seats}


def _rng(seed: int, chain: int, generation: int) -> random.Random:
    return random.Random(derive_seed("selection", seed, chain, generation))


# -- the chain state -----------------------------------------------------------------------------
_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class SelectionSettings(BaseModel):
    """What a selection runs (recorded in the chain state; a rerun must repeat it).

    Fields: ``population`` (>= 2 distinct models), ``generations`` (>= 1), ``rule``
    (:data:`RULES`), ``chains`` (>= 1), ``games`` per generation (>= 1), ``seats`` the
    population plays (agent ids; empty: every seat), ``part`` of each seat it plays
    (SCARCE ``negotiator``; ``None``: the whole seat), ``initial_wealth`` and ``rent``
    (``eom`` only; ``rent=None``: the generation's mean payoff).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    population: tuple[str, ...] = Field(min_length=2)
    generations: int = Field(ge=1)
    rule: Literal["replicator", "eom"]
    chains: int = Field(1, ge=1)
    games: int = Field(1, ge=1)
    seats: tuple[str, ...] = ()
    part: str | None = None
    initial_wealth: float = 0.0
    rent: float | None = None

    @model_validator(mode="after")
    def _check(self) -> SelectionSettings:
        if len(set(self.population)) < len(self.population):
            raise ValueError(f"population: a model is listed twice in {list(self.population)}")
        for m in self.population:
            parse_seats({ANY_SEAT: m})  # a model string a seat accepts (no ',', '=' or whitespace)
        if self.rule == "replicator" and (self.initial_wealth != 0.0 or self.rent is not None):
            raise ValueError("initial_wealth and rent are settings of rule eom, not of replicator")
        return self


class GenerationRecord(BaseModel):
    """One generation of one chain in the state file."""

    model_config = _STRICT
    generation: int = Field(ge=0)
    assignment: dict[str, str]
    run_ids: list[str] = Field(min_length=1)
    payoffs: dict[str, float] | None = None
    wealth: dict[str, float] | None = None
    deaths: dict[str, float] = {}
    births: dict[str, str] = {}
    note: str = ""


class ChainRecord(BaseModel):
    """One chain in the state file: its generations in order (the last may be planned
    and not yet played: ``payoffs`` null)."""

    model_config = _STRICT
    chain: int = Field(ge=0)
    generations: list[GenerationRecord]


class SelectionState(BaseModel):
    """``OUT/selection.json``: version, environment, the payoff read, the settings, the
    base config (JSON) and the chains."""

    model_config = _STRICT
    version: Literal[1]
    environment: str
    payoff: str
    settings: dict[str, Any]
    base_config: dict[str, Any]
    chains: list[ChainRecord]

    def parsed_settings(self) -> SelectionSettings:
        """The recorded settings as :class:`SelectionSettings`."""
        return SelectionSettings.model_validate(self.settings)

    @model_validator(mode="after")
    def _consistent(self) -> SelectionState:
        try:
            s = self.parsed_settings()
        except ValidationError as exc:
            e = exc.errors()[0]
            raise ValueError(f"settings.{'.'.join(map(str, e['loc']))}: {e['msg']}") from None
        if [c.chain for c in self.chains] != list(range(len(self.chains))) or len(self.chains) > s.chains:
            raise ValueError(f"chains: expected chains 0..{s.chains - 1} in order, got {[c.chain for c in self.chains]}")
        for c in self.chains:
            where = f"chains.{c.chain}"
            if len(c.generations) > s.generations:
                raise ValueError(f"{where}.generations: {len(c.generations)} recorded, the chain has {s.generations}")
            seats = None
            for i, g in enumerate(c.generations):
                at = f"{where}.generations.{i}"
                if g.generation != i:
                    raise ValueError(f"{at}.generation: {g.generation}, expected {i}")
                if len(g.run_ids) != s.games:
                    raise ValueError(f"{at}.run_ids: {len(g.run_ids)} run(s), the settings play {s.games} per generation")
                for seat, m in g.assignment.items():
                    if m not in s.population:
                        raise ValueError(f"{at}.assignment.{seat}: {m!r} is not in the population {list(s.population)}")
                if seats is not None and list(g.assignment) != seats:
                    raise ValueError(f"{at}.assignment: seats {list(g.assignment)}, generation 0 has {seats}")
                seats = list(g.assignment)
                for name in ("payoffs", "wealth"):
                    value = getattr(g, name)
                    if value is not None and set(value) != set(seats):
                        raise ValueError(f"{at}.{name}: seats {sorted(value)}, the assignment has {sorted(seats)}")
                if g.payoffs is None and i < len(c.generations) - 1:
                    raise ValueError(f"{at}.payoffs: null (not played) before generation {i + 1}")
                if (g.wealth is None) != (g.payoffs is None or s.rule != "eom"):
                    raise ValueError(f"{at}.wealth: {'missing' if g.wealth is None else 'set'} for rule {s.rule} "
                                     f"with payoffs {'set' if g.payoffs is not None else 'null'}")
                unknown = sorted((set(g.deaths) | set(g.births) | set(g.births.values())) - set(seats))
                if unknown:
                    raise ValueError(f"{at}.deaths/births: seat(s) {unknown} not in the assignment")
        return self


def read_state(out: Path) -> SelectionState | None:
    """``OUT/selection.json`` (``None`` when absent), read and validated
    (:class:`SelectionState`) by :func:`scarce_lab.data.jsonl.read_validated`.

    Raises:
        SelectionError: not readable, not JSON, or a field of the wrong kind or value (the
            file and the field are named).
    """
    from ..data.jsonl import read_validated

    got = read_validated(Path(out) / STATE_FILE, SelectionState, SelectionError, "a chain state file")
    return None if got is None else got[1]


def _write_state(out: Path, state: SelectionState) -> None:
    from ..data.jsonl import write_atomic

    write_atomic(Path(out) / STATE_FILE, json.dumps(state.model_dump(mode="json"), indent=1) + "\n")


# -- planning and running ----------------------------------------------------------------------------
def _seats(spec: Any, config: Any, wanted: Sequence[str]) -> list[str]:
    """The agent ids the population plays: every seat, or those ``wanted`` names
    (agent ids or aliases), in seat order.

    Raises:
        SelectionError: a key naming no seat (the seats are listed).
    """
    seat_map = spec.seat_keys(config)
    if not wanted:
        return list(seat_map)
    chosen = set()
    for key in wanted:
        hits = [a for a, aliases in seat_map.items() if key == a or key in aliases]
        if not hits:
            raise SelectionError(f"seats: no seat {key!r} in this run; seats are {list(seat_map)}")
        chosen.update(hits)
    return [a for a in seat_map if a in chosen]


def _config_for(base: Any, assignment: Mapping[str, str], part: str | None, chain: int, generation: int, rule: str,
                game: int) -> Any:
    """The config of one game of one generation: ``base`` with the assignment in its
    seats, the chain tag and the derived seed (module docstring)."""
    suffix = f".{part}" if part else ""
    existing = parse_seats(getattr(base, "seats", None) or {})
    merged: dict[str, Any] = {k: s.model_dump(exclude_none=True) for k, s in existing.items()}
    for seat, model in assignment.items():
        merged[f"{seat}{suffix}"] = {**merged.get(f"{seat}{suffix}", {}), "model": model}
    data = base.model_dump(mode="json", exclude_unset=True) | {
        "seats": merged, "chain": {"chain": chain, "generation": generation, "rule": rule},
        "seed": derive_seed("selection", base.seed, chain, generation, game)}
    try:
        return type(base).model_validate(data)
    except ValueError as exc:
        raise SelectionError(f"chain {chain}, generation {generation}: {exc}") from None


def _check_base(spec: Any, config: Any, seats: Sequence[str], part: str | None) -> None:
    """Refuse a base config the chain could not vary: no ``seats`` setting, a model
    already set on a seat the population plays, a chain tag, no ``seed``."""
    fields = type(config).model_fields
    if "seats" not in fields or "seed" not in fields:
        raise SelectionError(f"{type(config).__name__} has no 'seats' or 'seed' setting: {spec.name} cannot run a "
                             "selection chain")
    if getattr(config, "chain", None) is not None:
        raise SelectionError("the base config already has a chain tag (chain): give the config without it")
    if part is not None and part not in spec.seat_parts:
        raise SelectionError(f"part {part!r}: {spec.name} seats have "
                             f"{'the parts ' + str(list(spec.seat_parts)) if spec.seat_parts else 'no parts'}")
    seat_map = spec.seat_keys(config)
    for key, s in parse_seats(getattr(config, "seats", None) or {}).items():
        base, _, kpart = key.partition(".")
        names = {base} if base != ANY_SEAT else set(seats)
        hit = [a for a in seats if a in names or base in seat_map.get(a, ())]
        if s.model is not None and hit and (kpart or None) == part:
            raise SelectionError(f"seats.{key}: the base config gives a model to a seat the population plays; a "
                                 "selection chain sets those models itself")


@dataclass
class SelectionResult:
    """What :func:`select` did: the chain ``state`` (as read back), the runs it
    ``played`` (run ids; empty when every chain was finished) and ``out``."""

    state: SelectionState
    played: list[str]
    out: Path

    def shares(self) -> Any:
        """:func:`shares` of this folder's state."""
        return shares(self.state)

    def summary(self) -> Any:
        """:func:`share_summary` of this folder's state."""
        return share_summary(self.state)


def select(config: Any, population: Sequence[str] | str, *, generations: int, rule: str, out: str | Path,
           chains: int = 1, games: int = 1, seats: Sequence[str] | str = (), part: str | None = None,
           initial_wealth: float = 0.0, rent: float | None = None, progress: bool = False) -> SelectionResult:
    """Run (or resume) ``chains`` selection chains of ``generations`` generations into
    ``out`` (module docstring: the rules, seeds, records and resume).

    Args:
        config: the base config of the registered environment (its own ``model``
            plays the seats and parts the population does not; its ``seed`` seeds the
            chains).
        population: the models (``"A,B"`` or a sequence; at least two).
        generations: generations per chain (>= 1; the last one's draws are not made).
        rule: ``replicator`` or ``eom``.
        out: the output folder (run folders, ``selection.json``).
        chains: independent chains.
        games: runs per generation (their payoffs are summed per seat).
        seats: the seats the population plays (agent ids or aliases; default: all).
        part: the part of each seat it plays (SCARCE: ``negotiator``).
        initial_wealth, rent: the ``eom`` rule's settings.
        progress: a progress bar per generation's runs.

    Returns:
        :class:`SelectionResult`.

    Raises:
        SelectionError: a setting that cannot be planned (named), a folder whose state
            holds other settings (the difference named) or is damaged (the field
            named), a run that did not complete (its id and error; rerun to resume),
            an environment without ``seat_payoffs``.
        UnknownEnvironmentError / TypeError: ``config`` is no registered environment's.
    """
    from ..registry import for_config

    spec = for_config(config)
    if spec.seat_payoffs is None or spec.seat_keys is None:
        raise SelectionError(f"environment {spec.name!r} gives no payoff per seat (EnvironmentSpec.seat_payoffs): "
                             "selection over models cannot run on it")
    pop = tuple(m.strip() for m in population.split(",")) if isinstance(population, str) else tuple(population)
    wanted = tuple(s.strip() for s in seats.split(",") if s.strip()) if isinstance(seats, str) else tuple(seats)
    try:
        settings = SelectionSettings(population=pop, generations=generations, rule=rule, chains=chains, games=games,
                                     seats=wanted, part=part, initial_wealth=initial_wealth, rent=rent)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise SelectionError(f"{'.'.join(map(str, e['loc'])) or 'selection'}: {e['msg']}") from None
    seat_ids = _seats(spec, config, wanted)
    _check_base(spec, config, seat_ids, part)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out, LOCK, lambda lock: SelectionError(
            f"{out}: another selection is writing this folder now ({lock})")):
        state = _open_state(out, spec, config, settings)
        played = _run_generations(spec, config, settings, seat_ids, state, out, progress)
    return SelectionResult(read_state(out) or state, played, out)


def _open_state(out: Path, spec: Any, config: Any, settings: SelectionSettings) -> SelectionState:
    base = json.loads(json.dumps(config.model_dump(mode="json")))
    wanted = settings.model_dump(mode="json")
    old = read_state(out)
    if old is None:
        state = SelectionState(version=1, environment=spec.name, payoff=spec.payoff_meaning, settings=wanted,
                               base_config=base, chains=[])
        _write_state(out, state)
        return state
    diffs = [f"{k}: {old.settings.get(k)!r} there, {v!r} asked" for k, v in wanted.items() if old.settings.get(k) != v]
    if old.environment != spec.name:
        diffs.insert(0, f"environment: {old.environment!r} there, {spec.name!r} asked")
    if old.base_config != base:
        keys = sorted(k for k in set(old.base_config) | set(base) if old.base_config.get(k) != base.get(k))
        diffs.append(f"base config differs in {keys}")
    if diffs:
        raise SelectionError(f"{out / STATE_FILE} holds a selection with other settings ({'; '.join(diffs)}); "
                             "run it with the same settings, or use another output folder")
    return old


def _run_generations(spec: Any, config: Any, s: SelectionSettings, seat_ids: list[str], state: SelectionState,
                     out: Path, progress: bool) -> list[str]:
    from .sweep import play

    while len(state.chains) < s.chains:
        c = len(state.chains)
        state.chains.append(ChainRecord(chain=c, generations=[]))
    played: list[str] = []
    for g in range(s.generations):
        todo: list[tuple[ChainRecord, GenerationRecord]] = []
        configs: list[Any] = []
        for chain in state.chains:
            if len(chain.generations) > g and chain.generations[g].payoffs is not None:
                continue  # played
            if len(chain.generations) <= g:  # generation 0 (later ones are planned when the one before is read)
                assignment = initial_assignment(seat_ids, s.population, _rng(config.seed, chain.chain, -1))
                chain.generations.append(GenerationRecord(generation=g, assignment=assignment, run_ids=[
                    _config_for(config, assignment, s.part, chain.chain, g, s.rule, j).run_id for j in range(s.games)]))
            rec = chain.generations[g]
            cfgs = [_config_for(config, rec.assignment, s.part, chain.chain, g, s.rule, j) for j in range(s.games)]
            if [c.run_id for c in cfgs] != rec.run_ids:
                raise SelectionError(f"{out / STATE_FILE}: chains.{chain.chain}.generations.{g}.run_ids: "
                                     f"{rec.run_ids} recorded, the settings plan {[c.run_id for c in cfgs]}")
            todo.append((chain, rec))
            configs += cfgs
        if not todo:
            continue
        state = SelectionState.model_validate(state.model_dump())  # validated before it is written
        _write_state(out, state)
        outcomes = play(spec.name, configs, out, resume=True, progress=progress)
        bad = [o for o in outcomes if o.status not in ("complete", "skipped")]
        if bad:
            raise SelectionError(f"generation {g}: run {bad[0].run_id} {bad[0].status}: {bad[0].error} "
                                 f"({len(bad)} of {len(outcomes)} runs); run the selection again to resume")
        played += [o.run_id for o in outcomes if o.status == "complete"]
        by_chain = {c.chain: c for c in state.chains}
        for chain, _ in todo:
            _settle(spec, config, s, by_chain[chain.chain], g, out)
        state = SelectionState.model_validate(state.model_dump())
        _write_state(out, state)
    return played


def _settle(spec: Any, config: Any, s: SelectionSettings, chain: ChainRecord, g: int, out: Path) -> None:
    """Read generation ``g``'s payoffs (summed over its games), apply the rule, plan
    generation ``g + 1`` (its assignment and run ids)."""
    rec = chain.generations[g]
    totals = dict.fromkeys(rec.assignment, 0.0)
    for rid in rec.run_ids:
        got = spec.seat_payoffs(out / rid)
        missing = [a for a in rec.assignment if a not in got]
        if missing:
            raise SelectionError(f"run {rid}: no payoff for seat(s) {missing} (payoffs for {sorted(got)})")
        for a in totals:
            totals[a] += float(got[a])
    rec.payoffs = totals
    rng = _rng(config.seed, chain.chain, g)
    if s.rule == "replicator":
        nxt, rec.note = replicator_step(rec.assignment, totals, rng)
    else:
        before = chain.generations[g - 1].wealth if g else dict.fromkeys(rec.assignment, s.initial_wealth)
        step = eom_step(rec.assignment, totals, before or {}, rng, initial_wealth=s.initial_wealth, rent=s.rent)
        rec.wealth, rec.deaths, rec.births, rec.note = step.wealth, step.deaths, step.births, step.note
        nxt = step.assignment
    if g + 1 < s.generations:
        chain.generations.append(GenerationRecord(generation=g + 1, assignment=nxt, run_ids=[
            _config_for(config, nxt, s.part, chain.chain, g + 1, s.rule, j).run_id for j in range(s.games)]))


# -- analysis ---------------------------------------------------------------------------------
def _state_of(data: Any) -> SelectionState:
    if isinstance(data, SelectionState):
        return data
    if isinstance(data, SelectionResult):
        return data.state
    state = read_state(Path(data))
    if state is None:
        raise SelectionError(f"{Path(data) / STATE_FILE}: no chain state here (not a selection output folder)")
    return state


def seat_rows(data: Any) -> Any:
    """One row per chain x played generation x seat: ``chain, generation, seat, model,
    payoff`` (summed over the generation's games), ``wealth`` (after the generation,
    ``eom``; else null), ``died`` (``eom``: bankrupt after it), ``run_ids``.
    ``data``: an output folder, a :class:`SelectionResult` or a :class:`SelectionState`.

    Raises:
        SelectionError: no or a damaged chain state (named).
    """
    import polars as pl

    rows = []
    for c in _state_of(data).chains:
        for g in c.generations:
            if g.payoffs is None:
                continue  # planned, not played
            for seat, model in g.assignment.items():
                rows.append({"chain": c.chain, "generation": g.generation, "seat": seat, "model": model,
                             "payoff": g.payoffs[seat], "wealth": (g.wealth or {}).get(seat),
                             "died": seat in g.deaths, "run_ids": ",".join(g.run_ids)})
    return pl.DataFrame(rows, schema={"chain": pl.Int64, "generation": pl.Int64, "seat": pl.String,
                                      "model": pl.String, "payoff": pl.Float64, "wealth": pl.Float64,
                                      "died": pl.Boolean, "run_ids": pl.String})


def shares(data: Any) -> Any:
    """The share of each model among the seats, per chain and played generation:
    ``chain, generation, model, seats, share`` (0..1; a model that holds no seat in a
    generation has a row with share 0). ``data`` as :func:`seat_rows`."""
    import polars as pl

    state = _state_of(data)
    population = list(state.parsed_settings().population)
    rows = []
    for c in state.chains:
        for g in c.generations:
            if g.payoffs is None:
                continue
            n = len(g.assignment)
            for m in population:
                k = sum(a == m for a in g.assignment.values())
                rows.append({"chain": c.chain, "generation": g.generation, "model": m, "seats": k, "share": k / n})
    return pl.DataFrame(rows, schema={"chain": pl.Int64, "generation": pl.Int64, "model": pl.String,
                                      "seats": pl.Int64, "share": pl.Float64})


def share_summary(data: Any, level: float = 0.95) -> Any:
    """The mean share of each model per generation over the chains that played it (the
    chains are the independent units): ``generation, model, chains, share, ci_low,
    ci_high, why``.

    The interval (``level``, default 95%) is :func:`scarce_lab.analysis.stats.bounded_mean_ci`
    on the chains' shares (bounds 0 and 1), printed from :data:`MIN_CHAINS` chains on: a
    chain's share piles up at 0 and 1 once a model is fixed or lost, and
    ``benchmarks/bench_selection_coverage.py`` measured that interval's worst coverage
    on simulated chains (both rules; dominant, frequency-dependent and neutral payoffs;
    generations 1-5) at 0.969-0.986 from 3 to 30 chains and 0.928 at 2 chains (1000
    datasets per cell). Below 3 chains, no interval and ``why`` says so. ``data`` as
    :func:`seat_rows`.
    """
    import polars as pl

    from ..analysis.stats import bounded_mean_ci

    frame = shares(data)
    rows = []
    for (g, m), part in frame.group_by(["generation", "model"], maintain_order=True):
        values = part["share"].to_list()
        mean = sum(values) / len(values)
        lo = hi = None
        why = ""
        if len(values) >= MIN_CHAINS:
            _, lo, hi = bounded_mean_ci(values, 0.0, 1.0, level=level)
        else:
            why = (f"{len(values)} chain(s): an interval is printed from {MIN_CHAINS} chains, where its coverage "
                   "was checked")
        rows.append({"generation": g, "model": m, "chains": len(values), "share": mean, "ci_low": lo,
                     "ci_high": hi, "why": why})
    return pl.DataFrame(rows, schema={"generation": pl.Int64, "model": pl.String, "chains": pl.Int64,
                                      "share": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                                      "why": pl.String}).sort("generation", "model")


def share_finding(data: Any, name: str = "selection_shares") -> Any:
    """The share of each model over generations as a
    :class:`~scarce_lab.analysis.findings.Finding` (notebook 08's "Selection"): the
    table of :func:`share_summary`, one panel per model (line: mean share over chains;
    band: its 95% interval, from :data:`MIN_CHAINS` chains), a reading sentence, the
    convention (environment, rule, payoff, population, seats, chains, interval), and the
    per-chain shares (:func:`shares`) saved beside it as ``<name>_chains``.
    ``data`` as :func:`seat_rows`."""
    import altair as alt
    import polars as pl

    from ..analysis.figures import (
        ONE_SERIES,
        NoFigure,
        caption,
        chart_data,
        series_colour,
        titled,
        wrap_columns,
    )
    from ..analysis.findings import Finding

    state = _state_of(data)
    s = state.parsed_settings()
    summary = share_summary(state)
    per_chain = shares(state)
    convention = {"environment": state.environment, "rule": s.rule, "payoff": state.payoff,
                  "population": list(s.population), "seats": list(s.seats) or "every seat", "part": s.part,
                  "games_per_generation": s.games, "chains": s.chains, "generations": s.generations,
                  "interval": f"bounded_mean_ci over chains (hull of Student-t and score), from {MIN_CHAINS} chains",
                  **({"initial_wealth": s.initial_wealth, "rent": s.rent if s.rent is not None else "mean payoff"}
                     if s.rule == "eom" else {})}
    if summary.height == 0:
        return Finding(name, text="No generation of this selection has been played yet.", convention=convention,
                       chart=NoFigure("no generation played"))
    last = summary.filter(pl.col("generation") == summary["generation"].max()).sort("share", descending=True)
    top = last.row(0, named=True)
    first = summary.filter((pl.col("generation") == 0) & (pl.col("model") == top["model"]))["share"].item()
    ci = (f" [{top['ci_low']:.2f}, {top['ci_high']:.2f}]" if top["ci_low"] is not None
          else f" (no interval: {top['chains']} chains)")
    reading = (f"Under the {s.rule} rule, {top['model']} holds a mean share of {top['share']:.2f}{ci} of the seats "
               f"after generation {top['generation']} over {top['chains']} chain(s), from {first:.2f} at the start.")
    d = chart_data(summary.with_columns(pl.col("ci_low").fill_null(pl.col("share")),
                                        pl.col("ci_high").fill_null(pl.col("share"))))
    one = series_colour()
    base = alt.Chart(d).encode(x=alt.X("generation:O", title="Generation"))
    band = base.mark_area(color=one, opacity=0.25, description=ONE_SERIES).encode(
        y=alt.Y("ci_low:Q", title="Share of seats", scale=alt.Scale(domain=[0, 1])), y2="ci_high:Q")
    line = base.mark_line(color=one, point=True, description=ONE_SERIES).encode(
        y="share:Q", tooltip=["model", "generation", alt.Tooltip("share:Q", format=".2f"), "chains"])
    models = list(s.population)
    chart = (band + line).properties(width=180, height=140).facet(
        facet=alt.Facet("model:N", title=None, sort=models), columns=wrap_columns(180, len(models)))
    band_text = (f"band: 95% interval over chains (bounded mean interval, from {MIN_CHAINS} chains)"
                 if summary["ci_low"].is_not_null().any() else f"no band: fewer than {MIN_CHAINS} chains")
    from ..registry import get

    chart = titled(chart, f"Share of each model over generations ({get(state.environment).title}, {s.rule})",
                   caption(f"Line: mean share over chains; {band_text}", f"n = {summary['chains'].max()} chains"))
    return Finding(name, frame=summary, chart=chart, reading=reading, convention=convention,
                   extra={f"{name}_chains": per_chain}, method=inspect.getdoc(share_summary) or "")
