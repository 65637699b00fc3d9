"""``scarce-lab run NAME`` and ``scarce-lab table NAME PATH``, one of each for every
registered environment (:mod:`scarce_lab.registry`), built from its spec alone.

``run``: every setting of the environment's config model is an option
(:mod:`scarce_lab.cli._options`), with the spec's :class:`~scarce_lab.registry.RunCommand`
(help, aliases, sweep shorthands and defaults, replicates, preflight, how a sweep is
played); then, written once for every environment, ``--out`` (default ``runs/NAME`` at
the project root, a folder git ignores), ``--resume``, ``--progress``, the executor (``--executor local|ray``,
``--address``; ``--processes`` where the spec plays a sweep over processes), the dollar
cap, the dry run and the check (:mod:`scarce_lab.cli._spend`), cross-play
(:mod:`scarce_lab.cli._crossplay`), ``--config``, ``-S`` and ``--seat``. Every model is
checked before any folder is made. Each finished run is told in one line (the spec's
``outcome``), then the sweep's counts; a run that failed or could not start is one
``error:`` line, and the command exits 1 after the others have run.

``table``: the environment's paper table (``sl.table``: the spec's ``paper_table``) of
a path of any layout ``sl.load`` reads, its options (the spec's ``table_options``) as
typed options, printed as Markdown (the table, the settings every run shares away from
the paper's defaults, and the other tables of the finding), CSV (the table) or JSON
(everything). Warnings of the load and the table go to stderr, once each.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from ..datasets import resolve_path
from . import TableFormat, run_app, table_app
from ._crossplay import apply_crossplay, crossplay_parameters, crossplay_settings, pop_crossplay
from ._executor import executor_parameters, pop_executor, run_failed
from ._human import human_desk, human_parameters
from ._options import _option as option_of
from ._options import common_parameters, config_leaves, expand, fail, parse_kwargs, with_signature
from ._spend import apply_sweep_cap, pop_spend, preview_or_check, spend_parameters

#: Environments whose commands are on the groups already.
_ADDED: set[str] = set()
#: Where runs go when ``--out`` is left out: ``runs/NAME`` at the project root (as ``sl.load``
#: resolves ``runs/NAME``; the working directory outside a project); ``/runs/`` is in the
#: project's .gitignore, so a run never lands in a shipped dataset.
RUNS = Path("runs")
#: ``(add(spec), remove(name))`` of other per-environment command groups built on these
#: options (``select NAME``, :mod:`scarce_lab.cli.select`, registers itself here on import).
COMMAND_HOOKS: list[tuple[Any, Any]] = []


def _leaves(spec: Any) -> list[Any]:
    cmd = spec.cli
    return config_leaves(spec.config, aliases=dict(cmd.aliases), exclude=cmd.exclude,
                         extra_choices={k: tuple(v) for k, v in cmd.shorthands.items()},
                         defaults={k: ", ".join(map(str, v)) for k, v in cmd.default_sweep.items()})


def _run_parameters(spec: Any) -> list[inspect.Parameter]:
    cmd = spec.cli
    kw = inspect.Parameter.KEYWORD_ONLY
    # the settings with a short name (-m, -n, -c: the spec's aliases) first, then the config's order
    leaves = sorted(_leaves(spec), key=lambda leaf: not any(len(n) == 2 for n in leaf.names))
    params = [option_of(leaf) for leaf in leaves]
    if cmd.replicates:
        params.append(inspect.Parameter("replicates", kw, default=cmd.replicates_default, annotation=Annotated[
            int, typer.Option(*cmd.replicates, min=1, help=cmd.replicates_help or "replicates per condition")]))
    params += [
        inspect.Parameter("out", kw, default=None, annotation=Annotated[
            Path | None, typer.Option("--out", "-o", help=f"folder of the run folders (one per run); default: "
                                                         f"{RUNS / spec.name} at the project root (git ignores it)")]),
        inspect.Parameter("resume", kw, default=False, annotation=Annotated[
            bool, typer.Option("--resume", help=f"continue unfinished runs from their last committed "
                                                f"{cmd.resume_unit}")]),
        inspect.Parameter("progress", kw, default=True, annotation=Annotated[
            bool, typer.Option("--progress/--no-progress", help="a progress bar while the runs play")]),
    ]
    if cmd.run_processes is not None:
        params.append(inspect.Parameter("processes", kw, default=1, annotation=Annotated[
            int, typer.Option("--processes", min=1, help=(
                "client processes on this machine (runs dealt round-robin; --concurrency and rate limits are "
                "split between them): for sweeps whose model calls are fast enough that one process's CPU is "
                "the limit"))]))
    # --human only where a seat can be a person (no option listed that could never be accepted)
    return [*params, *executor_parameters(), *spend_parameters(), *crossplay_parameters(), *common_parameters(),
            *(human_parameters() if spec.config.HUMAN_SEATS else [])]


def _configs(spec: Any, kwargs: dict[str, Any], *, dry_run: bool) -> list[Any]:
    """Every config of the sweep the options ask for (validated; cross-play applied).

    Raises:
        typer.BadParameter: a value that does not validate (field, value and origin
            named) or a grid that cannot be planned.
    """
    from ..config.base import ConfigError, parse_override, read_config_file

    cmd = spec.cli
    replicates = kwargs.pop("replicates", None)
    xp = pop_crossplay(kwargs)
    typed = list(kwargs.get("set_values") or [])  # the -S the user typed (parsed.overrides adds --seat's)
    parsed = parse_kwargs(spec.config, _leaves(spec), kwargs)
    population = crossplay_settings(xp, parsed)
    try:
        overrides = [parse_override(o) for o in parsed.overrides]
    except ConfigError as exc:
        raise fail(exc, "-S") from None
    _check_overrides(overrides[len(overrides) - len(typed):], overrides[:len(overrides) - len(typed)], parsed)
    set_elsewhere = {key for key, _ in overrides}
    if parsed.file is not None:
        set_elsewhere |= set(read_config_file(parsed.file))
    for field, values in cmd.default_sweep.items():
        if field not in parsed.sweep and field not in parsed.values and field not in set_elsewhere:
            parsed.sweep[field] = list(values)
    try:
        configs = expand(spec.config, parsed, order=cmd.order, replicates=replicates,
                         expand_values={k: {s: list(v) for s, v in m.items()} for k, m in cmd.shorthands.items()})
    except ConfigError as exc:
        raise fail(exc) from None
    return apply_crossplay(spec.name, configs, population, dry_run=dry_run)


def _check_overrides(typed: list[tuple[str, Any]], seats: list[tuple[str, Any]], parsed: Any) -> None:
    """One command line, one value per setting: a key given twice (by ``-S``, or by
    ``--seat``) with two values, or a sweep option (several values) that an ``-S`` would
    collapse into one, is refused; an ``-S`` over an option's or a ``--seat``'s value is
    said on stderr (``-S`` wins, docs/running.md's precedence).

    Raises:
        typer.BadParameter: naming the key and both values.
    """
    options = {k: v for k, v in parsed.values.items()} | {k: v[0] for k, v in parsed.sweep.items() if v}
    for given, hint in ((seats, "--seat"), (typed, "-S")):
        seen: dict[str, Any] = {}
        for key, value in given:
            if key in seen and seen[key] != value:
                raise typer.BadParameter(f"{key} is set twice ({seen[key]!r} and {value!r}); give it once",
                                         param_hint=hint)
            seen[key] = value
        if hint == "--seat":
            options |= seen
    for key, value in typed:
        if len(parsed.sweep.get(key) or ()) > 1:
            raise typer.BadParameter(f"-S {key}={value!r} would replace the sweep {key}={parsed.sweep[key]} "
                                     "given by its option; give one or the other", param_hint="-S")
        if options.get(key, value) != value:
            typer.echo(f"warning: -S {key}={value!r} replaces the option's value {options[key]!r}", err=True)


def _preflight(spec: Any, configs: list[Any]) -> None:
    """Every model usable and the spec's own checks, before any folder is made.

    Raises:
        typer.BadParameter: the problem, named.
    """
    from ..runners.preflight import ModelUnavailableError, check_configs

    try:
        if spec.cli.preflight is not None:
            spec.cli.preflight(configs)
        check_configs(configs)
    except ModelUnavailableError as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from None
    except OSError as exc:
        raise typer.BadParameter(f"{exc}") from None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def _play(spec: Any, configs: list[Any], out: Path, *, resume: bool, progress: bool, executor: str,
          address: str | None, processes: int, max_cost: float | None) -> list[Any]:
    """:func:`scarce_lab.runners.sweep.play` with CLI errors."""
    from ..runners.executors import ExecutorError
    from ..runners.sweep import play

    try:
        return play(spec.name, configs, out, resume=resume, progress=progress, executor=executor, address=address,
                    processes=processes, max_cost=max_cost)
    except ExecutorError as exc:
        raise typer.BadParameter(str(exc), param_hint="--executor") from None
    except ValueError as exc:  # limits that cannot be split, the same run twice
        raise typer.BadParameter(str(exc), param_hint="--processes" if processes > 1 else None) from None


def _report(spec: Any, outcomes: list[Any], out: Path) -> int:
    """One line per run (its outcome, or its error), then the counts; the exit status:
    1 when a run failed or did not start, or when every model call failed."""
    from ..data.loaders import call_errors

    bad = 0
    done = []
    for o in outcomes:
        run_dir = Path(out) / o.run_id
        if o.status in ("complete", "skipped"):
            done.append(run_dir)
            try:
                line = spec.outcome(run_dir) if spec.outcome is not None else o.status
            except (OSError, ValueError) as exc:  # the folder cannot be read back: say so, never guess
                line = f"{o.status} (its outcome cannot be read: {exc})"
            typer.echo(f"{run_dir}: {line}" + (" (already complete: skipped)" if o.status == "skipped" else ""))
        elif o.status == "failed":
            bad += 1
            try:
                run_failed(run_dir, RuntimeError(o.error or "failed"))
            except typer.Exit:
                pass
        else:  # error (could not start) or not_started (the cost cap)
            bad += 1
            typer.echo(f"error: {o.run_id}: {o.status}: {o.error}", err=True)
    counts = Counter(o.status for o in outcomes)
    typer.echo(f"{len(outcomes)} {spec.title} run(s) -> {out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    n, failed, first = call_errors(done)
    if n and failed == n:
        typer.echo(f"error: all {n} model calls failed (first: {first})", err=True)
        return 1
    if failed:
        typer.echo(f"warning: {failed} of {n} model calls failed and fell back (first: {first})", err=True)
    return 1 if bad else 0


def _run_command(spec: Any):
    def run_cmd(**kwargs: Any) -> None:
        out, resume, progress = kwargs.pop("out"), kwargs.pop("resume"), kwargs.pop("progress")
        processes, human = kwargs.pop("processes", 1), kwargs.pop("human", None)
        executor, address = pop_executor(kwargs)
        if processes > 1 and executor != "local":
            raise typer.BadParameter("--processes is for --executor local", param_hint="--processes")
        max_cost, dry_run, check = pop_spend(kwargs)
        out = out if out is not None else resolve_path(RUNS / spec.name)  # the default: at the project root
        if out.exists() and not out.is_dir():
            raise typer.BadParameter(f"{out} is a file, not a folder for run folders", param_hint="--out")
        configs = _configs(spec, kwargs, dry_run=dry_run)
        configs = apply_sweep_cap(configs, out, max_cost)
        if preview_or_check(spec.name, configs, dry_run, check):
            return
        from ..llm.human import use_desk

        with use_desk(human_desk(configs, human, processes=processes, executor=executor)):
            _preflight(spec, configs)
            outcomes = _play(spec, configs, out, resume=resume, progress=progress, executor=executor,
                             address=address, processes=processes, max_cost=max_cost)
        code = _report(spec, outcomes, out)
        if code:
            raise typer.Exit(code)

    help_text = spec.cli.help or f"Play {spec.title} and record one run folder per run under OUT."
    run_cmd.__doc__ = (f"{help_text}\n\nEvery setting of the {spec.title} config is an option (or -S key=value); "
                       "repeat a sweep option for one run per value.")
    return with_signature(run_cmd, _run_parameters(spec))


# -- table ------------------------------------------------------------------------------
def _plain_doc(text: str) -> str:
    """A docstring's text as a terminal shows it: ``:func:`x``` and ````x```` as ``x``."""
    import re

    return re.sub(r"``([^`]+)``", r"\1", re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text))


