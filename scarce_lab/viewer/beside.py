"""A fork beside its parent (:func:`view_beside`): two timelines aligned by step.

A fork (:mod:`scarce_lab.forks`) replays its parent up to ``config.fork.at`` and plays on
from there; this view shows both runs from that step on, one row per step (the events'
``round``: SovSim round, SCARCE contention, Economy episode), the parent on the left and
the fork on the right, each event as one line (time, visibility badge, kind, agent and
its payload, cut at ``max_chars``). A step whose events differ between the two is marked
(``data-differs="true"``), leaving out the fields the environment names as measurements
(``EnvironmentSpec.measured``: SCARCE's command wall seconds), as the fork's own prefix
check does; the steps before the fork are the parent's, replayed, and summarised in one
line. Environment-free: it reads the typed events only. Everything
is escaped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .render import CSS, badge_cell, cut, esc, time_tag

#: payload fields never compared nor shown: call ids name the run's own calls
#: (:data:`scarce_lab.forks.prefix.RUN_IDS`)
_NOT_COMPARED = ("call_ids",)

BESIDE_CSS = """
.sl-beside{table-layout:fixed;width:100%}.sl-beside td,.sl-beside th{overflow-wrap:anywhere}.sl-beside .sl-differs{background:#fff7e6}.sl-beside .sl-step{font-weight:600}
.sl-beside .sl-line{margin:2px 0;font-size:12px}.sl-beside code{font-size:11px}
"""


def find_parent(fork_dir: Path, fork: dict[str, Any], where: str | Path | None) -> Path:
    """The parent run folder of the fork in ``fork_dir`` (``fork``: its ``config.fork``):
    ``where`` is the parent's run folder, or a folder searched for a run whose id is
    ``fork["parent"]``; ``None`` searches the fork's own folder (its siblings). The
    parent's files must still match ``fork["parent_digest"]`` (SHA-256 of its events and
    calls, :func:`scarce_lab.forks.replay.parent_digest`).

    Raises:
        FileNotFoundError: no run with the parent's id there.
        ValueError: the run found is another run, or its files changed since the fork
            (digest named).
    """
    from ..forks.replay import parent_digest
    from . import _manifest_id, _run_dir

    parent_id = fork.get("parent")
    place = Path(where) if where is not None else fork_dir.parent
    if (place / "manifest.json").exists():
        run_dir = place
        if _manifest_id(run_dir) != parent_id:
            raise ValueError(f"{run_dir} is run {_manifest_id(run_dir)!r}, not the parent {parent_id!r} of "
                             f"fork {fork_dir.name}")
    else:
        try:
            run_dir = _run_dir(place, parent_id)
        except ValueError:
            raise FileNotFoundError(f"the parent {parent_id!r} of fork {fork_dir.name} is not under {place}: "
                                    f"pass beside= its run folder or a folder holding it") from None
    digest = parent_digest(run_dir)
    if digest != fork.get("parent_digest"):
        raise ValueError(f"{run_dir}: its events/calls changed since fork {fork_dir.name} was made "
                         f"(SHA-256 {digest}, the fork's config.fork.parent_digest {fork.get('parent_digest')})")
    return run_dir


def _signature(e: dict, measured: dict) -> tuple:
    skip = (*_NOT_COMPARED, *measured.get(e.get("kind"), ()))
    payload = {k: v for k, v in (e.get("payload") or {}).items() if k not in skip}
    return (e.get("kind"), e.get("agent"), e.get("visibility"), json.dumps(payload, sort_keys=True, default=str))


def _measured(env: str | None) -> dict:
    from ..registry import UnknownEnvironmentError, get

    try:
        return dict(get(env).measured)
    except UnknownEnvironmentError:
        raise ValueError(f"the viewer does not know environment {env!r}") from None


def _line(e: dict, max_chars: int) -> str:
    payload = {k: v for k, v in (e.get("payload") or {}).items() if k not in _NOT_COMPARED and v not in (None, [], {})}
    text = json.dumps(payload, default=str, ensure_ascii=False)
    who = f' <b>{esc(e.get("agent"))}</b>' if e.get("agent") else ""
    return (f'<div class="sl-line" data-kind="{esc(e.get("kind"))}">{time_tag(e)}{badge_cell(e)}'
            f'<code>{esc(e.get("kind"))}</code>{who} {cut(text, max_chars)}</div>')


def _by_step(events: list[dict], at: int) -> dict[int, list[dict]]:
    steps: dict[int, list[dict]] = {}
    for e in events:
        r = e.get("round")
        if isinstance(r, int) and r >= at:
            steps.setdefault(r, []).append(e)
    return steps


def render_beside(parent: tuple[dict, list[dict]], fork: tuple[dict, list[dict]], *, max_chars: int = 300) -> str:
    """HTML fragment: the parent's and the fork's (manifest, events) side by side from
    the fork step on (module docstring). ``max_chars``: longest payload shown in full.

    Raises:
        ValueError: the second run is no fork (no ``config.fork``).
    """
    (pm, pev), (fm, fev) = parent, fork
    spec = (fm.get("config") or {}).get("fork")
    if not spec:
        raise ValueError(f"run {fm.get('run_id')} is no fork (its manifest's config has no fork)")
    at = int(spec["at"])
    measured = _measured(fm.get("environment"))
    p_steps, f_steps = _by_step(pev, at), _by_step(fev, at)
    rows, n_diff = [], 0
    for step in sorted(set(p_steps) | set(f_steps)):
        left, right = p_steps.get(step, []), f_steps.get(step, [])
        differs = [_signature(e, measured) for e in left] != [_signature(e, measured) for e in right]
        n_diff += differs
        cls = ' class="sl-differs"' if differs else ""
        cells = ["".join(_line(e, max_chars) for e in side) or "<em>no events (the run had ended)</em>"
                 for side in (left, right)]
        rows.append(f'<tr data-step="{esc(step)}" data-differs="{str(differs).lower()}"{cls}>'
                    f'<td class="sl-step">step {esc(step)}{"<br>differs" if differs else ""}</td>'
                    f"<td>{cells[0]}</td><td>{cells[1]}</td></tr>")
    iv = spec.get("intervention") or {}
    head = (f'<h2>fork {esc(fm.get("run_id"))} beside its parent {esc(pm.get("run_id"))}</h2>'
            f'<p class="sl-meta">environment <b>{esc(fm.get("environment"))}</b> · fork at step <b>{esc(at)}</b> · '
            f'seed {esc(spec.get("seed"))} · intervention <code>{esc(json.dumps(iv, default=str))}</code> · '
            f'condition <b>{esc(fm.get("condition"))}</b></p>'
            f'<p class="sl-meta">steps before {esc(at)}: the parent\'s, replayed (not shown) · from step {esc(at)} '
            f'on: {len(rows)} step(s), {n_diff} differ</p>')
    table = ('<table class="sl-beside"><colgroup><col style="width:90px"><col><col></colgroup>'
             f'<tr><th>step</th><th>parent {esc(pm.get("run_id"))}</th>'
             f'<th>fork {esc(fm.get("run_id"))}</th></tr>{"".join(rows)}</table>')
    return (f'<div class="sl-view sl-fork-view" data-env="{esc(fm.get("environment"))}" data-at="{esc(at)}">'
            f"<style>{CSS}{BESIDE_CSS}</style>{head}{table}</div>")
