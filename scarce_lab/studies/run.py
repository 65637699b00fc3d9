"""Running a study: the plan (:func:`plan`), the eval-set run (:func:`run`) and the state
of an output folder (:func:`status`).

An output folder ``OUT`` holds one run folder per run of the study
(:meth:`scarce_lab.studies.Study.configs`), the sweep's spend ledger, ``labels/`` (the
judge panel's tables, as ``scarce-lab judge label`` writes them) and ``study.json``: the
study's choices (study, models, profile, overrides, seeds, arms, judges), written on the
first run, then every attempt of every run, the seeds run so far and what stopped the
last run. A later :func:`run` with other choices is refused naming the difference;
:func:`status` and the report need only ``OUT``.

Rules:

* Done: a run folder whose manifest says ``complete`` (:func:`scarce_lab.runtime.open_run`
  skips it); an unfinished one is resumed from its last durable round, a failed one is
  retried up to ``retries`` times (each attempt and its error recorded).
* Plan: :func:`scarce_lab.runners.preview.preview` of the missing runs (every model of
  every role, with each environment's bound of its calls per unit of play,
  ``EnvironmentSpec.plan_unit_calls``), plus the judge panel when the study has labels:
  per judge, one call per unit not yet judged (twice at the high end: a repair), the
  units of the complete runs counted, those of the missing runs bounded by
  ``EnvironmentSpec.plan_judge_units``. Nothing is sent by a plan.
* Cap: ``cost_limit`` below the plan's low estimate is refused before the first call;
  otherwise it is the sweep's cap (:mod:`scarce_lab.runners.sweep`): the players' and the
  judges' calls reserve their worst case in ``OUT/.spend.sqlite``.
* Interrupt-safe: a kill mid-run leaves each run folder committed at its last durable
  round and each answered call in the response cache; the next :func:`run` resumes the
  unfinished runs (replaying the answered calls from the cache) and labels only the
  units not yet judged.
* ``target_width``: seeds are added in batches (the study's seed count each) until every
  watched headline interval of every arm (:func:`scarce_lab.studies.report.headline_widths`)
  is at most that wide, or ``max_seeds`` seeds per arm, or the cap: ``study.json`` says
  which. Only a metric whose interval kind keeps its 95% when runs stop on its width may
  be watched (:data:`scarce_lab.analysis.stats.INTERVAL_KINDS`, ``under_stopping``:
  the bounded intervals); any other is refused by name before anything runs
  (:func:`target_widths`).

Size: the plan, the run loop and the status of one output folder share the folder's
rules (complete, unfinished, attempts, labels) and stay together.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..data.runlock import folder_lock
from . import Study, StudyError, get

#: The study's choices and history inside the output folder.
STUDY_FILE = "study.json"
#: The judge panel's folder inside the output folder.
LABELS = "labels"
#: The choices a later run must repeat (the others: history).
CHOICES = ("study", "models", "profile", "overrides", "seeds", "arms", "judges")


# -- choices --------------------------------------------------------------------------------
def model_sets(study: Study, models: Any, roles: dict[str, str] | None = None) -> list[dict[str, str]]:
    """``models`` as model sets ``{model field: model}``: a model name (the first of
    ``study.model_roles``), a dict, or a list of either (one arm set each); ``roles``
    (``{field: model}``, ``--role``) set those fields in every set.

    Raises:
        StudyError: no model, or a role that is not one of the study's ``model_roles``.
    """
    items = [] if models is None else [models] if isinstance(models, str | dict) else list(models)
    for key in roles or {}:
        if key not in study.model_roles:
            raise StudyError(f"study {study.name!r}: --role {key}: not a model field of the study; "
                             f"its model fields: {study.model_roles}")
    sets = [({study.model_roles[0]: m} if isinstance(m, str) else dict(m)) | dict(roles or {}) for m in items]
    if not sets and roles:
        sets = [dict(roles)]
    return sets


def _default_judges(study: Study, sets: list[dict[str, str]], profile: str | None) -> list[str]:
    """The default panel: the first model of the first model set (in ``model_roles``
    order) that is not a scripted policy, ``labels.judges`` times; none when every
    model is scripted (labels then need ``--judges``); a profile's own ``judges`` win."""
    from ..llm.models import needs_client

    prof = study.profile(profile)
    if study.labels is None:
        return []
    if prof.judges is not None:  # the profile names its panel ([]: its runs are not labelled here)
        return list(prof.judges)
    given = {**prof.model_sets[0], **(sets[0] if sets else {})}
    first = given.get(study.model_roles[0])
    ordered = [given.get(r, first) for r in study.model_roles]
    model = next((m for m in ordered if m and needs_client(m)), None)
    return [] if model is None else [model] * study.labels.judges


