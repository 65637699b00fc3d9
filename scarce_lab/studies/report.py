"""A study's replication report: each published number it replicates beside our estimate.

:func:`report` gives one row per published number (:mod:`scarce_lab.analysis.paper_numbers`) of the study's
``source`` and ``replicates`` tables, per model and condition of the runs in the number's
arm (runs are split into arms by :meth:`~scarce_lab.studies.Study.arm_of` on their
condition's settings; two conditions in one arm are two rows, never pooled). The
estimates come from the environment's ``study_metrics`` hook (:class:`scarce_lab.registry.EnvironmentSpec`),
which reuses its tables and their intervals.

Verdicts (``verdict``, with ``why``):

- ``inside`` / ``outside``: a published value inside / outside our 95% interval; a
  published range that overlaps / misses it;
- ``not comparable``: no 95% interval (the environment's table prints none at this run
  count, ``why`` says so), an estimate without a value, or a study without the arm;
- ``no data``: no run of the arm (or of its ``where`` settings), or a metric that needs
  what the data lack (judge labels);
- ``statement``: the paper gives prose, not a number (our estimate is shown beside it
  when there is one).

A row whose model is not the paper's says the comparison checks the pipeline, not the
paper. The finding's ``departures`` are the settings in which the runs differ from the
paper's (:meth:`~scarce_lab.studies.Study.departures_of` on what the manifests say).
"""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.paper_numbers import NUMBERS_FILE, PaperNumber, numbers_of
from . import Study, StudyError, _same
from . import get as get_study

COLUMNS = {"source": pl.String, "table": pl.String, "model": pl.String, "paper_model": pl.String, "arm": pl.String,
           "condition": pl.String, "metric": pl.String, "paper": pl.String,
           "paper_low": pl.Float64, "paper_high": pl.Float64, "estimate": pl.Float64,
           "ci_low": pl.Float64, "ci_high": pl.Float64, "n_runs": pl.Int64, "verdict": pl.String, "why": pl.String}
VERDICTS = ("inside", "outside", "not comparable", "no data", "statement")
PIPELINE = "model differs from the paper's: a check of the pipeline, not of the paper"


def _study(study: Study | str) -> Study:
    return study if isinstance(study, Study) else get_study(study)


def _dataset(out_or_dataset: Any) -> tuple[Any, Path | None]:
    if isinstance(out_or_dataset, str | Path):
        from ..datasets import load, resolve_path

        path = resolve_path(out_or_dataset)
        return load(path), path
    return out_or_dataset, None


def _labels(labels: Any, path: Path | None) -> Any:
    """``labels`` as given, else the labels a study run wrote (``OUT/labels/labels.parquet``)."""
    if labels is None and path is not None and (path / "labels" / "labels.parquet").is_file():
        return path / "labels" / "labels.parquet"
    return labels


def _run_settings(ds: Any) -> dict[str, dict[str, Any]]:
    """Run id -> its flattened config and condition settings (from the manifests)."""
    from ..config.base import flatten

    return {m.run_id: {**flatten(m.config), **m.condition_settings} for m in getattr(ds, "manifests", ())}


def _condition_settings(ds: Any) -> dict[str, list[dict[str, Any]]]:
    """Condition label -> the flattened configs of its runs (from the manifests)."""
    from ..config.base import flatten

    out: dict[str, list[dict[str, Any]]] = {}
    for m in getattr(ds, "manifests", ()):
        out.setdefault(m.condition, []).append({**flatten(m.config), **m.condition_settings})
    return out


def _model_runs(ds: Any) -> dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]:
    """Model as the tables name it -> (flattened config and condition settings, condition
    settings) of each of its runs. The tables name a run's model by its seats' distinct
    models, joined by "+" when several (:func:`scarce_lab.data.parquet._model_label`)."""
    from ..config.base import flatten

    out: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for m in getattr(ds, "manifests", ()):
        distinct = sorted(set(m.models.values()))
        label = distinct[0] if len(distinct) == 1 else "+".join(distinct)
        out.setdefault(label, []).append(({**flatten(m.config), **m.condition_settings}, m.condition_settings))
    return out


Design = tuple[str | None, dict[str, Any]]


