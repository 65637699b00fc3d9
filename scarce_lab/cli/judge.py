"""``scarce-lab judge label``, ``judge validate``, ``judge export-sheet`` and ``judge import-sheet``."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from . import judge_app
from ._executor import ADDRESS_HELP, EXECUTOR_HELP, ExecutorChoice

DEFAULT_JUDGES = "embedded/smollm2,embedded/smollm2,embedded/smollm2"


class FormatChoice(StrEnum):
    table = "table"
    json = "json"


# the options both commands take
Judges = Annotated[str, typer.Option("--judges", "-j", help="Comma-separated models, one per judge.")]
Concurrency = Annotated[int, typer.Option("--concurrency", "-k", min=1, help="Judge calls in flight.")]
MinVotes = Annotated[int | None, typer.Option("--min-votes", min=1, help="Votes a label needs (default: majority).")]
Seed = Annotated[int, typer.Option("--seed")]
ApiBase = Annotated[str | None, typer.Option("--api-base")]
Temperature = Annotated[float, typer.Option("--temperature", min=0.0, max=2.0)]
CacheDir = Annotated[Path | None, typer.Option("--cache-dir", help="Response cache folder (default: the client's).")]
Timeout = Annotated[float, typer.Option(
    "--timeout", min=1.0, help="Seconds per model call (the embedded model is slow on busy CPUs).")]
Progress = Annotated[bool, typer.Option("--progress/--no-progress")]


def _client_settings(concurrency: int, cache_dir: Path | None, api_base: str | None, temperature: float,
                     timeout_s: float) -> dict:
    """The judges' client settings (:func:`scarce_lab.runners.labelling.client_settings`)."""
    from ..runners.labelling import client_settings

    return client_settings(concurrency=concurrency, cache_dir=cache_dir, api_base=api_base, temperature=temperature,
                           timeout_s=timeout_s)


def _client(settings: dict):
    from ..llm import make_client

    return make_client(**settings)


def _judges(judges: str, seed: int):
    from ..judge.judges import make_judges

    try:
        return make_judges([m for m in judges.split(",")], seed=seed)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--judges") from None


def _taxonomy(name: str):
    from ..judge.taxonomy import load_taxonomy

    try:
        return load_taxonomy(name)
    except (FileNotFoundError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--taxonomy") from None


def _default_taxonomy(path: Path) -> str:
    """The taxonomy of the dataset's environment (its spec's ``taxonomy``;
    :data:`~scarce_lab.judge.taxonomy.UNITS_FILE_TAXONOMY` for a units file).

    Raises:
        typer.BadParameter: runs of several environments, or of one without a taxonomy.
    """
    from ..judge.taxonomy import UNITS_FILE_TAXONOMY, taxonomy_for
    from ..judge.units import dataset_environment

    if not Path(path).is_dir():
        return UNITS_FILE_TAXONOMY
    try:
        env = dataset_environment(path)
        return taxonomy_for(env) if env else UNITS_FILE_TAXONOMY
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="PATH") from None


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3f}" if isinstance(x, float) else str(x)