def _choices(study: Study, sets: list[dict[str, str]], *, seeds, arms, profile, overrides, judges) -> dict:
    return json.loads(json.dumps({
        "study": study.name, "models": sets, "profile": profile, "overrides": dict(overrides or {}),
        "seeds": None if seeds is None else list(seeds), "arms": None if arms is None else list(arms),
        "judges": list(judges) if judges is not None else _default_judges(study, sets, profile)}, default=str))


class _State(BaseModel):
    """The kinds of ``study.json``'s fields that :func:`status`, the report and a
    resumed :func:`run` read (other fields: history, kept as written)."""

    model_config = ConfigDict(extra="allow", strict=True)
    study: str
    models: list[dict[str, str]] = []
    profile: str | None = None
    overrides: dict[str, Any] = {}
    seeds: list[int] | None = None
    seeds_run: list[int] | None = None
    arms: list[str] | None = None
    judges: list[str] = []
    attempts: dict[str, list[dict[str, Any]]] = {}
    stopped: str | None = None


def read_state(out: Path) -> dict | None:
    """``OUT/study.json`` as a dict (``None`` when absent); the one gate every reader
    of the folder's choices goes through: read and checked against :class:`_State` by
    :func:`scarce_lab.data.jsonl.read_validated`.

    Raises:
        StudyError: a FIFO, device or folder, a file over the limit, not JSON, or not a
            JSON object whose fields have their kinds (:class:`_State`; the field named).
    """
    from ..data.jsonl import read_validated

    got = read_validated(Path(out) / STUDY_FILE, _State, StudyError, "a study file")
    return None if got is None else got[0]


def _write_state(out: Path, state: dict) -> None:
    from ..data.jsonl import write_atomic

    path = Path(out) / STUDY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(state, indent=2, default=str) + "\n")


def _transport(study: Study, overrides: dict | None) -> dict:
    """``overrides`` without the model client's transport settings (``llm.*`` keys that
    are not condition settings of the environment's config: the server address,
    timeouts, concurrency, retries, the cache): a resumed run may reach its server
    elsewhere; what the runs are is unchanged."""
    from ..registry import get as get_env

    fields = get_env(study.environment).config.CONDITION_FIELDS
    return {k: v for k, v in (overrides or {}).items() if not k.startswith("llm.") or k in fields}


def _check_same(out: Path, old: dict, new: dict, study: Study | None = None) -> None:
    def seen(state: dict, key: str) -> Any:
        value = state.get(key)
        return _transport(study, value) if key == "overrides" and study is not None else value

    diffs = [f"{k}: {old.get(k)!r} there, {new[k]!r} asked" for k in CHOICES if seen(old, k) != seen(new, k)]
    if diffs:
        raise StudyError(f"{Path(out) / STUDY_FILE} holds a study run with other choices ({'; '.join(diffs)}); "
                         "run it with the same choices, or use another --out folder")