def design_of(study: Study, path: Path | None, profile: str | None = None,
              overrides: dict[str, Any] | None = None) -> Design | None:
    """How the runs were made, when known: ``(profile, overrides)`` as given, else as a
    study run wrote them (``OUT/study.json``); ``None``: not known (a bare data folder).

    Raises:
        StudyError: an unknown profile; a ``study.json`` that is not JSON.
    """
    state_file = path / "study.json" if path is not None else None
    if profile is None and overrides is None and state_file is not None and state_file.is_file():
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise StudyError(f"{state_file}: not JSON ({exc})") from None
        profile, overrides = state.get("profile"), state.get("overrides") or {}
    if profile is None and overrides is None:
        return None
    study.profile(profile)  # an unknown profile is refused here, named
    return profile, dict(overrides or {})


def arm_of_run(study: Study, settings: dict[str, Any], design: Design | None,
               cache: dict[Any, Any] | None = None) -> str | None:
    """The arm a run (``settings``: its flattened config and condition settings) belongs
    to. With a known ``design``: the arm whose config, built by
    :meth:`~scarce_lab.studies.Study.configs` with the run's own models, has exactly the
    run's condition settings (a run of another condition in the same folder, or of a
    model the profile does not name, is in no arm). Without: :meth:`~scarce_lab.studies.Study.arm_of` (the arm's own
    settings only)."""

    if design is None:
        return study.arm_of(settings)
    prof = study.profile(design[0])
    sets = prof.models if isinstance(prof.models, list) else [prof.models]
    sets = [s for s in sets if s]
    if sets and not any(all(settings.get(f) == m for f, m in s.items()) for s in sets):
        return None  # a run of a model the profile does not run
    cache = {} if cache is None else cache
    models = {f: settings.get(f) for f in study.model_roles if settings.get(f) is not None}
    wants = {}
    for arm in study.arms:
        key = (arm.name, tuple(sorted(models.items())))
        if key not in cache:
            try:
                cfg = study.configs(models, arms=[arm.name], profile=design[0], overrides=design[1], seeds=[0])[0][1]
                cache[key] = cfg.condition_settings()
            except StudyError:
                cache[key] = None  # an arm this profile cannot build: no run is in it
        wants[arm.name] = cache[key]
    # Every setting some arm states is compared, not only the arm's own: a setting off by
    # default is left out of its config's condition settings, so an arm with it off (e.g.
    # sovsim-institutions' cpr-none) would otherwise also take the runs of the arm with it
    # on (cpr-sanctions), and those runs, in two arms, would count in none.
    stated = {k for want in wants.values() if want is not None for k in want}
    hits = [name for name, want in wants.items()
            if want is not None and all(_same(settings.get(k), want.get(k)) for k in stated)]
    return hits[0] if len(hits) == 1 else None


def _metrics(study: Study, ds: Any, labels: Any, design: Design | None = None) -> pl.DataFrame:
    """The environment's metric rows with ``arm`` (:func:`arm_of_run`) and ``settings``
    (JSON) added."""
    from ..registry import get

    hook = get(study.environment).study_metrics
    if hook is None:
        raise StudyError(f"study {study.name!r}: environment {study.environment!r} declares no study_metrics")
    frame = hook(ds, labels=labels)
    by_condition, by_run, by_model = _condition_settings(ds), _run_settings(ds), _model_runs(ds)
    arms, settings, cache = [], [], {}
    for r in frame.iter_rows(named=True):
        # The row's own runs first: a row's ``settings`` name its model as the table does
        # (a mixed composition's models joined by "+"), which no profile names.
        row = json.loads(r["settings"]) if r.get("settings") else None
        own = [] if row is None else [flat for flat, cs in by_model.get(r.get("model"), []) if all(
            _same(flat.get(k), row.get(k)) for k in {*row, *cs} - set(study.model_roles))]
        given = own or ([row] if row is not None else [by_run[r["run_id"]]]
                        if r.get("run_id") in by_run else by_condition.get(r["condition"], []))
        found = {arm_of_run(study, s, design, cache) for s in given} or {None}
        arms.append(found.pop() if len(found) == 1 else None)  # runs of one label in two arms: in none
        settings.append(json.dumps(given[0], default=str, sort_keys=True) if given else "{}")
    return frame.with_columns(pl.Series("arm", arms, dtype=pl.String), pl.Series("settings", settings))


def _same_model(paper: str, ours: str) -> bool:
    """Our model string names the paper's model: its last ``/`` part equals it, case and
    spaces aside (``openrouter/z-ai/GLM-5.3`` is ``GLM-5.3``)."""
    norm = lambda s: s.strip().lower().replace(" ", "-")  # noqa: E731
    return norm(ours.rsplit("/", 1)[-1]) == norm(paper)


