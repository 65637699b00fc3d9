"""The viewer's body of a SovSim game (:func:`render`, the spec's ``render``): the pool per
round as an inline SVG line, then one block per round (its discussion first, when the game
had talk: each message with who could see it). Shared helpers: :mod:`.render`."""

from __future__ import annotations

from ...viewer.render import badge_cell, cut, decision_notes, esc, interview_block, table


def _pool_svg(rounds: list[tuple[int, float]], threshold: float | None, top: float) -> str:
    """An inline SVG line of the pool at the start of each ``(round, pool)``, with the
    collapse threshold dashed, and a dot per round (a game that collapsed in round 1 has
    one point, which a line alone does not draw); each dot's title gives its value."""
    if not rounds:
        return ""
    w, h, pad = 420, 120, 24
    n = max(r for r, _ in rounds)
    sx = lambda r: pad + (w - 2 * pad) * ((r - 1) / max(1, n - 1))  # noqa: E731
    sy = lambda v: h - pad - (h - 2 * pad) * (v / top if top else 0)  # noqa: E731
    pts = " ".join(f"{sx(r):.1f},{sy(v):.1f}" for r, v in rounds)
    dots = "".join(f'<circle class="sl-pool-point" cx="{sx(r):.1f}" cy="{sy(v):.1f}" r="3" fill="#08519c">'
                   f"<title>round {r}: pool {v:g}</title></circle>" for r, v in rounds)
    thr = (f'<line x1="{pad}" x2="{w - pad}" y1="{sy(threshold):.1f}" y2="{sy(threshold):.1f}" stroke="#cb181d" '
           f'stroke-dasharray="4 3"/><text x="{w - pad}" y="{sy(threshold) - 3:.1f}" font-size="10" text-anchor="end" '
           f'fill="#cb181d">collapse threshold {threshold:g}</text>') if threshold is not None else ""
    return (f'<svg class="sl-pool" width="{w}" height="{h}" role="img" aria-label="pool per round">'
            f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>{thr}'
            f'<polyline fill="none" stroke="#08519c" stroke-width="2" points="{pts}"/>{dots}'
            f'<text x="{pad}" y="12" font-size="10">pool at the start of each round (units, 0 to {top:g})</text>'
            f'<text x="{w / 2:.0f}" y="{h - 6}" font-size="10" text-anchor="middle">round 1 to {n}</text></svg>')


def _membership(e: dict) -> str:
    """One line for a join or a leave (public events of a game with a newcomer)."""
    q = e["payload"]
    if e["kind"] == "agent_joined":
        tail = f", replacing {esc(q['replaces'])}" if q.get("replaces") else " (an extra agent)"
        return f'<p class="sl-event">{esc(e["agent"])} joined as {esc(q.get("role"))}{tail}</p>'
    return f'<p class="sl-event">{esc(e["agent"])} left (replaced by {esc(q.get("replaced_by"))})</p>'


def _institution(e: dict) -> str:
    """One line for an institution's public outcome (election, quota, sanctions)."""
    q = e["payload"]
    if e["kind"] == "election":
        tally = ", ".join(f"{esc(c)} {esc(k)}" for c, k in zip(q.get("candidates", []), q.get("votes", []), strict=False))
        moved = "the seat moved" if q.get("moved") else "the incumbent stays"
        return (f'<p class="sl-event sl-institution">Election: {tally} · {esc(q.get("elected"))} leads '
                f'({moved})</p>')
    if e["kind"] == "quota":
        return (f'<p class="sl-event sl-institution">Quota vote: proposals {esc(q.get("proposals"))} · '
                f'quota {esc(q.get("quota"))} ({esc(q.get("scope"))})</p>')
    rows = ", ".join(f"{esc(a)} received {esc(r)}, spent {esc(s)}" for a, r, s in
                     zip(q.get("agents", []), q.get("received", []), q.get("spent", []), strict=False))
    return f'<p class="sl-event sl-institution">Sanctions: {rows} · net {esc(q.get("net"))}</p>'


def _talk(talk: list[dict], max_chars: int) -> str:
    """The round's discussion as a table: turn, speaker, to whom, who could see it (the
    event's visibility badge: public, or private with its visible_to), the text."""
    if not talk:
        return ""
    rows = []
    for e in talk:
        q = e["payload"]
        to = ", ".join(q.get("recipients") or []) or ("everyone" if q.get("text") else "-")
        text = (f'<span class="sl-text">{cut(q.get("text"), max_chars)}</span>' if q.get("text")
                else "<em>silent</em>")
        rows.append([esc(q.get("turn")), esc(e["agent"]), esc(to), badge_cell(e),
                     f"{text} {decision_notes(e, max_chars)}"])
    return ('<div class="sl-talk" data-phase="talk"><p>Discussion</p>'
            + table(["turn", "speaker", "to", "seen by", "message"], rows) + "</div>")