# -- the plan -----------------------------------------------------------------------------
@dataclass
class StudyPlan:
    """What running a study into ``out`` would do; nothing is sent by building it.

    Attributes:
        runs: every run of the study, ``(arm, config)``.
        missing: the runs not complete in ``out`` (``(arm, config)``).
        unfinished: the run ids among ``missing`` with a folder to resume.
        models: the players' calls per model (:class:`scarce_lab.runners.preview.ModelPlan`),
            for the missing runs.
        judges: the judge panel's calls per judge model (empty: no labels).
        judge_units: ``(units known and not yet judged, bound of those of the missing
            runs or None)``.
        notes: what the figures leave out or assume.
    """

    study: Study
    out: Path
    runs: list[tuple[str, Any]]
    missing: list[tuple[str, Any]]
    unfinished: list[str] = field(default_factory=list)
    models: dict[str, Any] = field(default_factory=dict)
    judges: dict[str, Any] = field(default_factory=dict)
    judge_units: tuple[int, int | None] = (0, 0)
    notes: list[str] = field(default_factory=list)

    @property
    def cost_usd(self) -> tuple[float, float] | None:
        """``(low, high)`` US dollars of every call of every role (``inf`` high when a
        count has no bound); ``None`` when a model's price or prompt size is unknown."""
        low = high = 0.0
        for m in [*self.models.values(), *self.judges.values()]:
            cr = m.cost_range
            if cr is None:
                return None
            low += cr[0]
            high += cr[1] if m.bounded else math.inf
        if self.judges and self.judge_units[1] is None:
            high = math.inf
        return low, high

    def text(self) -> str:
        """The plan as text: runs per arm, then one line per model and per judge."""
        from ..runners.preview import Preview, format_preview

        arms: dict[str, list[int]] = {}
        missing = {c.run_id for _, c in self.missing}
        for arm, cfg in self.runs:
            arms.setdefault(arm, [0, 0])[0 if cfg.run_id in missing else 1] += 1
        lines = [f"study {self.study.name} -> {self.out}: {len(self.runs)} run(s), {len(self.missing)} to run "
                 f"({len(self.unfinished)} to resume), {len(self.runs) - len(self.missing)} complete"]
        lines += [f"  arm {a}: {n[1]} complete, {n[0]} to run" for a, n in arms.items()]
        if self.missing:
            body = format_preview(Preview(self.study.environment, runs=[], models=self.models, notes=[]))
            lines += body.splitlines()[1:]
        if self.judges:
            known, bound = self.judge_units
            lines.append(f"judge panel ({sum(1 for _ in self.judges)} model(s)): {known} unit(s) of complete runs "
                         f"to judge + " + (f"at most {bound}" if bound is not None else "an unknown number")
                         + " of the runs to come")
            body = format_preview(Preview(self.study.environment, runs=[], models=self.judges, notes=[]))
            lines += body.splitlines()[1:]
        cost = self.cost_usd
        lines.append("cost: " + ("unknown (a model's price or prompt size is unknown; set llm.prices)" if cost is None
                                 else f"${cost[0]:.4f} - " + ("unbounded" if math.isinf(cost[1]) else f"${cost[1]:.4f}")))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _resolve(study: Study | str) -> Study:
    return get(study) if isinstance(study, str) else study


def _complete(run_dir: Path) -> str | None:
    """The manifest status of ``run_dir`` (``None``: no run there)."""
    from ..data.recorder import MANIFEST, read_manifest

    if not (run_dir / MANIFEST).exists():
        return None
    return read_manifest(run_dir).status.value


def plan(study: Study | str, models: Any = None, *, out: Path, seeds: list[int] | None = None,
         arms: list[str] | None = None, profile: str | None = None, overrides: dict[str, Any] | None = None,
         judges: list[str] | None = None, roles: dict[str, str] | None = None,
         check_state: bool = True) -> StudyPlan:
    """The plan of running ``study`` into ``out`` (module docstring, "Plan").

    Args:
        models: a model, ``{model field: model}``, or a list of either (one arm set per
            model set; :func:`model_sets`); ``None``: the profile's models.
        out: the output folder (read only).
        seeds, arms, profile, overrides: as :meth:`Study.configs`.
        judges: the judge panel's models (default: the study's model, as many times as
            the study's ``labels.judges``); ignored when the study has no labels.
        roles: ``{model field: model}`` set in every model set (``--role``).
        check_state: refuse, as :func:`run` would, when ``out`` holds a study run with
            other choices (``OUT/study.json``), so a dry run never plans a run that
            would be refused.

    Raises:
        StudyError: as :meth:`Study.configs`; ``out`` holds a study run with other
            choices (``check_state``); a model without a price estimate is not an
            error (the plan says the cost is unknown).
    """
    from ..registry import get as get_env
    from ..runners.preview import preview

    study = _resolve(study)
    out = Path(out)
    sets = model_sets(study, models, roles)
    runs = study.configs(sets or [{}], seeds=seeds, arms=arms, profile=profile, overrides=overrides)
    if check_state and (state := read_state(out)) is not None:
        _check_same(out, state, _choices(study, sets, seeds=seeds, arms=arms, profile=profile, overrides=overrides,
                                         judges=judges), study)
    status = {c.run_id: _complete(out / c.run_id) for _, c in runs}
    missing = [(a, c) for a, c in runs if status[c.run_id] != "complete"]
    result = StudyPlan(study, out, runs, missing, unfinished=[c.run_id for _, c in missing if status[c.run_id]])
    if missing:
        pv = preview(study.environment, [c for _, c in missing])
        result.models, result.notes = pv.models, list(pv.notes)
    if study.labels is not None:
        spec = get_env(study.environment)
        panel = judges if judges is not None else _default_judges(study, sets, profile)
        done_dirs = [out / c.run_id for _, c in runs if status[c.run_id] == "complete"]
        bound = None if spec.plan_judge_units is None else sum(int(spec.plan_judge_units(c)) for _, c in missing)
        if not panel:
            result.notes.append(f"no judge panel: the study's {study.labels.taxonomy} labels need one and every model "
                                "here is scripted; give --judges to label the runs")
        result.judges, known = _judge_plan(study, panel, done_dirs, out / LABELS, bound, runs[0][1])
        result.judge_units = (known, bound)
        if bound is None and missing:
            result.notes.append(f"{spec.title} gives no bound of its judge units (EnvironmentSpec.plan_judge_units): "
                                "the judges' calls of the runs to come are not priced")
    return result


