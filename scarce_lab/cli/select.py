"""``scarce-lab select NAME --population A,B[,...] --generations G --rule replicator|eom
--chains C --out DIR``: selection chains over models (:mod:`scarce_lab.runners.selection`),
one command per environment that gives payoffs per seat
(:attr:`scarce_lab.registry.EnvironmentSpec.seat_payoffs`).

The base config is built as ``run NAME`` builds it (every setting an option, ``--config``,
``-S``, ``--seat``) and must be one config (no sweep): its ``seed`` seeds the chains.
A rerun into the same ``--out`` resumes; a finished selection runs nothing. The share
of each model per generation (mean over chains; intervals from
:data:`~scarce_lab.runners.selection.MIN_CHAINS` chains) is printed at the end.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from . import _PLAIN, app

select_app = typer.Typer(help="Selection over models across generations: chains of runs whose seats are "
                              "reassigned by payoff (replicator or the Economy of Minds' birth/death rule).", **_PLAIN)
app.add_typer(select_app, name="select")


def _parameters(spec: Any) -> list[inspect.Parameter]:
    from ._options import _option as option_of
    from ._options import common_parameters
    from .environment import _leaves

    kw = inspect.Parameter.KEYWORD_ONLY
    leaves = sorted(_leaves(spec), key=lambda leaf: not any(len(n) == 2 for n in leaf.names))
    own = [
        ("population", str, ..., ("--population",), "the models, comma-separated (at least two; scripted/<policy> "
                                                     "or a model)"),
        ("generations", int, ..., ("--generations", "-g"), "generations per chain (>= 1)"),
        ("rule", str, ..., ("--rule",), "replicator (fitness-proportional resampling) or eom (the Economy of Minds' "
                                        "birth/death rule: the bankrupt seat takes the richest seat's model)"),
        ("chains", int, 1, ("--chains",), "independent chains (the units of the share intervals)"),
        ("games", int, 1, ("--games",), "runs per generation (their payoffs summed per seat)"),
        ("select_seats", str, "", ("--select-seats",), "the seats the population plays, agent ids or roles "
                                                       "(default: every seat)"),
        ("seat_part", str | None, None, ("--seat-part",), "the part of each seat the population plays where "
                                                          "agents are several models (SCARCE: negotiator)"),
        ("initial_wealth", float, 0.0, ("--initial-wealth",), "eom: each seat's wealth at the start and a newborn's"),
        ("rent", float | None, None, ("--rent",), "eom: paid per seat per generation (default: the generation's "
                                                  "mean payoff)"),
        ("out", Path, ..., ("--out", "-o"), "the output folder (run folders and selection.json)"),
        ("progress", bool, False, ("--progress/--no-progress",), "a progress bar per generation"),
    ]
    params = [inspect.Parameter(name, kw, default=default, annotation=Annotated[
        ann, typer.Option(*flags, help=text)]) for name, ann, default, flags, text in own]
    return [*params, *(option_of(leaf) for leaf in leaves), *common_parameters()]


def _command(spec: Any):
    def select_cmd(**kwargs: Any) -> None:
        from ..runners.selection import SelectionError, select
        from .environment import _configs

        mine = {k: kwargs.pop(k) for k in ("population", "generations", "rule", "chains", "games", "select_seats",
                                           "seat_part", "initial_wealth", "rent", "out", "progress")}
        configs = _configs(spec, kwargs, dry_run=True)
        if len(configs) != 1:
            raise typer.BadParameter(f"a selection starts from one base config; these options give {len(configs)} "
                                     f"({', '.join(c.condition_label() for c in configs[:4])}...): give one value of "
                                     "each swept setting (e.g. --condition cpr)")
        try:
            result = select(configs[0], mine["population"], generations=mine["generations"], rule=mine["rule"],
                            out=mine["out"], chains=mine["chains"], games=mine["games"], seats=mine["select_seats"],
                            part=mine["seat_part"], initial_wealth=mine["initial_wealth"], rent=mine["rent"],
                            progress=mine["progress"])
        except SelectionError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        summary = result.summary()
        typer.echo(f"{spec.title} selection ({mine['rule']}) -> {result.out}: {len(result.played)} run(s) played now; "
                   f"payoff: {result.state.payoff}")
        last = summary.filter(summary["generation"] == summary["generation"].max())
        for r in last.iter_rows(named=True):
            ci = f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if r["ci_low"] is not None else ""
            typer.echo(f"  generation {r['generation']}: {r['model']} share {r['share']:.2f}{ci} over {r['chains']} "
                       f"chain(s)" + (f" ({r['why']})" if r["why"] else ""))

    select_cmd.__doc__ = (f"Run (or resume) selection chains of {spec.title} runs under OUT: the population's models "
                          "are reassigned to the seats between generations by payoff. Every setting of the "
                          f"{spec.title} config is an option (one value each), or -S key=value.")
    from ._options import with_signature

    return with_signature(select_cmd, _parameters(spec))


def add_select(spec: Any) -> None:
    """Add ``select NAME`` for ``spec`` when it gives payoffs per seat (once)."""
    if spec.seat_payoffs is not None and not any(c.name == spec.name for c in select_app.registered_commands):
        select_app.command(spec.name)(_command(spec))


def remove_select(name: str) -> None:
    """Take ``select NAME`` off the group."""
    select_app.registered_commands[:] = [c for c in select_app.registered_commands if c.name != name]


def _hook() -> None:
    from . import environment

    environment.COMMAND_HOOKS.append((add_select, remove_select))
    for spec in _specs():
        add_select(spec)


def _specs() -> list[Any]:
    from ..registry import specs

    return list(specs())


_hook()