@judge_app.command("label")
def label(
    path: Annotated[
        Path,
        typer.Argument(
            help="A dataset folder (runs of one environment that has judge units) or a units file "
            "(.parquet/.csv/.jsonl)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (resumable: finished judgements are kept).")],
    taxonomy: Annotated[
        str | None, typer.Option("--taxonomy", "-t", help="Shipped taxonomy name or a YAML file (default: the "
                                 "one of the dataset's environment; scarce for a units file).")
    ] = None,
    judges: Judges = DEFAULT_JUDGES,
    concurrency: Concurrency = 4,
    min_votes: MinVotes = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Label only the first N units.")] = None,
    seed: Seed = 0,
    n_boot: Annotated[int, typer.Option("--n-boot", min=1, help="Bootstrap resamples for agreement CIs.")] = 1000,
    api_base: ApiBase = None,
    temperature: Temperature = 0.0,
    cache_dir: CacheDir = None,
    timeout: Timeout = 600.0,
    progress: Progress = True,
    executor: Annotated[ExecutorChoice, typer.Option("--executor", help=EXECUTOR_HELP)] = ExecutorChoice.local,
    address: Annotated[str | None, typer.Option("--address", help=ADDRESS_HELP)] = None,
) -> None:
    """Label every unit of a dataset (what its environment's spec builds: each agent's
    words in one round) or of a units file with a judge panel; write tables to OUT.

    With --executor ray the units of each run are judged in one Ray task (resumable:
    pairs already in OUT are not sent); the arbitration and tables are then made here.

    OUT gets judgements.jsonl (one line per unit and judge), llm_calls.jsonl,
    panel.json, units.parquet, labels.parquet (arbitrated, one row per unit),
    votes.parquet, agreement.csv (Krippendorff's alpha and Fleiss' kappa per label
    with bootstrap CIs), institutions.parquet and drift.csv.
    """
    from ..judge.institutions import institutional_summary
    from ..judge.units import units_from_path
    from ..runners.executors import ExecutorError
    from ..runners.labelling import label_to

    tax = _taxonomy(taxonomy or _default_taxonomy(path))
    specs = _judges(judges, seed)
    try:
        units = units_from_path(path)
    except (FileNotFoundError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="PATH") from None
    if limit is not None:
        units = units[:limit]
    if not units:
        raise typer.BadParameter(f"no units with text found in {path}", param_hint="PATH")
    settings = _client_settings(concurrency, cache_dir, api_base, temperature, timeout)
    if address is not None and executor != ExecutorChoice.ray:
        raise typer.BadParameter("--address is for --executor ray", param_hint="--address")
    try:
        done = label_to(units, tax, specs, out, settings=settings, client=_client(settings), min_votes=min_votes, concurrency=concurrency,
                        n_boot=n_boot, seed=seed, executor=executor.value, address=address, progress=progress)
    except ExecutorError as exc:
        raise typer.BadParameter(str(exc), param_hint="--executor") from None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    res, agree, inst = done.res, done.agreement, done.institutions
    _fail_if_no_answer(res.judgements)

    status = res.judgements["status"].value_counts().sort("status")
    typer.echo(f"{len(units)} units x {len(specs)} judges -> {out}")
    typer.echo(f"panel: {res.note} Arbitration: at least {res.min_votes} vote(s).")
    typer.echo("judge answers: " + ", ".join(f"{s} {n}" for s, n in status.iter_rows()))
    arb = res.labels["status"].value_counts().sort("status")
    typer.echo("units: " + ", ".join(f"{s} {n}" for s, n in arb.iter_rows()))
    counts = res.votes.filter("accepted")["label"].value_counts().sort("count", descending=True)
    typer.echo("accepted labels: " + (", ".join(f"{lab} {n}" for lab, n in counts.iter_rows()) or "none"))
    typer.echo(f"ties: {res.votes.filter('tie').height}")
    for over in ("pooled", "macro"):
        r = agree.filter(agree["label"] == f"({over})").row(0, named=True)
        alpha = f"alpha {_fmt(r['alpha'])} [{_fmt(r['alpha_lo'])}, {_fmt(r['alpha_hi'])}]"
        fleiss = f"Fleiss kappa {_fmt(r['fleiss_kappa'])} [{_fmt(r['fleiss_lo'])}, {_fmt(r['fleiss_hi'])}]"
        if over == "macro":
            alpha += f" over {r['alpha_labels_defined']} of {r['n_labels']} labels"
            fleiss += f" over {r['fleiss_labels_defined']} of {r['n_labels']} labels"
        typer.echo(f"agreement ({over} over labels): {alpha}, {fleiss}" + _why(r))
    n_invalid = int(res.judgements["invalid_labels"].list.len().sum())
    if n_invalid:
        typer.echo(f"invalid labels (not taxonomy ids, not counted): {n_invalid}")
    if inst.height:
        for row in institutional_summary(inst).iter_rows(named=True):
            kind = "relational" if row["relational"] else "non-relational"
            typer.echo(
                f"institutional ({kind}, {row['scope']}): {row['institutional']} of {row['behaviours']}"
            )


