"""``scarce-lab study list | show NAME | run NAME ... | status DIR | report DIR``: the
declared studies (:mod:`scarce_lab.studies`), run as an eval-set
(:mod:`scarce_lab.studies.run`) and reported against the paper
(:mod:`scarce_lab.studies.report`).

Every bad value is refused before anything runs, naming the option and the value.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from . import app
from ._executor import ADDRESS_HELP, EXECUTOR_HELP, ExecutorChoice

study_app = typer.Typer(help="Paper experiments declared as studies: list, show, run, status, report.",
                        rich_markup_mode=None, no_args_is_help=True)
app.add_typer(study_app, name="study")


class ReportFormat(StrEnum):
    markdown = "markdown"
    csv = "csv"
    latex = "latex"


def _study(name: str) -> Any:
    from ..studies import StudyError, get

    try:
        return get(name)
    except StudyError as exc:
        raise typer.BadParameter(str(exc), param_hint="NAME") from None


def _pairs(values: list[str], hint: str) -> dict[str, Any]:
    """``key=value`` strings as a dict (values parsed as ``-S`` parses them).

    Raises:
        typer.BadParameter: no ``=``, an empty key, or a key given twice.
    """
    from ..config.base import ConfigError, parse_override

    out: dict[str, Any] = {}
    for text in values:
        try:
            key, value = parse_override(text)
        except ConfigError as exc:
            raise typer.BadParameter(f"{text!r}: {exc}", param_hint=hint) from None
        if key in out and out[key] != value:
            raise typer.BadParameter(f"{key} is set twice ({out[key]!r} and {value!r})", param_hint=hint)
        out[key] = value
    return out


@study_app.command("list")
def list_cmd() -> None:
    """The declared studies: name, environment, notebook and what each replicates."""
    from ..studies import studies

    for st in studies():
        what = f"{st.source} {', '.join(st.replicates)}".strip()
        typer.echo(f"{st.name}: {st.title} [{st.environment}; {st.notebook}; {len(st.arms)} arm(s)]"
                   + (f" replicates {what}" if st.replicates else ""))


@study_app.command("show")
def show(name: Annotated[str, typer.Argument(metavar="NAME", help="a study name (scarce-lab study list)")]) -> None:
    """The design of a study and every setting where it departs from the paper."""
    typer.echo(_study(name).show())


@study_app.command("run")
def run_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="a study name (scarce-lab study list)")],
    model: Annotated[list[str] | None, typer.Option(
        "--model", "-m", help="the model of the study's first model field; repeat for several models (one arm set "
                              "each); default: the profile's models")] = None,
    role: Annotated[list[str] | None, typer.Option(
        "--role", help="ROLE=MODEL: a model per model field, e.g. negotiator_model=openai/gpt-4o-mini")] = None,
    api_base: Annotated[str | None, typer.Option(
        "--api-base", help="the models' endpoint (an OpenAI-compatible server): -S llm.api_base=URL")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help="a profile of the study (its models, settings, "
                                                                  "seeds, arms; e.g. the shipped data's)")] = None,
    judges: Annotated[str | None, typer.Option(
        "--judges", "-j", help="the judge panel, comma-separated models (default: the study's model, as many "
                               "times as its labels ask)")] = None,
    seed: Annotated[list[int] | None, typer.Option("--seed", help="a seed (repeat; default: 0..seeds-1)")] = None,
    arm: Annotated[list[str] | None, typer.Option("--arm", help="an arm to run (repeat; default: all)")] = None,
    set_values: Annotated[list[str] | None, typer.Option(
        "-S", "--set", help="key=value: a config setting for every run (dotted keys; JSON values)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="the study's output folder (default: the profile's out, else runs/studies/NAME)")] = None,
    cost_limit: Annotated[float | None, typer.Option(
        "--cost-limit", min=0.0, help="US dollars for the whole study, players and judges: below the plan's low "
                                      "estimate nothing runs; otherwise the sweep's cap")] = None,
    target_width: Annotated[list[str] | None, typer.Option(
        "--target-width", help="add seeds in batches until every headline interval is at most this wide: W for "
                               "every headline metric (each in its own unit), or METRIC=W, repeated (only those "
                               "are watched); needs --max-seeds or --cost-limit; only metrics whose interval is "
                               "bounded may be watched (study show says which)")] = None,
    max_seeds: Annotated[int | None, typer.Option("--max-seeds", min=1, help="seeds per arm at most "
                                                                             "(--target-width)")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, help="further attempts of a failed run")] = 2,
    executor: Annotated[ExecutorChoice, typer.Option("--executor", help=EXECUTOR_HELP)] = ExecutorChoice.local,
    address: Annotated[str | None, typer.Option("--address", help=ADDRESS_HELP)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan and exit; nothing is sent")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="progress bars")] = True,
) -> None:
    """Run what is missing of study NAME into OUT (an eval-set: complete runs are kept,
    unfinished ones resumed, failed ones retried), then label it with the judge panel.
    The plan (runs, calls, tokens and dollars of every role) is printed first."""
    from ..datasets import resolve_path
    from ..studies import StudyError
    from ..studies.run import plan, run


    st = _study(name)
    for hint, check, values in (("--arm", st.arm, arm or []), ("--profile", st.profile, [profile] if profile else [])):
        for value in values:
            try:
                check(value)
            except StudyError as exc:
                raise typer.BadParameter(str(exc), param_hint=hint) from None
    roles = _pairs(role or [], "--role")
    unknown = sorted(set(roles) - set(st.model_roles))
    if unknown:
        raise typer.BadParameter(f"{unknown}: not model fields of study {st.name!r} ({st.model_roles})",
                                 param_hint="--role")
    overrides = _pairs(set_values or [], "-S")
    if api_base is not None:
        overrides["llm.api_base"] = api_base
    if address is not None and executor != ExecutorChoice.ray:
        raise typer.BadParameter("--address is for --executor ray", param_hint="--address")
    if out is None:
        prof = st.profile(profile)
        out = resolve_path(Path(prof.out or f"runs/studies/{st.name}"))
    if out.exists() and not out.is_dir():
        raise typer.BadParameter(f"{out} is a file, not a folder", param_hint="--out")
    widths = _widths(target_width)
    panel = None if judges is None else [j.strip() for j in judges.split(",")]
    if panel is not None and not all(panel):
        raise typer.BadParameter(f"{judges!r}: an empty judge name", param_hint="--judges")
    kw = dict(seeds=seed or None, arms=arm or None, profile=profile, overrides=overrides or None, judges=panel,
              roles=roles or None)
    try:
        if dry_run:
            typer.echo(plan(st, model or None, out=out, **kw).text())
            return
        result = run(st, model or None, out=out, cost_limit=cost_limit, target_width=widths,
                     max_seeds=max_seeds, retries=retries, executor=executor.value, address=address,
                     progress=progress, say=typer.echo, **kw)
    except StudyError as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(result.text())
    if any(a.failed or a.unfinished or a.missing for a in result.arms.values()):
        raise typer.Exit(1)


@study_app.command("status")
def status_cmd(out: Annotated[Path, typer.Argument(metavar="DIR", help="a study's output folder")]) -> None:
    """Per arm: runs done, failed, unfinished and missing, model calls and dollars spent,
    the headline interval widths; and what stopped the last run."""
    from ..studies import StudyError
    from ..studies.run import status

    try:
        typer.echo(status(out).text())
    except StudyError as exc:
        raise typer.BadParameter(str(exc), param_hint="DIR") from None


@study_app.command("report")
def report_cmd(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="a study's output folder")],
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="markdown, csv or latex")] = ReportFormat.markdown,
    save: Annotated[Path | None, typer.Option("--save", help="also write the table to this folder")] = None,
) -> None:
    """The replication table of the study in DIR: per published number, the paper's
    value, the estimate with its 95% interval, and the verdict
    (:func:`scarce_lab.studies.report.report`)."""
    from ..data.csvsafe import frame_to_csv
    from ..studies import StudyError, get
    from ..studies.report import report
    from ..studies.run import LABELS, read_state

    try:
        state = read_state(out)
        if state is None:
            raise StudyError(f"{out}: no study.json: not the output folder of a study run (scarce-lab study run)")
        labels = out / LABELS / "labels.parquet"
        found = report(get(state["study"]), out, labels=labels if labels.exists() else None)
    except StudyError as exc:
        raise typer.BadParameter(str(exc), param_hint="DIR") from None
    text = {"markdown": found.markdown, "csv": lambda: frame_to_csv(found.frame),
            "latex": getattr(found, "latex", None)}[fmt.value]
    if text is None:
        raise typer.BadParameter(f"this report has no {fmt.value} form", param_hint="--format")
    typer.echo(text())
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        ext = {"markdown": "md", "csv": "csv", "latex": "tex"}[fmt.value]
        (save / f"{state['study']}.{ext}").write_text(text(), encoding="utf-8")


def _widths(given: list[str] | None) -> float | dict[str, float] | None:
    """``--target-width``: one ``W`` (every headline metric) or ``METRIC=W`` pairs.

    Raises:
        typer.BadParameter: a value that is not a number, or a mix of both forms.
    """
    if not given:
        return None
    try:
        if len(given) == 1 and "=" not in given[0]:
            return float(given[0])
        if any("=" not in g for g in given):
            raise ValueError("give one W, or METRIC=W for each metric, not both")
        return {k.strip(): float(v) for k, v in (g.split("=", 1) for g in given)}
    except ValueError as exc:
        raise typer.BadParameter(f"{given!r}: {exc}", param_hint="--target-width") from None
