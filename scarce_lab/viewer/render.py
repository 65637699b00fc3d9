"""HTML rendering of one run's events (see :mod:`scarce_lab.viewer`): pure functions
from (manifest, events) to an HTML fragment with its own inline CSS; every text escaped.

This module holds what every environment's renderer shares (escaping and cutting, time
tags and time order, visibility badges, tables, a decision's marks and model calls) and
:func:`render_run`, which takes the body from the environment's registered renderer
(``EnvironmentSpec.render``; the shipped ones are :mod:`.sovsim`, :mod:`.scarce`,
:mod:`.economy`)."""

from __future__ import annotations

import html
import json
from typing import Any

CSS = """
.sl-view{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1b1b1b;max-width:1100px}
.sl-view h2{font-size:18px;margin:6px 0}.sl-view h3{font-size:16px;margin:18px 0 6px;border-bottom:1px solid #ccc}
.sl-view h4{font-size:13px;margin:8px 0 2px;color:#333;text-transform:uppercase;letter-spacing:.03em}
.sl-view table{border-collapse:collapse;margin:4px 0}.sl-view td,.sl-view th{border:1px solid #ddd;padding:2px 6px;
vertical-align:top;text-align:left}.sl-view th{background:#f3f3f3}
.sl-meta{color:#444}.sl-t{color:#777;font-variant-numeric:tabular-nums;margin-right:6px;white-space:nowrap}
.sl-view details{border:1px solid #c9d6e8;border-radius:4px;margin:6px 0;padding:2px 8px;background:#f8fbff}
.sl-view summary{cursor:pointer;font-weight:600}.sl-event{margin:3px 0}
.sl-msg{margin:3px 0;padding:3px 6px;border-left:3px solid #9ecae1;background:#fff}
.sl-private{border-left-color:#cb181d;background:#fff5f5}.sl-scheduler{border-left-color:#6a51a3;background:#f7f5ff}
.sl-badge{display:inline-block;font-size:11px;font-weight:700;padding:0 5px;border-radius:3px;margin-right:6px;
color:#fff;background:#2171b5}.sl-private .sl-badge{background:#cb181d}.sl-scheduler .sl-badge{background:#6a51a3}
.sl-text{white-space:pre-wrap}.sl-view pre{white-space:pre-wrap;background:#f6f6f6;padding:4px;margin:2px 0;
max-height:240px;overflow:auto}.sl-leader{font-weight:700;color:#b2182b}.sl-bad{color:#b2182b}
"""


def esc(v: Any) -> str:
    """HTML-escaped text of ``v`` (``None`` -> empty)."""
    return "" if v is None else html.escape(str(v))


def cut(text: Any, max_chars: int) -> str:
    """Escaped ``text``, cut at ``max_chars`` with the number of characters left out."""
    s = "" if text is None else str(text)
    if len(s) <= max_chars:
        return esc(s)
    return esc(s[:max_chars]) + f" <em>… ({len(s) - max_chars} more characters)</em>"


def time_tag(e: dict) -> str:
    """The event's time ``t`` (seconds on its clock) as a small grey tag; empty without one."""
    t = e.get("t")
    return f'<span class="sl-t">t={t:g} s</span>' if isinstance(t, int | float) else ""


def table(headers: list[str], rows: list[list[str]]) -> str:
    """An HTML table: ``headers`` are escaped here, the cells of ``rows`` are HTML already."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def visibility_badge(e: dict, researcher: str = "seen by no agent") -> tuple[str, str]:
    """(css class, badge html) of an event's visibility (who could see it);
    ``researcher``: the badge's words for an event no agent sees (an environment's
    renderer names who does, e.g. SCARCE's scheduler for ballots)."""
    vis = e.get("visibility") or "public"
    if vis == "private":
        to = e.get("visible_to") or []
        who = f", visible to {', '.join(map(str, to))}" if to else ""
        return "sl-private", f'<span class="sl-badge">private{esc(who)}</span>'
    if vis == "researcher":
        return "sl-scheduler", f'<span class="sl-badge">{esc(researcher)}</span>'
    return "sl-public", f'<span class="sl-badge">{esc(vis)}</span>'


def render_run(manifest: dict, events: list[dict], *, max_chars: int = 1500) -> str:
    """HTML fragment (with its CSS) of one run.

    The body comes from the environment's registered renderer
    (:class:`scarce_lab.registry.EnvironmentSpec` ``render``); the head is shared.

    Raises:
        ValueError: the run's environment is not registered (the names are listed).
    """
    from ..registry import UnknownEnvironmentError, get

    env = manifest.get("environment")
    try:
        render = get(env).render
    except UnknownEnvironmentError as exc:
        raise ValueError(f"the viewer does not know environment {env!r} (run {manifest.get('run_id')}): {exc}") from None
    models = manifest.get("models") or {}
    models_txt = ", ".join(f"{k}: {v}" for k, v in models.items()) if isinstance(models, dict) else esc(models)
    head = (f'<h2>{esc(manifest.get("run_id"))}</h2><p class="sl-meta">environment <b>{esc(env)}</b> · condition '
            f'<b>{esc(manifest.get("condition"))}</b> · models {esc(models_txt)} · seed {esc(manifest.get("seed"))} · '
            f'status {esc(manifest.get("status"))} · {esc(manifest.get("started_at"))} to '
            f'{esc(manifest.get("ended_at"))} · {len(events)} events</p>')
    return f'<div class="sl-view" data-env="{esc(env)}"><style>{CSS}</style>{head}{render(events, max_chars)}</div>'