@judge_app.command("validate")
def validate(
    taxonomy: Annotated[
        str | None, typer.Option("--taxonomy", "-t", help="Taxonomy whose ids match the expert labels (default: "
                                 "casino; for human labels, theirs).")
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            "-d",
            help="A file in the CaSiNo layout (default: the shared validation split), a "
            "dataset folder of scripted agents whose intent is known (the ground truth; use the "
            "taxonomy of its environment, the default of `judge label`), or a folder of human labels "
            "(`judge import-sheet`): the panel against each coder, and the coders against each other.",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            min=1,
            help="Only N annotated utterances: CaSiNo's first N; of a dataset folder, N taken "
            "in turn from each run (round order within a run), so every run is represented.",
        ),
    ] = None,
    judges: Judges = DEFAULT_JUDGES,
    fmt: Annotated[FormatChoice, typer.Option("--format", "-f")] = FormatChoice.table,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Keep judgements here (resumable).")] = None,
    concurrency: Concurrency = 4,
    min_votes: MinVotes = None,
    context_turns: Annotated[
        int, typer.Option("--context-turns", min=0, help="Previous utterances shown as context.")] = 2,
    seed: Seed = 0,
    api_base: ApiBase = None,
    temperature: Temperature = 0.0,
    cache_dir: CacheDir = None,
    timeout: Timeout = 600.0,
    progress: Progress = True,
    coder: Annotated[str | None, typer.Option(
        "--coder", help="With a folder of human labels: score the panel against this coder only.")] = None,
    n_boot: Annotated[int, typer.Option("--n-boot", min=1, help="Bootstrap resamples for inter-coder CIs.")] = 1000,
) -> None:
    """Score a judge panel against expert labels (CaSiNo), against what scripted agents
    meant (a dataset folder: the units of its environment with ``gold="intended"``, e.g.
    the tactics strategic scripted SCARCE negotiators recorded), or against people (a
    folder of human labels from ``judge import-sheet``: against each coder, and the
    coders' agreement with each other): per-label precision, recall, F1 and Cohen's
    kappa, micro and macro F1, for the panel and for each judge alone."""
    from ..judge.casino import default_casino_path, load_casino
    from ..judge.store import HUMAN_FILE
    from ..judge.validation import validate_panel

    if data is not None and (data / HUMAN_FILE).is_file():
        if limit is not None:
            raise typer.BadParameter("--limit is not for human labels: the coders' sheet is the sample "
                                     "(export-sheet --sample)", param_hint="--limit")
        return _validate_humans(data, taxonomy=taxonomy, coder=coder, judges=judges, fmt=fmt, out=out,
                                concurrency=concurrency, min_votes=min_votes, seed=seed, n_boot=n_boot,
                                settings=_client_settings(concurrency, cache_dir, api_base, temperature, timeout),
                                progress=progress)
    if coder is not None:
        raise typer.BadParameter("--coder is for a folder of human labels (--data)", param_hint="--coder")
    tax = _taxonomy(taxonomy or "casino")
    specs = _judges(judges, seed)
    try:
        path = data or default_casino_path()
        if path.is_dir():  # a dataset: the scripted agents' intent is the ground truth
            from ..judge.units import dataset_units

            units = _round_robin(dataset_units(path, gold="intended"), limit)
        else:
            units = load_casino(path, context_turns=context_turns, limit=limit)
    except (FileNotFoundError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--data") from None
    if not units:
        raise typer.BadParameter(f"no annotated utterances in {path}", param_hint="--data")
    unknown = sorted({g for u in units for g in u.gold or []} - set(tax.ids))
    if unknown:
        raise typer.BadParameter(
            f"expert labels {unknown} are not ids of taxonomy {tax.id!r}", param_hint="--taxonomy"
        )
    client = _client(_client_settings(concurrency, cache_dir, api_base, temperature, timeout))
    report = validate_panel(units, tax, specs, client=client, out_dir=out, min_votes=min_votes,
                            concurrency=concurrency, progress=progress)
    _fail_if_no_answer(report.result.judgements)
    if fmt == FormatChoice.json:
        payload = report.to_json() | {"data": str(path)}
        typer.echo(json.dumps(payload, indent=2))
        return
    _print_report(report, path)


def _validate_humans(data: Path, *, taxonomy: str | None, coder: str | None, judges: str, fmt: FormatChoice,
                     out: Path | None, concurrency: int, min_votes: int | None, seed: int, n_boot: int,
                     settings: dict, progress: bool) -> None:
    """``judge validate --data FOLDER`` of human labels: the coders' agreement (two or
    more), then the panel against each coder (or ``coder``), its judgements kept in
    ``out`` (default: the folder itself, so a panel that labelled it is not asked again)."""
    from ..judge.sheets import human_units
    from ..judge.store import HumanLabelStore
    from ..judge.validation import coder_agreement, validate_panel

    try:
        store = HumanLabelStore(data)
        labels = store.load()
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--data") from None
    if not labels:
        raise typer.BadParameter(f"{store.path}: holds no human labels (judge import-sheet fills it)",
                                 param_hint="--data")
    coders = sorted({h.coder for h in labels})
    kinds = sorted({h.taxonomy for h in labels})
    if taxonomy is not None and kinds != [_taxonomy(taxonomy).id]:
        raise typer.BadParameter(f"{data}: its human labels use taxonomy {kinds}, not {taxonomy!r}",
                                 param_hint="--taxonomy")
    tax = _taxonomy(kinds[0])
    if coder is not None and coder not in coders:
        raise typer.BadParameter(f"no human labels by {coder!r} in {data}; coders: {coders}", param_hint="--coder")
    inter = coder_agreement(data, tax, n_boot=n_boot, seed=seed) if len(coders) > 1 else None
    specs = _judges(judges, seed)
    client = _client(settings)
    reports = {}
    for c in [coder] if coder else coders:
        reports[c] = validate_panel(human_units(data, c), tax, specs, client=client, out_dir=out or data,
                                    min_votes=min_votes, concurrency=concurrency, progress=progress)
        _fail_if_no_answer(reports[c].result.judgements)
    if fmt == FormatChoice.json:
        payload = {"data": str(data), "taxonomy": tax.id, "inter_coder": inter.to_json() if inter else None,
                   "coders": {c: r.to_json() for c, r in reports.items()}}
        typer.echo(json.dumps(payload, indent=2))
        return
    if inter is None:
        typer.echo(f"one coder ({coders[0]}): no inter-coder agreement")
    else:
        _print_coders(inter)
    for c, r in reports.items():
        _print_report(r, data, gold=f"labelled by coder {c}")


def _print_coders(inter) -> None:
    """The coders' agreement: alpha and Fleiss' kappa (pooled, macro), then Cohen's kappa per pair."""
    typer.echo(f"{len(inter.coders)} coders ({', '.join(inter.coders)}) on {inter.n_units} units")
    agree = inter.agreement
    for over in ("pooled", "macro"):
        r = agree.filter(agree["label"] == f"({over})").row(0, named=True)
        typer.echo(f"inter-coder agreement ({over} over labels): alpha {_fmt(r['alpha'])} "
                   f"[{_fmt(r['alpha_lo'])}, {_fmt(r['alpha_hi'])}], Fleiss kappa {_fmt(r['fleiss_kappa'])} "
                   f"[{_fmt(r['fleiss_lo'])}, {_fmt(r['fleiss_hi'])}]" + _why(r))
    for (a, b), (_, s) in inter.pairs.items():
        typer.echo(f"  {a} vs {b} on {s['n_units']} units: Cohen's kappa pooled {_fmt(s['kappa_pooled'])}, "
                   f"macro {_fmt(s['kappa_macro'])} over {s['kappa_labels_defined']} labels; "
                   f"exact match {_fmt(s['exact_match'])}")


def _fail_if_no_answer(judgements) -> None:
    """Exit 1 with one line when no model call of the panel got an answer (a
    panel that never answered printed tables of zeros and exited 0).

    Raises:
        typer.Exit: every judgement is a no-answer status (transport error, context
            overflow, refused request, cost cap).
    """
    from ..judge.judging import NO_ANSWER_STATUSES

    if judgements.height == 0:
        return
    statuses = judgements["status"].to_list()
    if all(st in NO_ANSWER_STATUSES for st in statuses):
        counts = judgements["status"].value_counts().sort("status")
        typer.echo("error: no judge call got an answer ("
                   + ", ".join(f"{st} {n}" for st, n in counts.iter_rows()) + f" of {len(statuses)}); "
                   "see llm_calls.jsonl for the errors", err=True)
        raise typer.Exit(code=1)


def _round_robin(units: list, limit: int | None) -> list:
    """``limit`` of ``units`` spread over runs and over each run's length: each run (in
    ``run_id`` order) gives ``ceil(limit / runs)`` units at evenly spaced positions of its
    own order (contentions early and late), taken in turn from each run until ``limit``;
    all units when ``limit`` is ``None``. A bounded validation sample thus covers every
    run and every phase of a run, not the first run's first contentions."""
    if limit is None:
        return units
    by_run: dict[str, list] = {}
    for u in units:
        by_run.setdefault(u.run_id, []).append(u)
    k = math.ceil(limit / len(by_run)) if by_run else 0
    queues = []
    for r in sorted(by_run):
        q = by_run[r]
        idx = range(len(q)) if k >= len(q) else sorted({int(j * len(q) / k) for j in range(k)})
        queues.append([q[j] for j in idx])
    out: list = []
    i = 0
    while len(out) < limit and any(i < len(q) for q in queues):
        out += [q[i] for q in queues if i < len(q)][: limit - len(out)]
        i += 1
    return out


def _why(row: dict) -> str:
    """`` (alpha: reason; Fleiss: reason)`` for the undefined values of an agreement row."""
    parts = [f"{name}: {row[col]}" for name, col in (("alpha", "alpha_reason"), ("Fleiss", "fleiss_reason"))
             if row[col]]
    return f" ({'; '.join(parts)})" if parts else ""


def _print_report(report, path: Path, *, gold: str = "expert-labelled") -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"{len(report.result.units)} utterances {gold} from {path}")
    console.print(f"panel: {report.note} Arbitration: at least {report.result.min_votes} vote(s).")
    names = {"panel": "panel (arbitrated)"} | {
        j.name: f"{j.name} {j.model} (seed {j.seed}, variant {j.variant})" for j in report.judges
    }
    for key, title in names.items():
        s = report.summary[key]
        table = Table(title=title, title_justify="left")
        for col in ("label", "support", "predicted", "precision", "recall", "F1", "Cohen's kappa"):
            table.add_column(col, justify="left" if col == "label" else "right")
        for r in report.per_label[key].iter_rows(named=True):
            table.add_row(r["label"], str(r["support"]), str(r["predicted"]),
                          *(_fmt(r[k]) for k in ("precision", "recall", "f1", "cohen_kappa")))
        console.print(table)
        console.print(
            f"  micro P {_fmt(s['micro_precision'])} R {_fmt(s['micro_recall'])} F1 {_fmt(s['micro_f1'])}; "
            f"macro F1 {_fmt(s['macro_f1'])} (all labels {_fmt(s['macro_f1_all'])}); "
            f"Cohen's kappa macro {_fmt(s['kappa_macro'])}, pooled {_fmt(s['kappa_pooled'])}; "
            f"exact match {_fmt(s['exact_match'])}; no answer {s['n_no_answer']} of {s['n_units']}"
        )