def _where(n: PaperNumber, settings: str) -> bool:
    s = json.loads(settings)
    return all(fnmatch.fnmatch(str(s.get(k)), str(v)) for k, v in n.where.items())


def _verdict(n: PaperNumber, est: float | None, lo: float | None, hi: float | None, why: str) -> tuple[str, str]:
    if n.kind == "statement":
        return "statement", "the paper states this in prose; no number to compare"
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "no data", why or "no estimate in this data"
    if lo is None or hi is None:
        return "not comparable", why or "no 95% interval at this run count"
    if not all(math.isfinite(x) for x in (est, lo, hi)) or not lo <= hi:  # NaN compares false: no verdict
        return "not comparable", f"no usable interval: estimate {est:g} in [{lo:g}, {hi:g}]" + (f"; {why}" if why else "")
    if n.kind == "value":
        v = n.scale(n.value)
        inside = lo - 1e-9 <= v <= hi + 1e-9
        return ("inside" if inside else "outside"), f"paper {v:g} {'in' if inside else 'outside'} [{lo:.3g}, {hi:.3g}]"
    a, b = n.scale(n.low), n.scale(n.high)
    overlap = lo - 1e-9 <= b and a <= hi + 1e-9
    return ("inside" if overlap else "outside"), (f"paper range [{a:g}, {b:g}] {'overlaps' if overlap else 'misses'} "
                                                  f"[{lo:.3g}, {hi:.3g}]")


def _numbers(study: Study, names: tuple[str, ...]) -> list[PaperNumber]:
    nums = [n for n in numbers_of(study.environment) if n.source == study.source and n.table in study.replicates]
    bad = [f"{n.id}: {n.metric}" for n in nums if n.metric is not None and n.metric not in names]
    if bad:
        raise StudyError(f"{study.environment}/{NUMBERS_FILE}: numbers {bad} name metrics that "
                         f"{study.environment}'s study_metrics does not compute (it computes: {', '.join(names)})")
    return nums


def rows(study: Study | str, out_or_dataset: Any, *, labels: Any = None, profile: str | None = None,
         overrides: dict[str, Any] | None = None) -> pl.DataFrame:
    """The report's rows (:data:`COLUMNS`) without the finding around them (see
    :func:`report`)."""
    st = _study(study)
    ds, path = _dataset(out_or_dataset)
    return _rows(st, ds, _labels(labels, path), design_of(st, path, profile, overrides))


def _rows(st: Study, ds: Any, labels: Any, design: Design | None) -> pl.DataFrame:
    from ..registry import get

    hook = get(st.environment).study_metrics
    nums = _numbers(st, hook(None) if hook is not None else ())
    if not nums:  # nothing published to compare: the data are not read
        return pl.DataFrame(schema=COLUMNS)
    frame = _metrics(st, ds, labels, design)
    arm_names = {a.name for a in st.arms}
    out: list[dict[str, Any]] = []
    for n in nums:
        base = {"source": n.source, "table": n.table, "paper_model": n.model, "arm": n.arm, "metric": n.metric,
                "paper": n.shown(), **_paper_bounds(n), "condition": None, "model": None, "estimate": None, "ci_low": None,
                "ci_high": None, "n_runs": 0}
        if n.arm is not None and n.arm not in arm_names:
            out.append(base | {"verdict": "not comparable" if n.kind != "statement" else "statement",
                               "why": f"study {st.name!r} declares no arm {n.arm!r} (its arms: {sorted(arm_names)})"})
            continue
        hits = frame.filter((pl.col("metric") == n.metric) & (pl.col("arm") == n.arm)) if n.metric else frame.clear()
        hits = hits.filter(pl.Series([_where(n, s) for s in hits["settings"]], dtype=pl.Boolean)) if n.where else hits
        if hits.height == 0:
            verdict, why = _verdict(n, None, None, None, _no_data_why(n, frame))
            out.append(base | {"verdict": verdict, "why": why})
            continue
        for r in hits.iter_rows(named=True):
            verdict, why = _verdict(n, r["estimate"], r["ci_low"], r["ci_high"], r["why"])
            if not _same_model(n.model, r["model"]):
                why = f"{why}; {PIPELINE}"
            out.append(base | {k: r[k] for k in ("condition", "model", "estimate", "ci_low", "ci_high", "n_runs")}
                       | {"verdict": verdict, "why": why})
    return pl.DataFrame(out, schema=COLUMNS, orient="row")


