"""``--population``, ``--background``, ``--focal-seats`` and ``--seat-part`` for every
run command (the shipped ones and the generic :mod:`scarce_lab.cli.environment`): a
cross-play grid (:mod:`scarce_lab.runners.crossplay`). A ``population:`` block of
``--config`` sets the same (``members``, ``background``, ``focal_seats``, ``part``);
the options override it field by field.

The grid is printed (compositions, runs and the model calls per model from the dry
run's counting, :func:`scarce_lab.runners.preview.preview`) before anything runs.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import typer

#: The top-level key of a config file that holds the grid.
BLOCK = "population"


def crossplay_parameters() -> list[inspect.Parameter]:
    """The four options, for generated run commands."""
    return [
        inspect.Parameter("population", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            str | None, typer.Option("--population", help=(
                "cross-play: the focal population, models or scripted/<policy> separated by commas; every member "
                "plays the focal seats against every background member, over the seeds/simulations (one "
                "condition per composition)"))]),
        inspect.Parameter("background", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            str | None, typer.Option("--background", help=(
                "cross-play: the background members (comma-separated) that fill the seats that are not focal "
                "(default: the population)"))]),
        inspect.Parameter("focal_seats", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            str | None, typer.Option("--focal-seats", help=(
                "cross-play: a count (the first N seats in seat order) or seat keys, agent ids or roles "
                "(king, a0,a1) (default: 1)"))]),
        inspect.Parameter("seat_part", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            str | None, typer.Option("--seat-part", help=(
                "cross-play: the part of each seat the population plays, where agents are several models "
                "(SCARCE: negotiator or solver; default: the whole seat)"))]),
    ]


def pop_crossplay(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take the four options out of a command's kwargs."""
    return {k: kwargs.pop(k, None) for k in ("population", "background", "focal_seats", "seat_part")}


def crossplay_settings(options: dict[str, Any], parsed: Any) -> Any | None:
    """The grid's settings from the options and the ``population:`` block of
    ``parsed.file`` (which is then left out of the run settings), or ``None`` when
    neither asks for a grid.

    Raises:
        typer.BadParameter: a setting that cannot be planned (named).
    """
    from ..config.base import ConfigError, read_config_file
    from ..runners.crossplay import CrossPlayError, PopulationSettings

    block: dict[str, Any] = {}
    if parsed.file is not None:
        try:
            raw = read_config_file(parsed.file)
        except ConfigError:
            raw = {}  # the config build names the file's problem
        if BLOCK in raw:
            parsed.file_ignore = (*parsed.file_ignore, BLOCK)
            b = raw[BLOCK]
            block = dict(b) if isinstance(b, dict) else {"members": b}
    given = {"members": options.get("population"), "background": options.get("background"),
             "focal_seats": options.get("focal_seats"), "part": options.get("seat_part")}
    if given["members"] is None and not block:
        extra = [f"--{k.replace('_', '-')}" for k in ("background", "focal_seats", "seat_part") if options.get(k)]
        if extra:
            raise typer.BadParameter(f"{', '.join(extra)} needs --population (or a population: block in --config)",
                                     param_hint="--population")
        return None
    merged = {**block, **{k: v for k, v in given.items() if v is not None}}
    try:
        return PopulationSettings.from_block(merged, where=BLOCK)
    except CrossPlayError as exc:
        raise typer.BadParameter(str(exc), param_hint="--population") from None


def apply_crossplay(environment: str, configs: list[Any], settings: Any | None, *, dry_run: bool = False) -> list[Any]:
    """``configs`` crossed into the grid (unchanged when ``settings`` is ``None``); the
    plan is printed first, with the model calls per model unless ``dry_run`` (whose
    own plan prints them).

    Raises:
        typer.BadParameter: the grid cannot be planned (named).
    """
    if settings is None:
        return configs
    from ..runners.crossplay import CrossPlayError, format_plan, plan_crossplay

    try:
        plan = plan_crossplay(configs, settings, environment=environment)
    except CrossPlayError as exc:
        raise typer.BadParameter(str(exc), param_hint="--population / --focal-seats / --seat-part") from None
    pv = None
    if not dry_run:
        from ..runners.preview import preview

        try:
            pv = preview(environment, plan.configs)
        except ValueError as exc:  # an environment that cannot count its calls
            typer.echo(f"cross-play: model calls not counted: {exc}", err=True)
    typer.echo(format_plan(plan, pv))
    return plan.configs