@judge_app.command("export-sheet")
def export_sheet(
    path: Annotated[Path, typer.Argument(help="A run, a dataset folder, or a units file (as `judge label` reads).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The sheet to write (NAME.csv; NAME.codebook.md and "
                                      "NAME.manifest.json beside it).")],
    taxonomy: Annotated[str | None, typer.Option("--taxonomy", "-t", help="Shipped taxonomy name or a YAML file "
                                                 "(default: the one of the dataset's environment).")] = None,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help="Only N units, drawn at random "
                                               "stratified by run (default: every unit).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample (recorded in the manifest).")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace a sheet or manifest at --out that differs "
                                        "from this export.")] = False,
) -> None:
    """Write a blank label sheet of PATH's units for a research assistant: a CSV (one
    row per unit: its id, run, round, speaker, text and context; the coder fills
    ``labels`` and ``coder``), a codebook of the taxonomy, and a manifest that
    ``judge import-sheet`` checks the filled sheet against."""
    from ..judge.sheets import export_sheet as write_sheet
    from ..judge.units import units_from_path

    tax = _taxonomy(taxonomy or _default_taxonomy(path))
    try:
        units = units_from_path(path)
    except (FileNotFoundError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="PATH") from None
    try:
        files = write_sheet(units, tax, out, sample=sample, seed=seed, source=str(path), overwrite=force)
    except (ValueError, FileExistsError) as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(f"{files.n_units} of {len(units)} units ({tax.id}) -> {files.csv}; codebook {files.codebook}; "
               f"manifest {files.manifest} (keep it: the import checks against it)")