def _units_of(run_dirs: list[Path]) -> list[Any]:
    """The judge units of the complete runs ``run_dirs`` (a run without talk has none)."""
    from ..judge.units import dataset_units

    units = []
    for d in run_dirs:
        try:
            units += dataset_units(d)
        except ValueError:  # a run with nothing to label
            continue
    return units


def _judge_specs(study: Study, panel: list[str]) -> list[Any]:
    from ..judge.judges import make_judges

    try:
        return make_judges(panel, seed=0)
    except ValueError as exc:
        raise StudyError(f"study {study.name!r}: --judges {','.join(panel)}: {exc}") from None


def _judge_plan(study: Study, panel: list[str], done_dirs: list[Path], labels: Path, bound: int | None,
                cfg: Any) -> tuple[dict[str, Any], int]:
    """Per judge model, the panel's calls: one per unit not yet judged and judge (two at
    the high end), the known units from ``done_dirs``, ``bound`` more of the runs to come."""
    from ..judge.judging import render_messages
    from ..judge.store import JudgementStore
    from ..judge.taxonomy import load_taxonomy
    from ..judge.units import Unit
    from ..llm.costs import price_of
    from ..runners.preview import ModelPlan, _count

    if not panel:
        return {}, 0
    specs = _judge_specs(study, panel)
    tax = load_taxonomy(study.labels.taxonomy)
    units = _units_of(done_dirs)
    done = JudgementStore(labels).done({u.unit_id for u in units}, {j.key for j in specs}) if labels.exists() else {}
    llm = getattr(cfg, "llm", None)
    api_base, prices = getattr(llm, "api_base", None), getattr(llm, "prices", None)
    sample = units[0] if units else Unit(unit_id="plan", run_id="plan", round=0, agent="a", public_reasoning=".")
    out: dict[str, ModelPlan] = {}
    known = 0
    for j in specs:
        todo = sum(1 for u in units if (u.unit_id, j.key) not in done)
        known = max(known, todo)
        p = out.setdefault(j.model, ModelPlan(j.model, api_base, price=price_of(j.model, api_base, prices),
                                              purpose="judge"))
        p.calls_low += todo
        p.calls_high += 2 * (todo + (bound or 0))
        if p.prompt_tokens is None:
            p.prompt_tokens = _count(j.model, render_messages(tax, sample, j))
            p.max_tokens = j.answer_tokens
    return out, known


# -- running ------------------------------------------------------------------------------
def _attempt(state: dict, outcome: Any) -> None:
    state.setdefault("attempts", {}).setdefault(outcome.run_id, []).append(
        {"status": outcome.status, "error": outcome.error, "at": datetime.now(UTC).isoformat(timespec="seconds")})


def _batch(study: Study, state: dict, cfgs: list[Any], out: Path, *, retries: int, executor: str,
           address: str | None, progress: bool, cost_limit: float | None, say: Any) -> str | None:
    """Run ``cfgs`` (resuming unfinished ones), retrying failed runs up to ``retries``
    times; every outcome recorded in ``state``. Returns what stopped it early
    (``"cost cap"``) or ``None``."""
    from ..runners.executors import ExecutorError
    from ..runners.sweep import play, sweep_spent

    todo = list(cfgs)
    for attempt in range(retries + 1):
        if not todo:
            return None
        try:
            outcomes = play(study.environment, todo, out, resume=True, progress=progress, executor=executor,
                            address=address, max_cost=cost_limit)
        except ExecutorError as exc:
            raise StudyError(f"--executor {executor}: {exc}") from None
        for o in outcomes:
            _attempt(state, o)
            if o.status not in ("complete", "skipped"):
                say(f"{o.run_id}: {o.status}" + (f": {o.error}" if o.error else "")
                    + (f" (attempt {attempt + 1} of {retries + 1})" if o.status == "failed" else ""))
        _write_state(out, state)
        if any(o.status == "not_started" for o in outcomes) or sweep_spent(out, cost_limit):
            return "cost cap"
        retry = {o.run_id for o in outcomes if o.status == "failed"}
        todo = [c for c in todo if c.run_id in retry]
    return None


