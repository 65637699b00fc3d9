"""The viewer's body of a SCARCE run (:func:`render`, the spec's ``render``): per subrun, in
time order, each contention one collapsible block with its phases, and the events between
contentions (slots, commands, memory saves, submissions). Shared helpers: :mod:`.render`."""

from __future__ import annotations

import json

from ...viewer.render import (
    badge_cell,
    cut,
    decision_notes,
    esc,
    interview_block,
    table,
    time_key,
    time_tag,
    visibility_badge,
)

# Every event of a contention's four phases (declaration, public reasoning, private
# messages, ballots) and of what it decides (the schedule, the payments), including the
# events that say a worker stayed silent or revised its bid, belongs to the contention
# block; nothing of it is shown as raw JSON after the block.
_CONTENTION_KINDS = {"declaration", "reasoning", "private_message", "private_silence", "protocol_violation",
                     "bid_revision", "ballot", "schedule", "payment", "tactic_intent"}
#: The institutions' kinds (sanctions, reputation, contracts) shown in a contention's
#: block; a breach, vote or sanction of a slot overrun happens between contentions and
#: is shown where it happens.
_INSTITUTION_KINDS = ("reputation", "promise", "contract_offer", "contract_answer", "contract_settlement",
                      "promise_judged", "breach", "fine_vote", "sanction", "fine_payment")
#: Who sees a ballot (visibility ``researcher``): the scheduler, no worker.
_BALLOT_READER = "seen by the scheduler only"


def render(events: list[dict], max_chars: int) -> str:
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
        elif (kind in _CONTENTION_KINDS or (kind in _INSTITUTION_KINDS and e["payload"].get("breach_kind") != "overrun")) \
                and int(sr) in open_contention:
            open_contention[int(sr)].append(e)
        else:
            units.append([e])
    out = [_scarce_event(u[0], max_chars) for u in setup]
    number = 0
    for sr in sorted(subruns):
        out.append(f'<h3 class="sl-subrun" data-subrun="{esc(sr)}">Subrun {sr + 1}</h3>')
        for unit in sorted(subruns[sr], key=time_key):
            if unit[0]["kind"] == "contention_start":
                number += 1
                out.append(_contention(unit, number, max_chars))
            else:
                out.append(_scarce_event(unit[0], max_chars))
    return "".join(x for x in out if x)


