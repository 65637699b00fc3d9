"""HTML rendering of one run's events (see :mod:`scarce_lab.viewer`): pure functions
from (manifest, events) to an HTML fragment with its own inline CSS; every text escaped."""

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


def _t(e: dict) -> str:
    t = e.get("t")
    return f'<span class="sl-t">t={t:g} s</span>' if isinstance(t, int | float) else ""


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _vis_badge(e: dict) -> tuple[str, str]:
    """(css class, badge html) of an event's visibility."""
    vis = e.get("visibility") or "public"
    if vis == "private":
        to = e.get("visible_to") or []
        who = f", visible to {', '.join(map(str, to))}" if to else ""
        return "sl-private", f'<span class="sl-badge">private{esc(who)}</span>'
    if vis == "researcher" and e.get("kind") == "ballot":
        return "sl-scheduler", '<span class="sl-badge">seen by the scheduler only</span>'
    if vis == "researcher":
        return "sl-scheduler", '<span class="sl-badge">seen by no agent</span>'
    return "sl-public", f'<span class="sl-badge">{esc(vis)}</span>'


def render_run(manifest: dict, events: list[dict], *, max_chars: int = 1500) -> str:
    """HTML fragment (with its CSS) of one run.

    The body comes from the environment's registered renderer
    (:class:`scarce_lab.environments.EnvironmentSpec` ``render``); the head is shared.

    Raises:
        ValueError: the run's environment is not registered (the names are listed).
    """
    from ..environments import UnknownEnvironmentError, get

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


# -- SCARCE -----------------------------------------------------------------------------
# Every event of a contention's four phases (declaration, public reasoning, private
# messages, ballots) and of what it decides (the schedule, the payments), including the
# events that say a worker stayed silent or revised its bid, belongs to the contention
# block; nothing of it is shown as raw JSON after the block.
_CONTENTION_KINDS = {"declaration", "reasoning", "private_message", "private_silence", "protocol_violation",
                     "bid_revision", "ballot", "schedule", "payment", "tactic_intent"}


def _time_key(unit: list[dict]) -> tuple[float, int]:
    """Order of a unit (one event, or a whole contention) on the subrun clock: its first
    event's ``t`` (events without a time, such as the run configuration, first), then its
    sequence number."""
    first = unit[0]
    t = first.get("t")
    return (t if isinstance(t, int | float) else float("-inf"), first.get("seq", 0))


def _scarce(events: list[dict], max_chars: int) -> str:
    """Per subrun, the events in time order, each contention one block.

    Events are grouped first (a contention with all its phase events), then the groups
    of one subrun are ordered by time: solvers work on separate clocks between two
    contentions, so sequence order alone shows times out of order."""
    setup: list[list[dict]] = []
    subruns: dict[int, list[list[dict]]] = {}
    open_contention: dict[int, list[dict]] = {}
    for e in events:
        kind, sr = e["kind"], e["payload"].get("subrun")
        if kind == "round_committed" or kind == "solver_action":
            continue  # bookkeeping; solver tool calls are too many (the commands run are shown)
        if kind == "run_config" or sr is None:
            setup.append([e])
            continue
        units = subruns.setdefault(int(sr), [])
        if kind == "contention_start":
            open_contention[int(sr)] = [e]
            units.append(open_contention[int(sr)])
        elif kind in _CONTENTION_KINDS and int(sr) in open_contention:
            open_contention[int(sr)].append(e)
        else:
            units.append([e])
    out = [_scarce_event(u[0], max_chars) for u in setup]
    number = 0
    for sr in sorted(subruns):
        out.append(f'<h3 class="sl-subrun" data-subrun="{esc(sr)}">Subrun {sr + 1}</h3>')
        for unit in sorted(subruns[sr], key=_time_key):
            if unit[0]["kind"] == "contention_start":
                number += 1
                out.append(_contention(unit, number, max_chars))
            else:
                out.append(_scarce_event(unit[0], max_chars))
    return "".join(x for x in out if x)


def _phase(name: str, title: str, body: str) -> str:
    return f'<div class="sl-phase" data-phase="{name}"><h4>{title}</h4>{body}</div>'


def _badge_cell(e: dict) -> str:
    cls, badge = _vis_badge(e)
    return f'<span class="{cls}" data-visibility="{esc(e.get("visibility"))}">{badge}</span>'