def _arg_docs(doc: str) -> dict[str, str]:
    """``{name: help}`` of the ``Args:`` section of a Google-style docstring (each
    entry ``name: text``, continued on more indented lines), as plain text."""
    import re

    out: dict[str, str] = {}
    section = doc.split("\nArgs:\n", 1)[1] if "\nArgs:\n" in doc else ""
    for line in section.splitlines():
        if line and not line.startswith(" "):
            break  # the next section
        entry = re.match(r"^    (\w+): (.*)$", line)
        if entry:
            out[entry[1]] = entry[2]
        elif out and line.strip():
            last = next(reversed(out))
            out[last] += " " + line.strip()
    return {k: _plain_doc(v) for k, v in out.items()}


def _option_helps(spec: Any) -> dict[str, str]:
    """``{option: help}`` from the ``Args:`` of the face's ``table`` and of the spec's
    ``paper_table`` (the latter wins). Importing the face imports the environment's
    analysis (numpy, every finding): done when a table command's help is shown
    (:class:`_TableCommand`), not at start-up."""
    face_table = getattr(importlib.import_module(spec.face), "table", None) if spec.face else None
    return _arg_docs(inspect.getdoc(face_table) or "") | _arg_docs(inspect.getdoc(spec.paper_table) or "")


class _TableCommand(TyperCommand):
    """A ``table NAME`` command whose options take their help from the docstrings
    (:func:`_option_helps`) when the help is shown."""

    spec: Any = None  # set by :func:`_table_command`'s subclass

    def format_help(self, ctx: Any, formatter: Any) -> None:
        helps = _option_helps(self.spec)
        for p in self.params:
            if p.name and p.name.startswith("opt_") and p.name[len("opt_"):] in helps:
                p.help = helps[p.name[len("opt_"):]]
        super().format_help(ctx, formatter)