def _phase(name: str, title: str, body: str) -> str:
    return f'<div class="sl-phase" data-phase="{name}"><h4>{title}</h4>{body}</div>'


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
    summary = (f"Contention {number} {time_tag(start)}· subrun {esc((p.get('subrun') or 0) + 1)} · participants "
               f"{esc(', '.join(p.get('participants', [])))}{esc(order)}")
    parts = []
    queue = p.get("queue") or []
    if queue:
        parts.append("<h4>Queue</h4>" + table(["worker", "requested at (s)", "requested duration (s)"], [
            [esc(q.get("worker")), esc(q.get("request_time_s")), esc(q.get("requested_duration_s"))] for q in queue]))
    by_kind: dict[str, list[dict]] = {}
    for e in evs[1:]:
        by_kind.setdefault(e["kind"], []).append(e)
    if by_kind.get("declaration"):
        parts.append(_phase("declaration", "1 · Declarations (sealed, then public)", table(
            ["time", "worker", "position wanted", "duration (s)", "bid (credits)", "seen by", "note"],
            [[time_tag(e), esc(e["agent"]), esc(e["payload"].get("desired_position")),
              esc(e["payload"].get("desired_duration_seconds")), esc(e["payload"].get("bid_price")), badge_cell(e),
              decision_notes(e, max_chars)] for e in by_kind["declaration"]])))
    if by_kind.get("reasoning"):
        parts.append(_phase("reasoning", "2 · Public reasoning", table(
            ["time", "worker", "seen by", "text"],
            [[time_tag(e), esc(e["agent"]), badge_cell(e),
              f'<span class="sl-text">{cut(e["payload"].get("text"), max_chars)}</span> {decision_notes(e, max_chars)}']
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
            rows.append([esc(q.get("private_round")), who, badge_cell(e), f"{text} {decision_notes(e, max_chars)}"])
        parts.append(_phase("private", "3 · Private messages", table(["round", "from → to", "seen by", "text"], rows)))
    if by_kind.get("bid_revision"):
        parts.append(_phase("revision", "Bid revisions (revisable mechanism)", table(
            ["time", "worker", "previous bid", "revised bid", "seen by"],
            [[time_tag(e), esc(e["agent"]), esc(e["payload"].get("previous")), esc(e["payload"].get("bid_price")),
              badge_cell(e)] for e in by_kind["bid_revision"]])))
    if by_kind.get("ballot"):
        rows = []
        for e in by_kind["ballot"]:
            entries = "; ".join(f"{i}. {x.get('worker')}: {x.get('duration_seconds')} s at {x.get('price')} credits"
                                for i, x in enumerate(e["payload"].get("entries", []), 1))
            rows.append([time_tag(e), esc(e["agent"]), badge_cell(e, _BALLOT_READER),
                         f"{esc(entries)} {decision_notes(e, max_chars)}"])
        parts.append(_phase("ballots", "4 · Ballots", table(["time", "voter", "seen by", "ranking"], rows)))
    if by_kind.get("tactic_intent"):
        parts.append(_phase("intent", "Intended tactics (the scripted policy's ground truth)", table(
            ["worker", "of", "tactics", "seen by"],
            [[esc(e["agent"]), esc(e["payload"].get("of_kind")) + (
                f' (round {esc(e["payload"]["private_round"])})' if e["payload"].get("private_round") else ""),
              esc(", ".join(e["payload"].get("tactics") or [])), badge_cell(e)] for e in by_kind["tactic_intent"]])))
    if by_kind.get("protocol_violation"):
        parts.append(_phase("violations", "Refused by the protocol", table(
            ["time", "worker", "seen by", "reason"],
            [[time_tag(e), esc(e["agent"]), badge_cell(e), cut(e["payload"].get("error"), max_chars)]
             for e in by_kind["protocol_violation"]])))
    inst = [e for e in evs[1:] if e["kind"] in _INSTITUTION_KINDS]
    if inst:
        parts.append(_phase("institutions", "Institutions (sanctions, reputation, contracts)", table(
            ["time", "kind", "worker", "seen by", "what"],
            [[time_tag(e), esc(e["kind"].replace("_", " ")), esc(e.get("agent") or ""), badge_cell(e),
              f"{esc(_institution_text(e))} {decision_notes(e, max_chars)}"] for e in inst])))
    if sched:
        q = sched["payload"]
        parts.append(_phase("schedule", f'Schedule (rule {esc(q.get("rule"))}, negotiation {esc(q.get("negotiation_s"))} s)',
                            table(["position", "worker", "duration (s)", "price (credits)"],
                                   [[esc(a.get("position")), esc(a.get("worker")), esc(a.get("duration_s")),
                                     esc(a.get("price"))]
                                    for a in sorted(q.get("allocations", []), key=lambda a: a.get("position", 0))])))
    if by_kind.get("payment"):
        parts.append(_phase("payment", "Payments", table(
            ["payer", "to", "requested", "paid", "balance after", "seen by"],
            [[esc(e["payload"].get("payer", e["agent"])), esc(e["payload"].get("sink")), esc(e["payload"].get("requested")),
              esc(e["payload"].get("amount")), esc(e["payload"].get("balance_after")), badge_cell(e)]
             for e in by_kind["payment"]])))
    return f'<details class="sl-contention" data-contention="{number}"><summary>{summary}</summary>{"".join(parts)}</details>'


def _scarce_event(e: dict, max_chars: int) -> str:
    q, kind, who = e["payload"], e["kind"], esc(e.get("agent"))
    if kind == "run_config":
        return ("<h4>Setup</h4>" + table(["worker", "budget (credits)", "deadline (s)"],
                                          [[esc(w["worker"]), esc(w["budget"]), esc(w["deadline_s"])]
                                           for w in q.get("workers", [])])
                + f'<p class="sl-meta">scheduler {esc(q.get("scheduler"))} · bids {esc(q.get("mechanism"))} · memory '
                  f'{esc(q.get("memory"))}</p>')
    if kind == "subrun_start":
        return (f'<div class="sl-event">{time_tag(e)}<b>{who}</b> starts task <code>{esc(q.get("task_id"))}</code> · budget '
                f'{esc(q.get("budget"))} credits · deadline {esc(q.get("deadline_s"))} s</div>')
    if kind == "slot_request":
        return (f'<div class="sl-event">{time_tag(e)}<b>{who}</b> requests a slot of {esc(q.get("duration_s"))} s: '
                f'{esc(q.get("reason"))}</div>')
    if kind == "slot_start":
        return (f'<div class="sl-event sl-slot">{time_tag(e)}<b>slot</b> {who}: {esc(q.get("start_s"))}–{esc(q.get("end_s"))} s '
                f'(position {esc(q.get("position"))}, waited {esc(q.get("waited_s"))} s)</div>')
    if kind == "slot_end":
        return f'<div class="sl-event">{time_tag(e)}slot of {who} ends at {esc(q.get("end_s"))} s</div>'
    if kind == "execution":
        status = "refused" if q.get("refused") else ("timed out" if q.get("timed_out") else f"exit {q.get('exit_code')}")
        outp = "".join(f"<pre>{cut(q.get(s), max_chars)}</pre>" for s in ("stdout", "stderr") if q.get(s))
        return (f'<details class="sl-command"><summary>{time_tag(e)}{who} runs <code>{cut(q.get("command"), 200)}</code> '
                f'· {esc(status)} · {esc(q.get("cost_s"))} s</summary>{outp or "<em>no output</em>"}</details>')
    if kind == "memory_save":
        cls, badge = visibility_badge(e)
        return f'<div class="sl-msg {cls}">{badge}{time_tag(e)}<b>{who}</b> saves memory: {cut(q.get("text"), max_chars)}</div>'
    if kind == "submission":
        missed = "deadline missed" if q.get("deadline_missed") else "in time"
        return (f'<div class="sl-event sl-submission">{time_tag(e)}<b>{who}</b> submits <code>{esc(q.get("task_id"))}</code>: '
                f'score {esc(_num(q.get("score")))} ({esc(q.get("passed"))}/{esc(q.get("total"))} hidden tests) · {missed} '
                f'(deadline {esc(q.get("deadline_s"))} s) {decision_notes(e)}</div>')
    if kind == "subrun_end":
        bal = ", ".join(str(b["worker"]) + ": " + str(b["credits"]) for b in q.get("balances") or [])
        return (f'<div class="sl-event">{time_tag(e)}subrun ends · balances '
                f'{esc(bal)} · {esc(q.get("sink"))} holds '
                f'{esc(q.get("sink_balance"))} · money conserved: {esc(q.get("conserved"))}</div>')
    if kind in ("agent_joined", "agent_left"):
        what = "joins the run (a newcomer: no memory of earlier subruns)" if kind == "agent_joined" \
            else "leaves the run after this subrun"
        return f'<div class="sl-event">{time_tag(e)}<b>{who}</b> {what}</div>'
    if kind == "interview":
        return interview_block(e, max_chars)
    if kind in _INSTITUTION_KINDS:
        cls, badge = visibility_badge(e)
        return (f'<div class="sl-msg {cls}">{badge}{time_tag(e)}<b>{esc(kind.replace("_", " "))}</b> {who}: '
                f'{esc(_institution_text(e))} {decision_notes(e)}</div>')
    if kind == "tool_error":
        cls, badge = visibility_badge(e)
        return (f'<div class="sl-msg {cls}">{badge}{time_tag(e)}<b>{who}</b>: tool <code>{esc(q.get("tool"))}</code> '
                f'failed: {cut(q.get("error"), max_chars)}</div>')
    return (f'<div class="sl-event">{time_tag(e)}{esc(kind)} {who}: '
            f'<code>{cut(json.dumps(q, default=str), 300)}</code></div>')



def _institution_text(e: dict) -> str:
    """One line saying what an institution event records (plain text; escaped by the caller)."""
    q, kind = e["payload"], e["kind"]
    if kind == "reputation":
        return "; ".join(f"{r['worker']} {r['score']} (kept {r['kept']}, broken {r['broken']}, fines "
                         f"{r['fined']})" for r in q.get("workers") or [])
    if kind == "promise":
        return f"promises to rank itself {q.get('min_own_rank')} or later on its ballot"
    if kind == "promise_judged":
        return f"{'kept' if q.get('kept') else 'BROKE'} its promise ({q.get('min_own_rank')}; ranked itself {q.get('own_rank')})"
    if kind == "breach":
        return f"{q.get('breach_kind')}: {q.get('detail')}; harmed {', '.join(q.get('harmed') or []) or 'nobody'}"
    if kind == "fine_vote":
        return f"votes {'to fine' if q.get('fine') else 'not to fine'} {q.get('offender')}"
    if kind == "sanction":
        votes = f" (votes {q.get('votes_yes')} yes / {q.get('votes_no')} no)" if q.get("mode") == "vote" else ""
        return f"fined (nominal {q.get('fine')} credits){votes}" if q.get("passed") else f"not fined{votes}"
    if kind == "fine_payment":
        paid = ", ".join(f"{t['amount']} to {t['payee']}" for t in q.get("transfers") or [])
        return f"levied {q.get('amount')} credits{': ' + paid if paid else ''}"
    if kind == "contract_offer":
        return f"{q.get('payer')} offers {q.get('payee')} {q.get('amount')} credits if {q.get('first')} before {q.get('second')}"
    if kind == "contract_answer":
        return f"{q.get('payee')} {'accepts' if q.get('accepted') else 'declines'}" + (
            " (signed: escrowed)" if q.get("signed") else (" (void)" if q.get("accepted") else ""))
    if kind == "contract_settlement":
        return f"{q.get('amount')} credits {'paid to' if q.get('held') else 'refunded to'} {q.get('paid_to')}"
    return ""


def _num(v, digits: int = 3):
    """A float shown with ``digits`` decimals (scores: 0.129, not 0.12903225806451613)."""
    return f"{v:.{digits}f}" if isinstance(v, float) else v