def _label(study: Study, state: dict, runs: list[tuple[str, Any]], out: Path, *, executor: str,
           address: str | None, progress: bool, cost_limit: float | None, say: Any) -> int:
    """Judge the units of the complete runs not yet judged into ``OUT/labels``; the
    number of units labelled in all."""
    from ..judge.taxonomy import load_taxonomy
    from ..runners.executors import ExecutorError
    from ..runners.labelling import client_settings, label_to
    from ..runners.sweep import LEDGER

    if study.labels is None or not state.get("judges"):
        return 0
    done = [out / c.run_id for _, c in runs if _complete(out / c.run_id) == "complete"]
    units = _units_of(done)
    if not units:
        say("labels: no unit to label in the complete runs")
        return 0
    llm = runs[0][1].llm
    settings = client_settings(api_base=llm.api_base, cache_dir=llm.cache_dir)
    settings |= {"prices": llm.prices} if llm.prices else {}
    if cost_limit is not None:
        settings |= {"sweep_max_cost_usd": cost_limit, "spend_ledger": out.resolve() / LEDGER}
    try:
        label_to(units, load_taxonomy(study.labels.taxonomy), _judge_specs(study, state["judges"]), out / LABELS,
                 settings=settings, executor=executor, address=address, progress=progress)
    except ExecutorError as exc:
        raise StudyError(f"--executor {executor}: {exc}") from None
    except ValueError as exc:
        raise StudyError(f"labels in {out / LABELS}: {exc}") from None
    say(f"labels: {len(units)} unit(s) x {len(state['judges'])} judge(s) -> {out / LABELS}")
    return len(units)


def _widths(study: Study, out: Path, watched: list[str] | None = None) -> dict[str, dict[str, float | None]] | None:
    """:func:`scarce_lab.studies.report.headline_widths` (``watched``: the metrics whose
    rows must print the declared kind), or ``None`` when the report module is not installed."""
    try:
        from .report import headline_widths
    except ImportError:
        return None
    return headline_widths(study, out, watched=watched)


def target_widths(study: Study, width: float | dict[str, float]) -> dict[str, float]:
    """``{headline metric: width}`` the run watches: one width for every headline metric
    (each in its own unit: a share, rounds, points), or a width per metric (only those
    named are watched).

    Raises:
        StudyError: a width that is not a finite number > 0, a metric that is not one
            of the study's headline metrics (those named), or a watched metric whose
            interval kind is not validated under stopping on its width (named, with its
            kind, why, and the headline metrics that may be watched).
    """
    wanted = dict.fromkeys(study.headline, width) if not isinstance(width, dict) else dict(width)
    if not wanted:
        raise StudyError(f"--target-width: study {study.name!r} names no headline metric to watch")
    for metric, w in wanted.items():
        if metric not in study.headline:
            raise StudyError(f"--target-width {metric}={w}: not a headline metric of {study.name!r} "
                             f"(its headline metrics: {', '.join(study.headline)})")
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w <= 0:
            raise StudyError(f"--target-width {metric}={w!r}: a width must be a finite number > 0")
    _check_stoppable(study, list(wanted))
    return {k: float(v) for k, v in wanted.items()}


def _check_stoppable(study: Study, metrics: list[str]) -> None:
    """Refuse a watched metric whose interval kind is not validated under stopping."""
    from ..analysis.stats import interval_kind

    kinds = study.headline_intervals()
    bad = [m for m in metrics if not interval_kind(kinds[m]).under_stopping]
    if bad:
        ok = [m for m in study.headline if interval_kind(kinds[m]).under_stopping]
        said = "; ".join(f"{m}'s interval is {kinds[m]!r} ({interval_kind(kinds[m]).method}): "
                         f"{interval_kind(kinds[m]).why_not}" for m in bad)
        raise StudyError(f"--target-width refused for {', '.join(bad)} (not validated under stopping on width, "
                         f"bench_coverage.py): {said}. "
                         + (f"Headline metrics that may be watched: {', '.join(f'{m}=W' for m in ok)}; or run "
                            if ok else f"No headline metric of {study.name!r} has an interval that may be watched: run ")
                         + "a fixed number of seeds (--seeds). Nothing was run.")


def _narrow_enough(widths: dict | None, wanted: dict[str, float], arms: set[str]) -> bool:
    """Every arm run has every watched headline width known and at most its target."""
    return bool(widths) and arms <= set(widths) and all(
        widths[a] and all(widths[a].get(m) is not None and widths[a][m] <= w for m, w in wanted.items())
        for a in arms)