# -- shared by the environments' renderers ----------------------------------------------
def time_key(unit: list[dict]) -> tuple[float, int]:
    """Order of a unit (one event, or a group shown as one block, e.g. a SCARCE
    contention) on the run's clock: its first event's ``t`` (events without a time, such
    as the run configuration, first), then its sequence number."""
    first = unit[0]
    t = first.get("t")
    return (t if isinstance(t, int | float) else float("-inf"), first.get("seq", 0))


def badge_cell(e: dict, researcher: str = "seen by no agent") -> str:
    """A table cell with the event's visibility badge (``data-visibility`` set;
    ``researcher`` as in :func:`visibility_badge`)."""
    cls, badge = visibility_badge(e, researcher)
    return f'<span class="{cls}" data-visibility="{esc(e.get("visibility"))}">{badge}</span>'


#: the badge words of an interview (researcher-only: no agent saw it, then or later)
INTERVIEW_SEEN_BY = "researcher only: seen by no agent, never shown to any agent later"


def interview_block(e: dict, max_chars: int = 1500) -> str:
    """One retrospective interview (``interview`` events, SovSim and SCARCE): its
    visibility badge, who answered (a model, or a scripted policy's rule: labelled so,
    never shown as a model's words), the self-assessment, the explanation and the view
    of the others, how many events its memory held, and its model calls; an answer
    that is missing or unusable says so (nothing is shown as said)."""
    q = e["payload"]
    cls, badge = visibility_badge(e, INTERVIEW_SEEN_BY)
    who = (f'scripted policy <code>{esc(q.get("model"))}</code> (its rule, written by scarce_lab; not a model)'
           if q.get("answered_by") == "scripted" else f'model <code>{esc(q.get("model"))}</code>')
    if q.get("missing"):
        body = '<span class="sl-bad">no answer (missing: no call got one); nothing is shown as said</span>'
    elif q.get("fallback_used") or not q.get("valid", True):
        body = '<span class="sl-bad">no usable answer (fallback: nothing is shown as said)</span>'
    else:
        body = (f'self-assessment <b>{esc(q.get("self_assessment") or "none")}</b>'
                f'<br>explanation: <span class="sl-text">{cut(q.get("explanation"), max_chars)}</span>'
                f'<br>view of the others: <span class="sl-text">{cut(q.get("view_of_others"), max_chars)}</span>')
    return (f'<div class="sl-msg sl-interview {cls}" data-kind="interview" data-visibility="{esc(e.get("visibility"))}">'
            f'{badge}<b>interview of {esc(e.get("agent"))}</b> · answered by {who} · from its own memory '
            f'({esc(q.get("memory_events"))} events it could see) · {esc(q.get("questions"))}<br>{body}'
            f'{decision_notes(e, max_chars) if not q.get("missing") else model_calls(e, max_chars)}</div>')


def decision_notes(e: dict, max_chars: int = 1500) -> str:
    """The decision's violation and fallback marks, then its model calls (:func:`model_calls`)."""
    q = e["payload"]
    bits = []
    if q.get("violation"):
        bits.append(f"violation: {q['violation']}")
    if q.get("fallback_used"):
        bits.append("fallback used")
    marks = f'<span class="sl-bad">{esc("; ".join(bits))}</span>' if bits else ""
    return marks + model_calls(e, max_chars)


def model_calls(e: dict, max_chars: int) -> str:
    """What the model saw and said for this decision: one collapsible row per call
    (``e["calls"]``, the records of the payload's ``call_ids``, set by the viewer's
    reader); empty for scripted decisions and files older than schema 4."""
    calls = e.get("calls") or []
    if not calls:
        return ""
    items = []
    for c in calls:
        cid = str(c.get("call_id"))
        msgs = c.get("messages") or []
        prompt = "\n\n".join(f"[{m.get('role')}] {m.get('content')}" for m in msgs if isinstance(m, dict))
        answer = c.get("raw_response")
        if answer is None and c.get("tool_calls"):
            answer = json.dumps(c["tool_calls"], default=str)
        items.append(f'<div class="sl-call" data-call-id="{esc(cid)}">call <code>{esc(cid)}</code>'
                     f' · {esc(c.get("model", ""))} · outcome <b>{esc(c.get("outcome"))}</b> · attempt '
                     f'{esc(c.get("attempt", ""))}{" · cached" if c.get("cache_hit") else ""}'
                     f'<pre class="sl-prompt">{cut(prompt, max_chars)}</pre>'
                     f'<pre class="sl-answer">{cut(answer, max_chars)}</pre></div>')
    n = len(calls)
    return (f'<details class="sl-calls"><summary>model call{"s" if n > 1 else ""} ({n}): what the model saw and '
            f'said</summary>{"".join(items)}</details>')