def _paper_bounds(n: PaperNumber) -> dict[str, float | None]:
    """The paper's number in the estimate's scale (a percentage as a share), as the
    ``paper_low``/``paper_high`` columns: a value is both; a statement neither."""
    if n.kind == "value":
        return {"paper_low": n.scale(n.value), "paper_high": n.scale(n.value)}
    if n.kind == "range":
        return {"paper_low": n.scale(n.low), "paper_high": n.scale(n.high)}
    return {"paper_low": None, "paper_high": None}


def _no_data_why(n: PaperNumber, frame: pl.DataFrame) -> str:
    if n.metric is None:
        return "a statement about no metric"
    if frame.filter(pl.col("arm") == n.arm).height == 0:
        return f"no run of arm {n.arm!r} in this data"
    return f"no estimate of {n.metric} in arm {n.arm!r}" + (f" with {n.where}" if n.where else "")


def departures(study: Study | str, ds: Any, *, labels: Any = None, design: Design | None = None
               ) -> list[dict[str, Any]]:
    """Every setting in which the runs of ``ds`` in the study's arms depart from the
    paper (:meth:`~scarce_lab.studies.Study.departures_of`): with a known ``design``
    (:func:`design_of`) its profile and overrides, else each setting of the study's
    ``paper`` and ``settings`` the arms do not vary with the value(s) the manifests hold
    (several values: ``mixed``); then the runs' models and, when ``labels`` is a path
    beside a ``panel.json``, the judge models."""
    from ..config.base import flatten

    st = _study(study)
    varied = {k for a in st.arms for k in a.settings}
    used: dict[str, set[str]] = {}
    models: set[str] = set()
    cache: dict[Any, Any] = {}
    for m in getattr(ds, "manifests", ()):
        flat = {**flatten(m.config), **m.condition_settings}
        if arm_of_run(st, flat, design, cache) is None:
            continue
        models.update(m.models.values())
        for k in (*st.paper, *st.settings):
            if k not in varied and k != "models":
                used.setdefault(k, set()).add(json.dumps(flat.get(k), default=str))
    if design is not None:
        out = st.departures_of(design[0], design[1], sorted(models))
    else:
        overrides = {k: json.loads(next(iter(v))) if len(v) == 1 else f"mixed: {', '.join(sorted(v))}"
                     for k, v in used.items()}
        overrides = {k: v for k, v in overrides.items() if st.base_settings().get(k) != v}
        out = st.departures_of(None, overrides, sorted(models))
    panel = Path(labels).parent / "panel.json" if isinstance(labels, str | Path) else None
    if panel is not None and panel.is_file():
        judges = sorted({j.get("model", "?") for j in json.loads(panel.read_text()).get("judges", [])})
        out.append({"setting": "judges", "paper": "(the paper's panel)", "here": ", ".join(judges),
                    "why": "the judge panel that labelled these runs"})
    return out


def report(study: Study | str, out_or_dataset: Any, *, labels: Any = None, profile: str | None = None,
           overrides: dict[str, Any] | None = None) -> Any:
    """The replication report of ``study`` on a study's output folder, a data folder or
    a loaded dataset, as a :class:`~scarce_lab.analysis.findings.Finding` named
    ``<study>_replication`` (``.save(folder)``: CSV, Markdown, LaTeX; the departures
    beside it as ``<study>_replication_departures``).

    Args:
        study: a :class:`~scarce_lab.studies.Study` or its name.
        out_or_dataset: a folder (``OUT`` of a study run: its ``labels/labels.parquet``
            is used when ``labels`` is ``None``) or a Dataset.
        labels: the judge labels (``labels.parquet`` path or table) for metrics that
            need them.
        profile, overrides: the study's profile and ``-S`` settings the runs were made
            with (default: those ``OUT/study.json`` names): a run counts in an arm only
            when its condition is exactly that arm's (:func:`arm_of_run`); without
            either, every run with the arm's own settings does.

    Returns:
        The finding: ``frame`` the rows (:data:`COLUMNS`), ``reading`` the counts of
        each verdict, ``departures`` the settings where the runs differ from the paper.

    Raises:
        StudyError: an unknown study, an environment without ``study_metrics``, or a
            paper number naming a metric its environment does not compute.
        PaperNumbersError: a paper-numbers file that does not validate
            (:mod:`scarce_lab.analysis.paper_numbers`).
    """
    from ..analysis.findings import Finding

    st = _study(study)
    ds, path = _dataset(out_or_dataset) if _numbers_known(st) else (out_or_dataset, None)
    labels = _labels(labels, path)
    design = design_of(st, path, profile, overrides)
    frame = _rows(st, ds, labels, design)
    if frame.height == 0:
        return Finding(f"{st.name}_replication", text=f"*Study {st.name!r} replicates no number of "
                       f"{NUMBERS_FILE} ({st.source}: {', '.join(st.replicates) or 'no table named'}).*",
                       convention={"study": st.name}, stale=(f"{st.name}_replication",))
    deps = departures(st, ds, labels=labels, design=design)
    counts = frame["verdict"].value_counts()
    count = {r["verdict"]: r["count"] for r in counts.iter_rows(named=True)}
    reading = (f"{st.name} against {st.source} {', '.join(st.replicates)}: "
               + ", ".join(f"{count.get(v, 0)} {v}" for v in VERDICTS) + ".")
    shown: dict[str, Any] = {}
    for d in deps:
        shown[d["setting"]] = (f"{shown[d['setting']]}, {d['here']}" if d["setting"] in shown else d["here"])
    dep_frame = pl.DataFrame([{k: str(v) for k, v in d.items()} for d in deps],
                             schema={"setting": pl.String, "paper": pl.String, "here": pl.String, "why": pl.String},
                             orient="row")
    return Finding(f"{st.name}_replication", frame=frame, reading=reading, departures=shown,
                   extra={f"{st.name}_replication_departures": dep_frame},
                   convention={"study": st.name, "source": st.source, "replicates": list(st.replicates),
                               "verdicts": "inside: the paper's value in our 95% interval (a range: overlapping it); "
                                           "not comparable: no interval at this run count",
                               "intervals": "each metric's own, from its environment's table"},
                   method=__doc__ or "")