def _contention(evs: list[dict], number: int, max_chars: int) -> str:
    """One contention as a collapsible block: the queue, then its four phases
    (declarations, public reasoning, private messages, ballots) as tables, each row with
    who could see it, then the schedule and the payments."""
    start = evs[0]
    p = start["payload"]
    sched = next((e for e in evs if e["kind"] == "schedule"), None)
    order = ""
    if sched:
        allocs = sorted(sched["payload"].get("allocations", []), key=lambda a: a.get("position", 0))
        order = " · schedule: " + ", ".join(f"{a.get('position')}. {a.get('worker')}" for a in allocs)
    summary = (f"Contention {number} {_t(start)}· subrun {esc((p.get('subrun') or 0) + 1)} · participants "
               f"{esc(', '.join(p.get('participants', [])))}{esc(order)}")
    parts = []
    queue = p.get("queue") or []
    if queue:
        parts.append("<h4>Queue</h4>" + _table(["worker", "requested at (s)", "requested duration (s)"], [
            [esc(q.get("worker")), esc(q.get("request_time_s")), esc(q.get("requested_duration_s"))] for q in queue]))
    by_kind: dict[str, list[dict]] = {}
    for e in evs[1:]:
        by_kind.setdefault(e["kind"], []).append(e)
    if by_kind.get("declaration"):
        parts.append(_phase("declaration", "1 · Declarations (sealed, then public)", _table(
            ["time", "worker", "position wanted", "duration (s)", "bid (credits)", "seen by", "note"],
            [[_t(e), esc(e["agent"]), esc(e["payload"].get("desired_position")),
              esc(e["payload"].get("desired_duration_seconds")), esc(e["payload"].get("bid_price")), _badge_cell(e),
              _violation(e, max_chars)] for e in by_kind["declaration"]])))
    if by_kind.get("reasoning"):
        parts.append(_phase("reasoning", "2 · Public reasoning", _table(
            ["time", "worker", "seen by", "text"],
            [[_t(e), esc(e["agent"]), _badge_cell(e),
              f'<span class="sl-text">{cut(e["payload"].get("text"), max_chars)}</span> {_violation(e, max_chars)}']
             for e in by_kind["reasoning"]])))
    private = sorted(by_kind.get("private_message", []) + by_kind.get("private_silence", []),
                     key=lambda e: (e["payload"].get("private_round", 0), e.get("seq", 0)))
    if private:
        rows = []
        for e in private:
            q = e["payload"]
            if e["kind"] == "private_silence":
                who, text = esc(e["agent"]), "<em>no message</em>"
            else:
                who = f'{esc(q.get("sender", e["agent"]))} → {esc(q.get("recipient"))}'
                text = f'<span class="sl-text">{cut(q.get("text"), max_chars)}</span>'
            rows.append([esc(q.get("private_round")), who, _badge_cell(e), f"{text} {_violation(e, max_chars)}"])
        parts.append(_phase("private", "3 · Private messages", _table(["round", "from → to", "seen by", "text"], rows)))
    if by_kind.get("bid_revision"):
        parts.append(_phase("revision", "Bid revisions (revisable mechanism)", _table(
            ["time", "worker", "previous bid", "revised bid", "seen by"],
            [[_t(e), esc(e["agent"]), esc(e["payload"].get("previous")), esc(e["payload"].get("bid_price")),
              _badge_cell(e)] for e in by_kind["bid_revision"]])))
    if by_kind.get("ballot"):
        rows = []
        for e in by_kind["ballot"]:
            entries = "; ".join(f"{i}. {x.get('worker')}: {x.get('duration_seconds')} s at {x.get('price')} credits"
                                for i, x in enumerate(e["payload"].get("entries", []), 1))
            rows.append([_t(e), esc(e["agent"]), _badge_cell(e), f"{esc(entries)} {_violation(e, max_chars)}"])
        parts.append(_phase("ballots", "4 · Ballots", _table(["time", "voter", "seen by", "ranking"], rows)))
    if by_kind.get("tactic_intent"):
        parts.append(_phase("intent", "Intended tactics (the scripted policy's ground truth)", _table(
            ["worker", "of", "tactics", "seen by"],
            [[esc(e["agent"]), esc(e["payload"].get("of_kind")) + (
                f' (round {esc(e["payload"]["private_round"])})' if e["payload"].get("private_round") else ""),
              esc(", ".join(e["payload"].get("tactics") or [])), _badge_cell(e)] for e in by_kind["tactic_intent"]])))
    if by_kind.get("protocol_violation"):
        parts.append(_phase("violations", "Refused by the protocol", _table(
            ["time", "worker", "seen by", "reason"],
            [[_t(e), esc(e["agent"]), _badge_cell(e), cut(e["payload"].get("error"), max_chars)]
             for e in by_kind["protocol_violation"]])))
    if sched:
        q = sched["payload"]
        parts.append(_phase("schedule", f'Schedule (rule {esc(q.get("rule"))}, negotiation {esc(q.get("negotiation_s"))} s)',
                            _table(["position", "worker", "duration (s)", "price (credits)"],
                                   [[esc(a.get("position")), esc(a.get("worker")), esc(a.get("duration_s")),
                                     esc(a.get("price"))]
                                    for a in sorted(q.get("allocations", []), key=lambda a: a.get("position", 0))])))
    if by_kind.get("payment"):
        parts.append(_phase("payment", "Payments", _table(
            ["payer", "to", "requested", "paid", "balance after", "seen by"],
            [[esc(e["payload"].get("payer", e["agent"])), esc(e["payload"].get("sink")), esc(e["payload"].get("requested")),
              esc(e["payload"].get("amount")), esc(e["payload"].get("balance_after")), _badge_cell(e)]
             for e in by_kind["payment"]])))
    return f'<details class="sl-contention" data-contention="{number}"><summary>{summary}</summary>{"".join(parts)}</details>'