def render(events: list[dict], max_chars: int) -> str:
    """The game's agents and leader, the pool chart, one collapsible block per round (each
    agent's extraction, the pool it saw, its reasoning and model calls), then the end."""
    start = next((e for e in events if e["kind"] == "game_start"), None)
    leader = start["payload"].get("leader") if start else None
    roles = dict(zip(start["payload"].get("agents", []), start["payload"].get("roles", []), strict=False)) if start else {}
    cfg = start["payload"] if start else {}
    settles = {e["round"]: e for e in events if e["kind"] == "round"}
    # by round: extractions, talk, and a newcomer's agent_joined / agent_left (by the round they open)
    ext, talk, joins, inst = {}, {}, {}, {}
    into = {"extraction": ext, "talk": talk, "agent_joined": joins, "agent_left": joins,
            "election": inst, "quota": inst, "sanctions": inst}
    for e in events:
        if e["kind"] in into:
            into[e["kind"]].setdefault(e["round"], []).append(e)
        if e["kind"] == "agent_joined":
            roles.setdefault(e["agent"], e["payload"].get("role", ""))

    threshold = cfg.get("collapse_threshold")
    pool = [(r, float(s["payload"].get("pool_before", 0))) for r, s in sorted(settles.items())]
    top = float(cfg.get("capacity") or max((v for _, v in pool), default=0) or 1)
    agents = ", ".join(f"{a} ({roles.get(a, '')})" for a in roles)
    lead = f" · leader {esc(leader)}" if leader else ""
    parts = [f'<p class="sl-meta">agents: {esc(agents)}{lead}</p>', _pool_svg(pool, threshold, top)]
    for r in sorted(settles):
        q = settles[r]["payload"]
        if leader is not None and q.get("agents"):
            leader = q["agents"][-1]  # the leader is the last agent of its round (a newcomer may take the seat)
        for e in inst.get(r, []):  # an election opening the round sets the roles from then on
            if e["kind"] == "election":
                roles.update(zip(e["payload"].get("agents", []), e["payload"].get("roles", []), strict=False))
        rows = []
        for e in sorted(ext.get(r, []), key=lambda e: str(e["agent"])):
            x = e["payload"]
            name = f'<span class="sl-leader">{esc(e["agent"])} (leader)</span>' if e["agent"] == leader else esc(e["agent"])
            rows.append([name, esc(roles.get(e["agent"], "")), esc(x.get("extraction")), esc(x.get("pool_seen")),
                         f'<span class="sl-text">{cut(x.get("reasoning"), max_chars)}</span> {decision_notes(e, max_chars)}'])
        announced = f" · announced {esc(q.get('announced_pool'))}" if q.get("announced_pool") is not None else ""
        state = '<b class="sl-bad">collapsed</b>' if q.get("collapsed") else f"next pool {esc(q.get('next_pool'))}"
        parts.append(f'<details class="sl-round" data-round="{esc(r)}"><summary>Round {esc(r)} · pool '
                     f'{esc(q.get("pool_before"))}{announced} · extracted {esc(sum(q.get("extractions") or []))} · '
                     f'remaining {esc(q.get("remaining"))} · {state}</summary>'
                     + "".join(_membership(e) for e in joins.get(r, []))
                     + _talk(sorted(talk.get(r, []), key=lambda e: e.get("seq", 0)), max_chars)
                     + table(["agent", "role", "extraction (units)", "pool seen", "reasoning"], rows)
                     + "".join(_institution(e) for e in inst.get(r, [])) + "</details>")
    end = next((e for e in events if e["kind"] == "game_end"), None)
    if end:
        q = end["payload"]
        parts.append(f'<p class="sl-event">Game over after {esc(q.get("rounds_played"))} rounds · collapsed '
                     f'{esc(q.get("collapsed"))} · total payoffs {esc(q.get("total_payoffs"))}</p>')
    interviews = [interview_block(e, max_chars) for e in events if e["kind"] == "interview"]
    if interviews:
        parts.append('<h3 class="sl-interviews">Retrospective interviews (researcher only)</h3>' + "".join(interviews))
    return "".join(parts)
