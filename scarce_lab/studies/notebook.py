"""What a notebook's data can and cannot show about its study, computed, not written.

:func:`data_note` reads the runs a notebook analyses (their manifests) against the study
the notebook names (:mod:`scarce_lab.studies`) and says, above the notebook's first
table: which models drove the runs, how many runs each arm has, every setting in which
the runs depart from the paper's, how many judge labels there are, and, when the data
cannot show the paper's finding, the ``scarce-lab study run`` command that would, with
its planned cost from the study engine's plan. :func:`study_labels` finds the labels a
study run wrote (what a notebook reads after ``RUN = True``).

Nothing here is hand-written per notebook: a new run, a changed declaration or a new
arm changes the note.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Model prefixes of the offline models (scripted policies, the embedded small model):
#: runs of these check the pipeline, never a paper's finding about LLMs.
OFFLINE_PREFIXES = ("scripted/", "embedded/")
#: Fewest runs per arm for which the notebooks print a 95% interval at all.
MIN_RUNS_PER_ARM = 2
#: The model a planned cost is quoted for when the notebook names none (``MODEL = None``).
EXAMPLE_MODEL = "openai/gpt-4o-mini"
#: Where a study run keeps its judge labels (as ``scarce-lab judge label`` writes them).
LABELS_FILE = Path("labels") / "labels.parquet"


@dataclass(frozen=True)
class DataNote:
    """The note :func:`data_note` returns: ``lines`` (Markdown, one fact each) and
    ``shows_paper_finding`` (False when the models, the settings or the run counts cannot
    show the paper's finding; the lines then say why and which run would). Displays as
    Markdown in a notebook; ``str()`` is the same text."""

    study: str
    lines: tuple[str, ...]
    shows_paper_finding: bool

    def __str__(self) -> str:
        return "\n".join(self.lines)

    def _repr_markdown_(self) -> str:
        from ..analysis.labels import displayed_markdown

        return displayed_markdown("\n\n".join(self.lines))

    def why(self) -> DataNote:
        """The note's last lines only (whether the data can show the paper's finding, and
        the run that would): to repeat above a later table of the notebook."""
        return DataNote(self.study, self.lines[-2:] if not self.shows_paper_finding else self.lines[-1:],
                        self.shows_paper_finding)


def study_labels(run_dir: str | Path) -> str | None:
    """The judge labels a study run wrote into ``run_dir`` (``labels/labels.parquet``,
    relative paths resolved as every notebook path: :func:`scarce_lab.datasets.resolve_path`),
    or ``None`` when it wrote none (a study without labels, or not labelled yet).

    Raises:
        FileNotFoundError: ``run_dir`` does not exist (the run wrote nothing).
    """
    from ..datasets import resolve_path

    root = resolve_path(run_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"no study run at {root}: the run wrote nothing there")
    labels = root / LABELS_FILE
    return str(labels) if labels.is_file() else None


def _values(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _planned(study: Any, model: str, out: str | Path) -> str:
    """The engine's plan for ``model`` into ``out`` as one clause (runs, dollars), or a
    pointer to ``--dry-run`` when the engine is not installed."""
    try:
        from .run import plan
    except ImportError:
        return "its plan and cost: add `--dry-run` (the study engine is not installed here)"
    from . import StudyError

    try:
        p = plan(study, [model], out=out)
    except StudyError as exc:  # e.g. RUN_DIR holds a study run with other choices
        return f"no plan for {model} into {out}: {exc}"
    cost = p.cost_usd
    if cost is None:
        money = "cost unknown (a model's price or prompt size is unknown: set llm.prices)"
    else:
        money = f"${cost[0]:,.2f} to " + ("an unbounded amount" if math.isinf(cost[1]) else f"${cost[1]:,.2f}")
    return f"planned for {model}: {len(p.missing)} runs to make of {len(p.runs)}, {money}"


def data_note(study: Any, data: Any, *, labels: str | Path | None = None, model: str | None = None,
              run_dir: str | Path = "runs") -> DataNote:
    """What ``data`` can and cannot show about ``study``.

    Args:
        study: a :class:`scarce_lab.studies.Study` or its name.
        data: the loaded dataset (:class:`scarce_lab.data.loaders.Dataset`) or a list of
            them (``None`` entries skipped); only the runs of the study's environment count.
        labels: the judge labels file the notebook reads (``None``: none).
        model: the model a study run would use (the notebook's ``MODEL``); ``None``: the
            command shows ``MODEL`` and the cost is quoted for :data:`EXAMPLE_MODEL`.
        run_dir: where that run would write (the notebook's ``RUN_DIR``).

    Returns:
        A :class:`DataNote`: models (per role), runs per arm (per model set, through
        :meth:`Study.arm_of` on each run's config), runs in no arm, the settings whose
        values differ from the paper's (from the manifests, against ``study.paper``, with
        the study's declared reasons), the labels' units and runs, and, when the models
        are offline ones, a setting departs, or an arm has fewer than
        :data:`MIN_RUNS_PER_ARM` runs, the study run that would show the finding and its
        planned cost (:func:`scarce_lab.studies.run.plan`).

    Raises:
        scarce_lab.studies.StudyError: no such study.
        polars.exceptions.ColumnNotFoundError: a labels file without ``run_id``.
    """
    from ..config.base import flatten
    from . import _same, get

    st = get(study) if isinstance(study, str) else study
    sets = data if isinstance(data, list | tuple) else [data]
    runs = [m for d in sets if d is not None for m in d.manifests if m.environment == st.environment]
    head = f"**What this data can show** about study `{st.name}` ({' '.join([st.source, ', '.join(st.replicates)]).strip()}):"
    lines = [head]
    if not runs:
        lines.append(f"- no {st.environment} runs with manifests here (a published layout or another "
                     "environment's runs): models, arms and settings cannot be checked against the paper.")
        return DataNote(st.name, tuple(lines + _run_lines(st, model, run_dir, ["no runs to check"])), False)

    model_sets = Counter(tuple(sorted(m.models.items())) for m in runs)
    per_set: dict[tuple, Counter] = {}
    games: dict[tuple, dict[str, set[str]]] = {}  # model set -> arm -> the runs' conditions
    configs = []
    for m in runs:
        flat = flatten(m.config)
        configs.append(flat)
        arm, key = st.arm_of(flat) or "", tuple(sorted(m.models.items()))
        per_set.setdefault(key, Counter())[arm] += 1
        games.setdefault(key, {}).setdefault(arm, set()).add(m.condition or "")
    offline = all(v.startswith(OFFLINE_PREFIXES) for m in runs for v in m.models.values())
    reasons: list[str] = []
    thin_arms: list[str] = []
    for mset, n in model_sets.items():
        arms = per_set[mset]
        counts = ", ".join(f"{a.name} {arms.get(a.name, 0)}" + _games(games[mset].get(a.name, set()))
                           for a in st.arms)
        stray = arms.get("", 0)
        shown = (f"`{mset[0][1]}` (every role)" if len({v for _, v in mset}) == 1 and len(mset) > 1
                 else ", ".join(f"{r} = `{v}`" for r, v in mset) or "(none recorded)")
        lines.append(f"- model{'s' if len(mset) > 1 and '(every role)' not in shown else ''} {shown}: "
                     f"{n} run{'s' if n != 1 else ''}; runs per arm: {counts}" + (f"; {stray} in no arm of this study" if stray else ""))
        thin = [a.name for a in st.arms if arms.get(a.name, 0) < MIN_RUNS_PER_ARM]
        if thin:
            thin_arms.append(f"{shown}: {', '.join(thin)}")
    if thin_arms:
        reasons.append(f"arms with fewer than {MIN_RUNS_PER_ARM} runs (no interval): {'; '.join(thin_arms)}")
    if offline:
        reasons.append("the models are scripted policies or the embedded small model, not the paper's LLMs: "
                       + ("tables of judge-labelled behaviour can be all zero here, " if st.labels else "")
                       + "a check of the pipeline")
    departs = []
    for key, paper in st.paper.items():
        if key == "models":
            continue
        here = sorted({_values(c.get(key, "(not recorded)")) for c in configs
                       if not _same(c.get(key, "(not recorded)"), paper)})
        if here:
            why = st.departures.get(key)
            departs.append(f"{key} {', '.join(here)} (paper {_values(paper)}" + (f"; {why})" if why else ")"))
    if departs:
        lines.append("- settings that depart from the paper's: " + "; ".join(departs))
        reasons.append("settings depart from the paper's")
    else:
        lines.append("- every paper setting the study declares is the paper's")
    if labels is not None:
        import polars as pl

        ids = {m.run_id for m in runs}
        from ..datasets import resolve_path

        lab = pl.read_parquet(resolve_path(labels), columns=["run_id"]).filter(pl.col("run_id").is_in(list(ids)))
        lines.append(f"- judge labels: {lab.height} labelled units from {lab['run_id'].n_unique()} of these "
                     f"{len(runs)} runs ({Path(labels).name})")
    elif st.labels is not None:
        lines.append(f"- no judge labels: the study's labelled tables ({st.labels.taxonomy} taxonomy) are "
                     "left out; its label-free tables still show what the models did")
    return DataNote(st.name, tuple(lines + _run_lines(st, model, run_dir, reasons)), not reasons)


def _games(conditions: set[str]) -> str:
    """`` (in N games: they differ in k1, k2)`` when an arm's runs are of more than one
    condition (another setting than the arm's differs: the tables keep them apart, so the
    arm's count is not its runs per game); ``""`` when they are one game."""
    if len(conditions) < 2:
        return ""
    from ..analysis.labels import condition_parts, part_key

    sets = [set(condition_parts(c)) for c in conditions]
    parts = set.union(*sets) - set.intersection(*sets)
    differ = sorted({part_key(p) for p in parts} - {""})
    primary = sorted(p for p in parts if not part_key(p))
    shown = ([" vs ".join(primary)] if primary else []) + differ
    return f" (in {len(conditions)} games: they differ in {', '.join(shown)})"


def _run_lines(st: Any, model: str | None, run_dir: str | Path, reasons: list[str]) -> list[str]:
    from ..datasets import resolve_path

    if not reasons:
        return ["- this data can show the paper's finding for these models and settings"]
    shown = model or "MODEL"
    return [f"- it cannot show the paper's finding: {'; '.join(reasons)}.",
            f"- the study run that would: `scarce-lab study run {st.name} --model {shown} --out {run_dir}` "
            f"(or `RUN = True`, `MODEL = ...` above); {_planned(st, model or EXAMPLE_MODEL, resolve_path(run_dir))}"]
