"""The viewer's body of an Economy of Minds run (:func:`render`, the spec's ``render``): the
agents born, then one block per episode group. Shared helpers: :mod:`.render`."""

from __future__ import annotations

from ...viewer.render import cut, esc, table


def render(events: list[dict], max_chars: int) -> str:
    """The agents born (first 200), then per block of episodes (ended by a population
    snapshot) the winning bids or the winners and payments, and the wealth after it."""
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
        parts.append("<h4>Agents born</h4>" + table(["agent", "origin", "parent", "bid", "endowment", "policy"], [
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
            body.append("<h4>Winning bids</h4>" + table(["step", "kind", "winner", "price", "bids"], [
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
                body.append("<h4>Winners (wins per kind of step) and payments</h4>" + table(
                    ["episode", "agent", "wins", "paid", "received", "reward"], rows[:400]))
        if pop:
            q = pop["payload"]
            body.append("<h4>Wealth after this block</h4>" + table(["agent", "wealth (credits)", "bid"], [
                [esc(a["agent"]), esc(a["wealth"]), esc(a["bid"])]
                for a in sorted(q.get("agents") or [], key=lambda a: a["agent"])]))
        parts.append(f'<details class="sl-episode"><summary>{summary}</summary>{"".join(body)}</details>')
    return "".join(parts)