def _table_parameters(spec: Any) -> list[inspect.Parameter]:
    """One typed option per entry of the spec's ``table_options`` (choices: a choice;
    ``bool``: a ``--x/--no-x`` flag; another type: a value), default from the signature
    of its ``paper_table``; help from the docstrings when shown (:class:`_TableCommand`),
    "one of ..." for a choice they leave out."""
    kw = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.signature(spec.paper_table).parameters
    params = []
    for name, rule in spec.table_options.items():
        default = signature[name].default if name in signature else None
        flag = "--" + name.replace("_", "-")
        if isinstance(rule, tuple):
            choice = enum.StrEnum(f"{spec.name.capitalize()}{name.capitalize()}Choice", {str(c): str(c) for c in rule})
            ann = Annotated[choice, typer.Option(flag, help=f"one of {', '.join(map(str, rule))}")]
            default = choice(str(default)) if default is not None else None
        elif rule is bool:
            ann = Annotated[bool, typer.Option(f"{flag}/--no-{flag[2:]}")]
            default = bool(default)
        else:
            ann = Annotated[rule, typer.Option(flag)]
        params.append(inspect.Parameter(f"opt_{name}", kw, default=default, annotation=ann))
    return params


def _print_table(found: Any, fmt: TableFormat) -> None:
    if fmt == TableFormat.json:
        typer.echo(json.dumps(found.to_dict(), indent=2, default=str))
    elif fmt == TableFormat.csv:
        from ..data.csvsafe import frame_to_csv

        typer.echo(frame_to_csv(found.frame) if found.frame is not None else "", nl=False)
    else:
        typer.echo(found.markdown())
        if found.reading:
            typer.echo(f"\n{found.reading}")