def _check_limits(*, cost_limit: float | None, target_width: float | None, max_seeds: int | None,
                  retries: int) -> None:
    """The run's limits, checked before anything is planned or written: a NaN compares
    false with every number (a NaN width is never reached, a NaN cap never refuses) and an
    infinite cap caps nothing, so each must be a finite number in its range."""
    for name, value in (("cost-limit", cost_limit), ("target-width", target_width)):
        if value is not None and not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise StudyError(f"--{name} {value!r}: needs a finite number > 0")
    for name, value, low in (("max-seeds", max_seeds, 1), ("retries", retries, 0)):
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
            raise StudyError(f"--{name} {value!r}: needs a whole number >= {low}")
    if target_width is not None and max_seeds is None and cost_limit is None:
        raise StudyError(f"--target-width {target_width}: needs a stop (--max-seeds or --cost-limit)")


def run(study: Study | str, models: Any = None, *, out: Path, cost_limit: float | None = None,
        target_width: float | dict[str, float] | None = None, max_seeds: int | None = None, retries: int = 2,
        judges: list[str] | None = None, executor: str = "local", address: str | None = None,
        progress: bool = True, seeds: list[int] | None = None, arms: list[str] | None = None,
        profile: str | None = None, overrides: dict[str, Any] | None = None, roles: dict[str, str] | None = None,
        say: Any = print) -> StudyStatus:
    """Run what is missing of ``study`` in ``out``, label it, and return its status
    (the module docstring's rules).

    Args:
        models, seeds, arms, profile, overrides, judges, roles: as :func:`plan`.
        out: the output folder (made if absent).
        cost_limit: US dollars for the whole study (players and judges); below the
            plan's low estimate the run is refused before any call.
        target_width: add seeds in batches until every headline interval is at most
            this wide (needs ``max_seeds`` or ``cost_limit`` as a stop); a dict gives a
            width per headline metric, in its unit (:func:`target_widths`).
        max_seeds: at most this many seeds per arm with ``target_width``.
        retries: further attempts of a failed run.
        executor, address: ``local`` or ``ray`` (:mod:`scarce_lab.runners.executors`).
        progress: progress bars.
        say: where the plan and the messages go (``print``; the CLI's echo).

    Raises:
        StudyError: other choices than ``OUT/study.json``'s, a cap below the plan, a
            limit that is not finite or out of range (NaN, inf, a negative or zero
            cap, ``max_seeds`` < 1, ``retries`` < 0), a ``target_width`` without a stop,
            another process running into ``out``, a model that cannot be used (preflight),
            or Ray unreachable.
    """
    from ..runners.preflight import ModelUnavailableError, check_configs
    from ..runners.sweep import with_sweep_cap

    study = _resolve(study)
    out = Path(out)
    _check_limits(cost_limit=cost_limit, target_width=None if isinstance(target_width, dict) else target_width,
                  max_seeds=max_seeds, retries=retries)
    wanted = target_widths(study, target_width) if target_width is not None else {}
    if isinstance(target_width, dict) and max_seeds is None and cost_limit is None:
        raise StudyError(f"--target-width {target_width}: needs a stop (--max-seeds or --cost-limit)")
    sets = model_sets(study, models, roles)
    choices = _choices(study, sets, seeds=seeds, arms=arms, profile=profile, overrides=overrides, judges=judges)
    state = read_state(out)
    if state is not None:
        _check_same(out, state, choices, study)
        state["overrides"] = choices["overrides"]  # the transport settings of this run (server address)
    else:
        state = {**choices, "retries": retries, "attempts": {}}
    base_seeds = list(seeds) if seeds is not None else None
    seeds_run = state.get("seeds_run") or base_seeds
    kw = dict(arms=arms, profile=profile, overrides=overrides, judges=choices["judges"], roles=None)
    first = plan(study, sets or None, out=out, seeds=seeds_run, check_state=False, **kw)
    say(first.text())
    cost = first.cost_usd
    if cost_limit is not None and cost is not None and cost_limit < cost[0]:
        raise StudyError(f"--cost-limit {cost_limit:g}: below the plan's low estimate ${cost[0]:.4f} (one call per "
                         "decision of every missing run played to its last step; a game that ends early, e.g. a "
                         "collapse, costs less, so a smaller cap could suffice, but the plan cannot promise it); "
                         "nothing was sent (raise the limit, or run fewer seeds or arms)")
    try:
        check_configs([c for _, c in first.missing])
    except ModelUnavailableError as exc:
        raise StudyError(f"--model: {exc}") from None
    out.mkdir(parents=True, exist_ok=True)
    # two runs into one folder would run the same runs twice and lose each other's attempts
    with folder_lock(out, ".study.lock", lambda lock: StudyError(
            f"{out}: another study run is writing this folder now (it holds {lock}); wait for it, or use another "
            "--out folder")):
        disk = read_state(out)  # another process may have run into the folder since it was read
        if disk is not None:
            _check_same(out, disk, choices, study)
            state = disk | {"overrides": choices["overrides"]}  # this run's transport settings (server address)
        state |= {"retries": retries, "cost_limit": cost_limit, "target_width": target_width, "max_seeds": max_seeds,
                  "executor": executor, "stopped": None}
        _write_state(out, state)
        # a batch: the study's seed count (the seeds given, else the profile's, else the study's)
        batch = len(base_seeds) if base_seeds else len(study.profile(profile).seeds or range(study.seeds))
        current = first
        while True:
            try:
                cfgs = with_sweep_cap([c for _, c in current.missing], out, cost_limit)
            except ValueError as exc:
                raise StudyError(f"--cost-limit: {exc}") from None
            stopped = _batch(study, state, cfgs, out, retries=retries, executor=executor, address=address,
                             progress=progress, cost_limit=cost_limit, say=say)
            if stopped is None:
                _label(study, state, current.runs, out, executor=executor, address=address, progress=progress,
                       cost_limit=cost_limit, say=say)
                last = {c.run_id: state["attempts"][c.run_id][-1]["status"] for _, c in current.missing}
                bad = sorted(r for r, st in last.items() if st not in ("complete", "skipped"))
                if bad:
                    stopped = f"{len(bad)} run(s) not complete after {retries} retries (study.json: attempts)"
            if stopped is not None or target_width is None:
                state["stopped"] = stopped or "complete"
                break
            widths = _widths(study, out, list(wanted))
            have = sorted({_seed(study, c) for _, c in current.runs})
            if widths is None:
                raise StudyError("--target-width needs scarce_lab.studies.report.headline_widths, which is not installed")
            if _narrow_enough(widths, wanted, {a for a, _ in current.runs}):
                state["stopped"] = (f"target widths {_shown(wanted)} reached (every watched interval is bounded: "
                                    "at least 97.5% coverage in simulated studies stopped on its width, "
                                    "bench_coverage.py)")
                break
            if max_seeds is not None and len(have) >= max_seeds:
                state["stopped"] = f"max seeds {max_seeds} reached"
                break
            more = [max(have) + 1 + i for i in range(batch)]
            if max_seeds is not None:
                more = more[:max_seeds - len(have)]
            state["seeds_run"] = have + more
            _write_state(out, state)
            wide = {f"{a}.{m}": w for a, ws in widths.items() for m, w in ws.items()
                    if m in wanted and (w is None or w > wanted[m])}
            say(f"wider than {_shown(wanted)}: {_shown(wide)}; adding seeds {more}")
            current = plan(study, sets or None, out=out, seeds=state["seeds_run"], check_state=False, **kw)
        _write_state(out, state)
        say(f"stopped: {state['stopped']}")
        return status(out)