@judge_app.command("import-sheet")
def import_sheet(
    sheet: Annotated[Path, typer.Argument(help="A filled label sheet (CSV).")],
    coder: Annotated[str | None, typer.Option("--coder", help="The coder's name (for rows whose coder "
                                              "cell is empty; a filled cell must match it).")] = None,
    manifest: Annotated[Path | None, typer.Option("--manifest", help="The manifest written with the blank sheet "
                                                  "(default: NAME.manifest.json beside SHEET).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for human_labels.jsonl, beside a "
                                             "panel's judgements (default: the manifest's folder).")] = None,
) -> None:
    """Check every row of a filled label sheet and store its labels as human labels
    (``human_labels.jsonl``); any problem in any row is listed (row, column, value) and
    nothing is stored. ``judge validate --data FOLDER`` then scores judges against them."""
    from ..data.jsonl import FileLimitError
    from ..judge.sheets import SheetError, manifest_path
    from ..judge.sheets import import_sheet as read_sheet

    man = manifest or manifest_path(sheet)
    try:
        res = read_sheet(sheet, out or man.parent, coder=coder, manifest=man)
    except SheetError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=1) from None
    except (FileNotFoundError, FileLimitError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from None
    coders = sorted({h.coder for h in res.labels})
    typer.echo(f"{len(res.labels)} rows by {', '.join(coders)} -> {res.store}")
    if res.replaced:
        typer.echo(f"replaced {len(res.replaced)} earlier label(s) of the same unit and coder")
    if res.missing:
        typer.echo(f"{len(res.missing)} unit(s) of the sheet have no row in this file: {res.missing[:5]}"
                   + (" ..." if len(res.missing) > 5 else ""))
    if res.ignored_columns:
        typer.echo(f"columns not read: {res.ignored_columns}")
    if res.blank_rows:
        typer.echo(f"{res.blank_rows} blank row(s) skipped (no cell filled)")