def _echo_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Each warning about the data (a ``UserWarning``: runs left out, torn lines, files
    not read) once on stderr; those that say data were read despite a failed check (a
    class with ``forced = True``) in bold red. Libraries' numerical and deprecation
    warnings are not the user's business here."""
    seen = set()
    for w in caught:
        text = str(w.message)
        if not issubclass(w.category, UserWarning) or text in seen:
            continue
        seen.add(text)
        if getattr(w.category, "forced", False):
            typer.secho(f"WARNING: {text}", err=True, fg=typer.colors.RED, bold=True)
        else:
            typer.echo(f"warning: {text}", err=True)


def _table_command(spec: Any):
    def table_cmd(path: Path, fmt: TableFormat, **kwargs: Any) -> None:
        from ..datasets import load, table

        options = {k[len("opt_"):]: (v.value if isinstance(v, enum.Enum) else v) for k, v in kwargs.items()}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            problem, hint = None, "PATH"
            try:
                data = load(path, force=options.get("force") is True)
                hint = None  # what fails now is the table of a dataset that loaded (an option, pooling)
                found = table(data, spec.name, **options)
            except (FileNotFoundError, TypeError, ValueError) as exc:  # TrajectoryFileError, PoolingError...
                problem = exc
        _echo_warnings(caught)
        if problem is not None:
            raise typer.BadParameter(f"{path}: {problem}", param_hint=hint) from None
        _print_table(found, fmt)

    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("path", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[
            Path, typer.Argument(metavar="PATH",
                                 help="a run folder, a folder of runs, a Parquet export or a published layout")]),
        inspect.Parameter("fmt", kw, default=TableFormat.markdown, annotation=Annotated[
            TableFormat, typer.Option("--format", "-f", help=(
                "markdown: the table and every other table of the finding; csv: the table; json: everything"))]),
        *_table_parameters(spec),
    ]
    table_cmd.__doc__ = (f"The paper table of a {spec.title} dataset (sl.table), with the settings every run "
                         "shares that depart from the paper's defaults.\n\n"
                         + _plain_doc((inspect.getdoc(spec.paper_table) or "").split("\n\n")[0]))
    return with_signature(table_cmd, params)


def add_commands(spec: Any) -> None:
    """Add ``run NAME`` and ``table NAME`` for ``spec`` (once)."""
    if spec.name in _ADDED:
        return
    _ADDED.add(spec.name)
    run_app.command(spec.name)(_run_command(spec))
    table_app.command(spec.name, cls=type("TableCommand", (_TableCommand,), {"spec": spec}))(_table_command(spec))
    for add, _ in COMMAND_HOOKS:
        add(spec)


def remove_commands(name: str) -> None:
    """Take the commands of ``name`` off the groups (a test that unregisters its
    environment cleans up with it)."""
    for group in (run_app, table_app):
        group.registered_commands[:] = [c for c in group.registered_commands if c.name != name]
    for _, remove in COMMAND_HOOKS:
        remove(name)
    _ADDED.discard(name)


def add_all() -> None:
    """Commands for every registered environment (one registered after the CLI was
    built included: :func:`scarce_lab.cli.main` calls this before it parses the command
    line)."""
    from ..registry import specs

    for spec in specs():
        add_commands(spec)