def _shown(widths: dict[str, float | None]) -> str:
    return ", ".join(f"{k} {'none yet' if v is None else f'{v:.3g}'}" for k, v in widths.items())


def _seed(study: Study, cfg: Any) -> int:
    value: Any = cfg
    for part in study.seed_field.split("."):
        value = getattr(value, part)
    return int(value)


# -- status -------------------------------------------------------------------------------
@dataclass
class ArmStatus:
    """One arm's runs in an output folder: complete, failed (the manifest says so, or
    the last attempt could not start), unfinished (a folder to resume) and missing (no
    folder); model calls sent and their recorded US dollars, and calls answered from the
    response cache (an identical earlier request: same prompt, seed and settings, e.g. a
    task repeated in a later subrun without memory, or another arm's identical step); its
    headline interval widths (``None`` per metric: no interval yet)."""

    arm: str
    done: int = 0
    failed: int = 0
    unfinished: int = 0
    missing: int = 0
    calls: int = 0
    usd: float = 0.0
    cached: int = 0
    widths: dict[str, float | None] = field(default_factory=dict)


@dataclass
class StudyStatus:
    """The state of a study's output folder (:func:`status`)."""

    study: str
    out: Path
    arms: dict[str, ArmStatus]
    stopped: str | None = None
    ledger_usd: float = 0.0
    labelled: int = 0
    widths_note: str = ""

    def text(self) -> str:
        """One line per arm, then the spend ledger, the labels and what stopped the run."""
        lines = [f"study {self.study} in {self.out}:"]
        for a in self.arms.values():
            w = ", ".join(f"{k} {'-' if v is None else f'{v:.3f}'}" for k, v in a.widths.items()) or "-"
            lines.append(f"  arm {a.arm}: {a.done} done, {a.failed} failed, {a.unfinished} unfinished, "
                         f"{a.missing} missing; {a.calls} model calls, ${a.usd:.4f}"
                         + (f", {a.cached} answered from the response cache (identical requests)" if a.cached else "")
                         + f"; widths: {w}")
        lines.append(f"  spend ledger (players and judges): ${self.ledger_usd:.4f}; labelled units: {self.labelled}")
        arms_usd = sum(a.usd for a in self.arms.values())
        if self.ledger_usd > arms_usd + 1e-9 or any(a.cached for a in self.arms.values()):
            lines.append(f"  the arms' ${arms_usd:.4f} counts each run's recorded calls; the ledger (charged as each call "
                         "was answered) is what was spent: it adds the judges' calls and the calls answered before a "
                         "kill that a run had not yet recorded (a SCARCE contention's calls are recorded when every "
                         "negotiator has answered), which the resumed run replays from the response cache at $0")
        if self.widths_note:
            lines.append(f"  {self.widths_note}")
        lines.append(f"  last run stopped: {self.stopped or 'not finished (run it again to resume)'}")
        return "\n".join(lines)