def _violation(e: dict, max_chars: int = 1500) -> str:
    """The decision's violation and fallback marks, then its model calls (:func:`_calls`)."""
    q = e["payload"]
    bits = []
    if q.get("violation"):
        bits.append(f"violation: {q['violation']}")
    if q.get("fallback_used"):
        bits.append("fallback used")
    marks = f'<span class="sl-bad">{esc("; ".join(bits))}</span>' if bits else ""
    return marks + _calls(e, max_chars)


def _calls(e: dict, max_chars: int) -> str:
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


def _scarce_event(e: dict, max_chars: int) -> str:
    q, kind, who = e["payload"], e["kind"], esc(e.get("agent"))
    if kind == "run_config":
        return ("<h4>Setup</h4>" + _table(["worker", "budget (credits)", "deadline (s)"],
                                          [[esc(w["worker"]), esc(w["budget"]), esc(w["deadline_s"])]
                                           for w in q.get("workers", [])])
                + f'<p class="sl-meta">scheduler {esc(q.get("scheduler"))} · bids {esc(q.get("mechanism"))} · memory '
                  f'{esc(q.get("memory"))}</p>')
    if kind == "subrun_start":
        return (f'<div class="sl-event">{_t(e)}<b>{who}</b> starts task <code>{esc(q.get("task_id"))}</code> · budget '
                f'{esc(q.get("budget"))} credits · deadline {esc(q.get("deadline_s"))} s</div>')
    if kind == "slot_request":
        return (f'<div class="sl-event">{_t(e)}<b>{who}</b> requests a slot of {esc(q.get("duration_s"))} s: '
                f'{esc(q.get("reason"))}</div>')
    if kind == "slot_start":
        return (f'<div class="sl-event sl-slot">{_t(e)}<b>slot</b> {who}: {esc(q.get("start_s"))}–{esc(q.get("end_s"))} s '
                f'(position {esc(q.get("position"))}, waited {esc(q.get("waited_s"))} s)</div>')
    if kind == "slot_end":
        return f'<div class="sl-event">{_t(e)}slot of {who} ends at {esc(q.get("end_s"))} s</div>'
    if kind == "execution":
        status = "refused" if q.get("refused") else ("timed out" if q.get("timed_out") else f"exit {q.get('exit_code')}")
        outp = "".join(f"<pre>{cut(q.get(s), max_chars)}</pre>" for s in ("stdout", "stderr") if q.get(s))
        return (f'<details class="sl-command"><summary>{_t(e)}{who} runs <code>{cut(q.get("command"), 200)}</code> '
                f'· {esc(status)} · {esc(q.get("cost_s"))} s</summary>{outp or "<em>no output</em>"}</details>')
    if kind == "memory_save":
        cls, badge = _vis_badge(e)
        return f'<div class="sl-msg {cls}">{badge}{_t(e)}<b>{who}</b> saves memory: {cut(q.get("text"), max_chars)}</div>'
    if kind == "submission":
        missed = "deadline missed" if q.get("deadline_missed") else "in time"
        return (f'<div class="sl-event sl-submission">{_t(e)}<b>{who}</b> submits <code>{esc(q.get("task_id"))}</code>: '
                f'score {esc(_num(q.get("score")))} ({esc(q.get("passed"))}/{esc(q.get("total"))} hidden tests) · {missed} '
                f'(deadline {esc(q.get("deadline_s"))} s) {_violation(e)}</div>')
    if kind == "subrun_end":
        bal = ", ".join(str(b["worker"]) + ": " + str(b["credits"]) for b in q.get("balances") or [])
        return (f'<div class="sl-event">{_t(e)}subrun ends · balances '
                f'{esc(bal)} · {esc(q.get("sink"))} holds '
                f'{esc(q.get("sink_balance"))} · money conserved: {esc(q.get("conserved"))}</div>')
    if kind == "tool_error":
        cls, badge = _vis_badge(e)
        return (f'<div class="sl-msg {cls}">{badge}{_t(e)}<b>{who}</b>: tool <code>{esc(q.get("tool"))}</code> '
                f'failed: {cut(q.get("error"), max_chars)}</div>')
    return (f'<div class="sl-event">{_t(e)}{esc(kind)} {who}: '
            f'<code>{cut(json.dumps(q, default=str), 300)}</code></div>')