def _numbers_known(st: Study) -> bool:
    return any(n.source == st.source and n.table in st.replicates for n in numbers_of(st.environment))


def counts(finding: Any) -> dict[str, int]:
    """``{verdict: rows}`` of a report (every verdict named, zeros included)."""
    frame = finding.frame if finding.frame is not None else pl.DataFrame(schema=COLUMNS)
    got = {r["verdict"]: r["count"] for r in frame["verdict"].value_counts().iter_rows(named=True)}
    return {v: int(got.get(v, 0)) for v in VERDICTS}


def headline_widths(study: Study | str, out_or_dataset: Any, *, labels: Any = None, profile: str | None = None,
                    overrides: dict[str, Any] | None = None,
                    watched: list[str] | None = None) -> dict[str, dict[str, float | None]]:
    """``{arm: {metric: width | None}}`` for the study's ``headline`` metrics: the width
    of the 95% interval of each (arm, metric) in the runs of ``out_or_dataset``, the
    widest over the models and conditions of the arm (``None``: no interval yet, e.g.
    one run or no run). What ``--target-width`` and ``status`` watch.

    ``watched``: metrics a stopping rule watches; each of their rows must state the kind
    its environment declares (:meth:`~scarce_lab.studies.Study.headline_intervals`): a row that printed another
    kind (e.g. SovSim's total payoff under a preset without a payoff cap: a t interval,
    not the bounded one) is refused.

    Raises:
        StudyError: a headline metric the environment's ``study_metrics`` does not
            compute (named, with those it computes), a watched row of another kind than
            declared (metric, arm, condition and both kinds named); otherwise as :func:`report`.
    """
    st = _study(study)
    declared = st.headline_intervals()
    ds, path = _dataset(out_or_dataset)
    frame = _metrics(st, ds, _labels(labels, path), design_of(st, path, profile, overrides))
    for r in frame.filter(pl.col("metric").is_in(list(watched or ()))).iter_rows(named=True):
        if r["estimate"] is not None and r.get("interval") != declared[r["metric"]]:
            raise StudyError(f"--target-width {r['metric']}: arm {r['arm']!r}, condition {r['condition']!r} prints "
                             f"a {r.get('interval')!r} interval, not the {declared[r['metric']]!r} one its environment "
                             "declares and the stopping rule was validated for; run a fixed number of seeds")
    out: dict[str, dict[str, float | None]] = {}
    for arm in st.arms:
        out[arm.name] = {}
        for metric in st.headline:
            part = frame.filter((pl.col("arm") == arm.name) & (pl.col("metric") == metric))
            widths = [None if r["ci_low"] is None or r["ci_high"] is None else r["ci_high"] - r["ci_low"]
                      for r in part.iter_rows(named=True)]
            out[arm.name][metric] = None if not widths or None in widths else max(widths)
    return out