def _calls(run_dir: Path) -> tuple[int, float, int]:
    """``(calls sent, their recorded USD, calls answered from the response cache)`` of
    one run folder's call records."""
    from ..data.jsonl import iter_json_objects
    from ..data.recorder import LLM_CALLS

    n, usd, cached = 0, 0.0, 0
    if (run_dir / LLM_CALLS).exists():
        for _, obj in iter_json_objects(run_dir / LLM_CALLS):
            if obj.get("cache_hit"):
                cached += 1
            else:
                n += 1
                usd += float(obj.get("cost_usd") or 0.0)
    return n, usd, cached


def status(out: Path) -> StudyStatus:
    """Per arm: runs done, failed, unfinished and missing, model calls and dollars spent
    (from the runs' call records), current headline widths
    (:func:`scarce_lab.studies.report.headline_widths`).

    Raises:
        StudyError: no ``study.json`` in ``out`` (not a study's folder), or a study no
            longer declared.
    """
    from ..runners.sweep import sweep_spent_usd

    out = Path(out)
    state = read_state(out)
    if state is None:
        raise StudyError(f"{out}: no {STUDY_FILE}: not the output folder of a study run (scarce-lab study run)")
    study = get(state["study"])
    runs = study.configs(state["models"] or [{}], seeds=state.get("seeds_run") or state.get("seeds"),
                         arms=state.get("arms"), profile=state.get("profile"), overrides=state.get("overrides"))
    arms: dict[str, ArmStatus] = {}
    attempts = state.get("attempts") or {}
    for arm, cfg in runs:
        a = arms.setdefault(arm, ArmStatus(arm))
        st = _complete(out / cfg.run_id)
        last = (attempts.get(cfg.run_id) or [{}])[-1].get("status")
        if st == "complete":
            a.done += 1
        elif st == "failed" or (st is None and last in ("error", "failed")):
            a.failed += 1
        elif st is not None:
            a.unfinished += 1
        else:
            a.missing += 1
        n, usd, cached = _calls(out / cfg.run_id)
        a.calls, a.usd, a.cached = a.calls + n, a.usd + usd, a.cached + cached
    note = ""
    try:
        widths = _widths(study, out) or {}
        if not widths:
            note = "headline widths: not available (scarce_lab.studies.report is not installed)"
    except (ValueError, FileNotFoundError) as exc:  # no complete run yet, nothing to estimate
        widths, note = {}, f"headline widths: none yet ({exc})"
    for arm, w in widths.items():
        if arm in arms:
            arms[arm].widths = dict(w)
    labelled = 0
    if (out / LABELS / "labels.parquet").exists():
        import polars as pl

        labelled = pl.read_parquet(out / LABELS / "labels.parquet").height
    return StudyStatus(study.name, out, arms, state.get("stopped"), sweep_spent_usd(out), labelled, note)