# -- SovSim -----------------------------------------------------------------------------
def _pool_svg(rounds: list[tuple[int, float]], threshold: float | None, top: float) -> str:
    if not rounds:
        return ""
    w, h, pad = 420, 120, 24
    n = max(r for r, _ in rounds)
    sx = lambda r: pad + (w - 2 * pad) * ((r - 1) / max(1, n - 1))  # noqa: E731
    sy = lambda v: h - pad - (h - 2 * pad) * (v / top if top else 0)  # noqa: E731
    pts = " ".join(f"{sx(r):.1f},{sy(v):.1f}" for r, v in rounds)
    thr = (f'<line x1="{pad}" x2="{w - pad}" y1="{sy(threshold):.1f}" y2="{sy(threshold):.1f}" stroke="#cb181d" '
           f'stroke-dasharray="4 3"/><text x="{w - pad}" y="{sy(threshold) - 3:.1f}" font-size="10" text-anchor="end" '
           f'fill="#cb181d">collapse threshold {threshold:g}</text>') if threshold is not None else ""
    return (f'<svg class="sl-pool" width="{w}" height="{h}" role="img" aria-label="pool per round">'
            f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>{thr}'
            f'<polyline fill="none" stroke="#08519c" stroke-width="2" points="{pts}"/>'
            f'<text x="{pad}" y="12" font-size="10">pool at the start of each round (units, 0 to {top:g})</text>'
            f'<text x="{w / 2:.0f}" y="{h - 6}" font-size="10" text-anchor="middle">round 1 to {n}</text></svg>')


def _sovsim(events: list[dict], max_chars: int) -> str:
    start = next((e for e in events if e["kind"] == "game_start"), None)
    leader = start["payload"].get("leader") if start else None
    roles = dict(zip(start["payload"].get("agents", []), start["payload"].get("roles", []), strict=False)) if start else {}
    cfg = start["payload"] if start else {}
    settles = {e["round"]: e for e in events if e["kind"] == "round"}
    ext: dict[int, list[dict]] = {}
    for e in events:
        if e["kind"] == "extraction":
            ext.setdefault(e["round"], []).append(e)
    threshold = cfg.get("collapse_threshold")
    pool = [(r, float(s["payload"].get("pool_before", 0))) for r, s in sorted(settles.items())]
    top = float(cfg.get("capacity") or max((v for _, v in pool), default=0) or 1)
    agents = ", ".join(f"{a} ({roles.get(a, '')})" for a in roles)
    lead = f" · leader {esc(leader)}" if leader else ""
    parts = [f'<p class="sl-meta">agents: {esc(agents)}{lead}</p>', _pool_svg(pool, threshold, top)]
    for r in sorted(settles):
        q = settles[r]["payload"]
        rows = []
        for e in sorted(ext.get(r, []), key=lambda e: str(e["agent"])):
            x = e["payload"]
            name = f'<span class="sl-leader">{esc(e["agent"])} (leader)</span>' if e["agent"] == leader else esc(e["agent"])
            rows.append([name, esc(roles.get(e["agent"], "")), esc(x.get("extraction")), esc(x.get("pool_seen")),
                         f'<span class="sl-text">{cut(x.get("reasoning"), max_chars)}</span> {_violation(e, max_chars)}'])
        announced = f" · announced {esc(q.get('announced_pool'))}" if q.get("announced_pool") is not None else ""
        state = '<b class="sl-bad">collapsed</b>' if q.get("collapsed") else f"next pool {esc(q.get('next_pool'))}"
        parts.append(f'<details class="sl-round" data-round="{esc(r)}"><summary>Round {esc(r)} · pool '
                     f'{esc(q.get("pool_before"))}{announced} · extracted {esc(sum(q.get("extractions") or []))} · '
                     f'remaining {esc(q.get("remaining"))} · {state}</summary>'
                     + _table(["agent", "role", "extraction (units)", "pool seen", "reasoning"], rows) + "</details>")
    end = next((e for e in events if e["kind"] == "game_end"), None)
    if end:
        q = end["payload"]
        parts.append(f'<p class="sl-event">Game over after {esc(q.get("rounds_played"))} rounds · collapsed '
                     f'{esc(q.get("collapsed"))} · total payoffs {esc(q.get("total_payoffs"))}</p>')
    return "".join(parts)


# -- Economy of Minds --------------------------------------------------------------------
def _economy(events: list[dict], max_chars: int) -> str:
    parts = []
    episodes: list[list[dict]] = []
    cur: list[dict] = []
    for e in events:
        if e["kind"] in ("birth", "round_committed"):
            continue
        cur.append(e)
        if e["kind"] == "population":
            episodes.append(cur)
            cur = []
    if cur:
        episodes.append(cur)
    births = [e for e in events if e["kind"] == "birth"]
    if births:
        parts.append("<h4>Agents born</h4>" + _table(["agent", "origin", "parent", "bid", "endowment", "policy"], [
            [esc(b.get("agent")), esc(b["payload"].get("origin")), esc(b["payload"].get("parent")),
             esc(b["payload"].get("bid")), esc(b["payload"].get("endowment")),
             cut((b["payload"].get("genome") or {}).get("text") or (b["payload"].get("genome") or {}).get("instruction"),
                 200)] for b in births[:200]]))
    for evs in episodes:
        ends = [e for e in evs if e["kind"] == "episode_end"]
        auctions = [e for e in evs if e["kind"] == "auction"]
        pop = next((e for e in evs if e["kind"] == "population"), None)
        phase = esc(evs[0].get("phase"))
        solved = sum(1 for e in ends if e["payload"].get("solved"))
        summary = (f"{phase} · episodes {esc(', '.join(str(e['payload'].get('episode')) for e in ends[:6]))}"
                   f"{' …' if len(ends) > 6 else ''} · solved {solved}/{len(ends)}")
        body = []
        if auctions:
            body.append("<h4>Winning bids</h4>" + _table(["step", "kind", "winner", "price", "bids"], [
                [esc(a["payload"].get("step")), esc(a["payload"].get("step_kind")), esc(a["payload"].get("winner")),
                 esc(a["payload"].get("price")),
                 esc(", ".join(str(b["agent"]) + ": " + str(b["bid"]) for b in a["payload"].get("bids") or []))]
                for a in auctions[:400]]))
        else:
            rows = []
            for e in evs:
                if e["kind"] == "episode_agents":
                    for x in e["payload"].get("agents") or []:
                        wins = ", ".join(str(w["step_kind"]) + ": " + str(w["wins"]) for w in x.get("wins") or [])
                        rows.append([esc(e.get("round")), esc(x["agent"]), esc(wins), esc(x.get("paid")),
                                     esc(x.get("received")), esc(x.get("reward"))])
            if rows:
                body.append("<h4>Winners (wins per kind of step) and payments</h4>" + _table(
                    ["episode", "agent", "wins", "paid", "received", "reward"], rows[:400]))
        if pop:
            q = pop["payload"]
            body.append("<h4>Wealth after this block</h4>" + _table(["agent", "wealth (credits)", "bid"], [
                [esc(a["agent"]), esc(a["wealth"]), esc(a["bid"])]
                for a in sorted(q.get("agents") or [], key=lambda a: a["agent"])]))
        parts.append(f'<details class="sl-episode"><summary>{summary}</summary>{"".join(body)}</details>')
    return "".join(parts)


def _num(v, digits: int = 3):
    """A float shown with ``digits`` decimals (scores: 0.129, not 0.12903225806451613)."""
    return f"{v:.{digits}f}" if isinstance(v, float) else v
