"""Scripted SCARCE agents with real strategies: negotiators that manage a budget, react
to their deadline, return favours and form alliances, and a solver whose progress is
stochastic and needs several slots.

They exist so that scripted data (no model at all) exercises every SCARCE table with
effects: budgets that fall below two thirds and one third within a subrun, deadlines
that bind, slot requests that grow when memory carries past failures, private
messages that get answers. They are policies, not models: their texts are templates
and their numbers follow the rules below.

Negotiators (``scripted/<policy>``; :data:`STRATEGIC_NEGOTIATORS`), one feature or all:

- ``spend-down`` (budget-aware): bids ``ceil(0.35 x balance)`` in every contention, so a
  subrun's budget is spent down geometrically (about 42 % left after two contentions,
  27 % after three); other policies bid ``ceil(0.1 x balance)``.
- ``urgency`` (deadline-aware): urgency ``u = clip(1 - remaining / horizon, 0, 1)`` with
  ``horizon = 8 x`` its requested slot duration (seconds); the bid is multiplied by
  ``1 + 2u`` and, when ``u >= 0.6``, it asks for position 1 and says why.
- ``reciprocal``: remembers, from the public history its memory horizon shows, who
  waited behind it and whom it waited behind in the most recent contention they shared.
  It offers to rank first a participant it owes ("you waited behind me in #k"), or asks
  one that owes it to return the favour; a reciprocal recipient answers in the next
  private round and keeps its word in its ballot.
- ``coalition``: proposes an alliance to a participant it has met, i.e. one that shares a
  contention of the visible history with it, the most recent first ("rank me first and
  you second; next time we swap"); with nothing in its history it proposes nothing. A
  coalition recipient accepts unless it is urgent. Allies rank each other first and
  second. Loyalty: if the history shows the two held the first two places of an earlier
  contention, the one that was second is offered first place.
- ``strategic``: all four.

What every policy does besides: declares its request-time position (position 1 when
urgent), its requested duration and its bid; ranks itself first in its ballot, then the
others by public bid (highest first), ties by request time, after moving a partner it
owes or is allied with to first place (itself second); ballot prices are the public
bids. Under revisable bids it raises its bid to one credit above the highest other bid
when urgent and lowers it to one credit above the second highest bid when it leads by
more than that (never above its balance).

They hold no state of their own between calls: everything comes from the view, so
what a negotiator "remembers" is exactly what the memory horizon shows it.

Solver (``scripted/skilled[:<skill>]``; :class:`SkilledScriptedSolver`): reads the
documentation (and ``examples.json`` 0-3 times, drawn from its seed, so requests arrive
at different times), runs the original program on examples in a first slot, then makes
*attempts*: each writes a candidate program, builds it and runs two examples
(one slot can hold several attempts); an attempt finds the missing insight with
probability ``skill`` (default 0.5), and ``need`` insights (1-3, drawn per task from
the seed) are needed before it writes the working program (the task's reference
solution, an oracle for what a skilled agent would write) and checks it. Until then
its candidate is a placeholder that echoes its input (scored by the hidden tests like
any program). After a failed attempt it saves a note (free); each slot it asks for
``base x (1 + 0.25 x failed-attempt notes it can see)`` seconds (capped), so under
``cross`` memory its requests grow from subrun to subrun. It submits once the working
program is checked, or as soon as its deadline leaves no room for another attempt.
"""

from __future__ import annotations

import math
import random
from typing import Any

from scarce_lab.agents.decided import Decided

from ..world.observations import NegotiationView, SolverObservation
from .negotiators import ScriptedNegotiatorPolicy, ranked_ballot
from .solvers import (
    PLACEHOLDER_BUILD,
    ScriptedSolverPolicy,
    SolverAction,
    _example_command,
    opening_action,
    reference_files,
    task_examples,
)

#: policy -> the features it uses (see the module docstring).
STRATEGIC_NEGOTIATORS: dict[str, frozenset[str]] = {
    "spend-down": frozenset({"spend"}),
    "urgency": frozenset({"urgency"}),
    "reciprocal": frozenset({"reciprocity"}),
    "coalition": frozenset({"coalition"}),
    "strategic": frozenset({"spend", "urgency", "reciprocity", "coalition"}),
}
SPEND_SHARE = 0.35  #: share of the balance a spend-down negotiator bids (before urgency)
BASE_SHARE = 0.1  #: share of the balance the other policies bid (before urgency)
URGENT = 0.6  #: urgency from which a worker asks for position 1
HORIZON_SLOTS = 8  #: urgency horizon, in requested slot durations

# message templates: the recipient parses the bracketed tag
_OFFER_RETURN = "[return] You waited behind me in contention #{k}; I will rank you first this time."
_ASK_RETURN = "[ask-return] I waited behind you in contention #{k}; will you rank me first this time?"
_OK_RETURN = "[ok-return] Agreed: you waited for me in #{k}, so I rank you first now."
_NO_RETURN = "[no-return] Sorry, my deadline is too close to give way this time."
_ALLY = "[ally] Alliance offer: rank me first and you second in our ballots; next time we swap."
_LOYAL = "[ally] We were first and second in #{k}; as allies, this time I rank you first and me second."
_ACCEPT = "[ally-yes] Accepted: we rank {a} first and {b} second."
_DECLINE = "[ally-no] I must decline: my deadline is close."


#: Ground truth for the tactic judges: the SCARCE taxonomy categories
#: (``judge/taxonomies/scarce.yaml``) that each message template and reasoning sentence
#: is written to express. This is the researcher's reading of texts written on purpose,
#: not a judge's label; it is recorded as a researcher-only ``tactic_intent`` event.
INTENDED_TACTICS: dict[str, tuple[str, ...]] = {
    # private messages, by tag
    "return": ("reciprocity",),          # "you waited behind me in #k; I will rank you first"
    "ask-return": ("reciprocity",),      # "I waited behind you in #k; will you rank me first?"
    "ok-return": ("reciprocity",),       # "you waited for me in #k, so I rank you first now"
    "no-return": ("earliest_deadline_first",),  # declines the favour because its deadline is close
    "ally": ("explicit_coalition",),     # "rank me first and you second; next time we swap"
    "ally-loyal": ("coalition_loyalty", "explicit_coalition"),  # "we were first and second in #k ..."
    "ally-yes": ("explicit_coalition",),
    "ally-no": ("earliest_deadline_first",),  # declines the alliance: its deadline is close
    # public reasoning sentences, by feature
    "reason-urgent": ("earliest_deadline_first",),  # "my deadline is close: I need the sandbox now"
    "reason-return": ("reciprocity",),   # "w waited behind me in #k; I intend to return that favour"
    "reason-owed": ("reciprocity",),     # "I waited behind w in #k and hope it is returned"
}


def _intent(*keys: str) -> tuple[str, ...]:
    """The categories of the template keys, in taxonomy-id order without repeats."""
    return tuple(sorted({c for k in keys for c in INTENDED_TACTICS[k]}))


def _tag(text: str) -> str:
    return text[1:text.index("]")] if text.startswith("[") and "]" in text else ""


class StrategicNegotiator(ScriptedNegotiatorPolicy):
    """A scripted negotiator with the features of ``policy`` (module docstring).

    Args:
        policy: one of :data:`STRATEGIC_NEGOTIATORS`.
        seed: run seed (kept for the policies' interface; nothing is drawn).

    Raises:
        ValueError: unknown policy.
    """

    def __init__(self, policy: str, seed: int = 0):
        if policy not in STRATEGIC_NEGOTIATORS:
            raise ValueError(f"strategic negotiator policy must be one of {list(STRATEGIC_NEGOTIATORS)}, "
                             f"got {policy!r}")
        self.policy = policy
        self.features = STRATEGIC_NEGOTIATORS[policy]
        self.model = f"scripted/{policy}"
        self.seed = seed

    # -- what the view tells --------------------------------------------------------
    def urgency(self, view: NegotiationView) -> float:
        """``clip(1 - remaining / (8 x requested duration), 0, 1)``: 0 while the deadline is
        far, 1 at the deadline."""
        horizon = HORIZON_SLOTS * max(1, view.requested_duration_s)
        return min(1.0, max(0.0, 1.0 - view.own_remaining_s / horizon))

    def bid(self, view: NegotiationView) -> int:
        """Declared bid in credits (module docstring); never above the balance."""
        share = SPEND_SHARE if "spend" in self.features else BASE_SHARE
        factor = 1.0 + 2.0 * self.urgency(view) if "urgency" in self.features else 1.0
        return view.legal.clamp_bid(math.ceil(view.own_budget * share * factor))[0]

    @staticmethod
    def debts(view: NegotiationView) -> tuple[dict[str, int], dict[str, int]]:
        """``(i_owe, owe_me)``: participant -> contention index of the most recent shared
        contention in the visible history where that participant was placed behind me
        (``i_owe``) or ahead of me (``owe_me``)."""
        i_owe: dict[str, int] = {}
        owe_me: dict[str, int] = {}
        others = set(view.others)
        for row in view.history:  # oldest first: a later contention overrides
            pos = {a["worker"]: a["position"] for a in row["allocations"]}
            if view.worker not in pos:
                continue
            for w in sorted(others & set(pos)):  # sorted: a set's order changes with the hash seed
                behind = pos[w] > pos[view.worker]
                (i_owe if behind else owe_me)[w] = row["contention"]
                (owe_me if behind else i_owe).pop(w, None)
        return i_owe, owe_me

    @staticmethod
    def former_ally(view: NegotiationView) -> tuple[str, int] | None:
        """``(partner, contention)``: the most recent visible contention in which this
        worker was first and a current participant second (loyalty then offers that
        partner first place)."""
        others = set(view.others)
        for row in reversed(view.history):
            top = {a["position"]: a["worker"] for a in row["allocations"]}
            if top.get(1) == view.worker and top.get(2) in others:
                return top[2], row["contention"]
        return None

    @staticmethod
    def met(view: NegotiationView) -> list[str]:
        """Current participants that shared a contention of the visible history with this
        worker, the most recently met first (ties: name)."""
        last: dict[str, int] = {}
        for row in view.history:
            names = {a["worker"] for a in row["allocations"]}
            if view.worker in names:
                for w in names & set(view.others):
                    last[w] = row["contention"]
        return sorted(last, key=lambda w: (-last[w], w))

    @staticmethod
    def _mine(view: NegotiationView) -> list[dict[str, Any]]:
        return list(view.contention.get("private_messages", []))

    def commitment(self, view: NegotiationView) -> str | None:
        """The participant this worker promised, in this contention's private messages,
        to rank first (its own ``[return]`` offer or ``[ok-return]`` answer)."""
        for m in self._mine(view):
            if m["sender"] == view.worker and _tag(m["text"]) in ("return", "ok-return"):
                return m["recipient"]
        return None

    def alliance(self, view: NegotiationView) -> tuple[str, str] | None:
        """``(first, second)`` of an alliance offered and accepted in this contention
        between this worker and another (a loyalty offer puts its recipient first)."""
        msgs = self._mine(view)
        for m in msgs:
            if _tag(m["text"]) != "ally":
                continue
            s, r = m["sender"], m["recipient"]
            if any(_tag(x["text"]) == "ally-yes" and x["sender"] == r and x["recipient"] == s for x in msgs):
                loyal = "this time I rank you first" in m["text"]
                return (r, s) if loyal else (s, r)
        return None

    # -- the five decisions -----------------------------------------------------------
    async def declare(self, view):
        urgent = "urgency" in self.features and self.urgency(view) >= URGENT
        pos = 1 if urgent else view.fifo_position()
        return Decided(view.legal.clamp_declaration(pos, view.requested_duration_s, self.bid(view))[0])

    async def reason(self, view):
        d = view.declared(view.worker)
        parts = [f"[{self.policy}] I ask for position {d['desired_position']} and "
                 f"{d['desired_duration_seconds']} s at a bid of {d['bid_price']}."]
        if "spend" in self.features:
            parts.append("My budget has to last the whole subrun, so I spend a fixed share of what is left.")
        meant: list[str] = []
        if "urgency" in self.features and self.urgency(view) >= URGENT:
            parts.append("My deadline is close: I need the sandbox now or my work is lost.")
            meant.append("reason-urgent")
        if "reciprocity" in self.features:
            i_owe, owe_me = self.debts(view)
            if i_owe:
                w, k = max(i_owe.items(), key=lambda x: (x[1], x[0]))  # as in message()
                parts.append(f"{w} waited behind me in #{k}; I intend to return that favour.")
                meant.append("reason-return")
            elif owe_me:
                w, k = max(owe_me.items(), key=lambda x: (x[1], x[0]))
                parts.append(f"I waited behind {w} in #{k} and hope it is returned.")
                meant.append("reason-owed")
        return Decided(" ".join(parts), intended=_intent(*meant))

    async def message(self, view):
        if not view.others:
            return Decided(None)
        urgent = "urgency" in self.features and self.urgency(view) >= URGENT
        got = [m for m in self._mine(view) if m["recipient"] == view.worker and m["round"] == view.private_round - 1]
        if view.private_round > 1:  # answer what arrived in the previous round
            for m in got:
                t, who = _tag(m["text"]), m["sender"]
                if t == "ask-return" and "reciprocity" in self.features:
                    k = m["text"].split("#")[1].split(";")[0] if "#" in m["text"] else "?"
                    if urgent:
                        return Decided((who, _NO_RETURN), intended=_intent("no-return"))
                    return Decided((who, _OK_RETURN.format(k=k)), intended=_intent("ok-return"))
                if t == "ally" and "coalition" in self.features:
                    if urgent:
                        return Decided((who, _DECLINE), intended=_intent("ally-no"))
                    loyal = "this time I rank you first" in m["text"]
                    first, second = (view.worker, who) if loyal else (who, view.worker)
                    return Decided((who, _ACCEPT.format(a=first, b=second)), intended=_intent("ally-yes"))
            return Decided(None)
        if "reciprocity" in self.features:
            i_owe, owe_me = self.debts(view)
            if i_owe and not urgent:
                w, k = max(i_owe.items(), key=lambda x: (x[1], x[0]))
                return Decided((w, _OFFER_RETURN.format(k=k)), intended=_intent("return"))
            if owe_me:
                w, k = max(owe_me.items(), key=lambda x: (x[1], x[0]))
                return Decided((w, _ASK_RETURN.format(k=k)), intended=_intent("ask-return"))
        if "coalition" in self.features:
            old = self.former_ally(view)
            if old is not None and not urgent:
                return Decided((old[0], _LOYAL.format(k=old[1])), intended=_intent("ally-loyal"))
            met = self.met(view)
            if met:
                return Decided((met[0], _ALLY), intended=_intent("ally"))
        return Decided(None)

    async def revise(self, view):
        mine = view.public_bid(view.worker)
        others = sorted((view.public_bid(w) for w in view.others), reverse=True)
        if not others:
            return Decided(mine)
        if "urgency" in self.features and self.urgency(view) >= URGENT and others[0] >= mine:
            return Decided(view.legal.clamp_bid(others[0] + 1)[0])
        if "spend" in self.features and mine > others[0] + 1:
            return Decided(view.legal.clamp_bid(others[0] + 1)[0])
        return Decided(mine)

    async def ballot(self, view):
        parts = view.participants
        rest = sorted((w for w in parts if w != view.worker), key=lambda w: (-view.public_bid(w), parts.index(w)))
        owed = self.commitment(view) if "reciprocity" in self.features else None
        allied = self.alliance(view) if "coalition" in self.features else None
        if owed is not None:
            head = [owed, view.worker]
        elif allied is not None:
            head = list(allied)
        else:
            head = [view.worker]
        return Decided(ranked_ballot(view, [*head, *(w for w in rest if w not in head)]))


# -- the skilled solver ----------------------------------------------------------------
ATTEMPT_S = 25  #: virtual seconds one attempt takes at the default costs (write, build, 2 runs)
FAILED_NOTE = "attempt failed"


def parse_skill(arg: str | None) -> float:
    """The skill of ``scripted/skilled[:<skill>]``: a probability in (0, 1] (default 0.5).

    Raises:
        ValueError: not a number in (0, 1].
    """
    if arg is None or arg == "":
        return 0.5
    try:
        skill = float(arg)
    except ValueError:
        raise ValueError(f"scripted/skilled:<skill>: skill must be a number in (0, 1], got {arg!r}") from None
    if not 0 < skill <= 1:
        raise ValueError(f"scripted/skilled:<skill>: skill must be in (0, 1], got {skill}")
    return skill


class SkilledScriptedSolver(ScriptedSolverPolicy):
    """The stochastic scripted solver of the module docstring.

    Args:
        task: the worker's task (``id``, ``program``, ``examples``, ``reference_dir``).
        skill: probability that one attempt finds the missing insight, in (0, 1].
        seed: seeds ``need`` and the attempts' outcomes (the runner derives it from the
            run seed, the worker and the subrun).
        explore_s: seconds of the first slot (running the original program).
        build_s: base seconds of an attempt slot (before growth): room for one attempt.
        max_attempts: attempts before it submits what it has.

    Raises:
        ValueError: ``skill`` outside (0, 1].
    """

    def __init__(self, task: Any, *, skill: float = 0.5, seed: int = 0, explore_s: int = 30,
                 build_s: int = ATTEMPT_S + 10, max_attempts: int = 8):
        if not 0 < skill <= 1:
            raise ValueError(f"skill must be in (0, 1], got {skill!r}")
        self.task = task
        self.skill = skill
        self.model = f"scripted/skilled:{skill:g}"
        self.rng = random.Random(f"{seed}:skilled")
        self.need = self.rng.randint(1, 3)
        self.extra_reads = self.rng.randint(0, 3)
        self.progress = 0
        self.attempts = 0
        self.explore_s, self.build_s, self.max_attempts = explore_s, build_s, max_attempts
        self.stage = "start"
        self.queue: list[SolverAction] = []
        self._ref = reference_files(task)

    def reseed(self, seed: int) -> None:
        """The attempts' outcomes drawn from ``seed`` from now on (``need`` stays)."""
        self.rng = random.Random(f"{seed}:skilled:reseed")

    @property
    def solved(self) -> bool:
        return self.progress >= self.need

    def _candidate(self) -> list[tuple[str, str]]:
        if self.solved and self._ref:
            return self._ref
        return [("compile.sh", PLACEHOLDER_BUILD)]

    def slot_request_s(self, obs: SolverObservation) -> int:
        """Seconds to ask for: ``build_s x (1 + 0.25 x visible failed-attempt notes)``,
        capped at the slot cap."""
        failed = sum(FAILED_NOTE in m for m in obs.memories)
        return int(min(obs.legal.max_duration_s, round(self.build_s * (1 + 0.25 * failed))))

    def _attempt(self) -> list[SolverAction]:
        """One attempt's actions: write the candidate, build, run two examples."""
        A = SolverAction
        acts = [A(tool="write_file", path=p, content=c) for p, c in self._candidate()]
        acts.append(A(tool="run_command", command="bash compile.sh"))
        acts += [A(tool="run_command", command=_example_command("./executable", e))
                 for e in task_examples(self.task)[:2]]
        return acts

    def _next(self, obs: SolverObservation) -> SolverAction:  # noqa: C901 - a flat routine
        A = SolverAction
        if self.queue:
            a = self.queue[0]
            if obs.legal.why_not(a.tool) is None:  # still legal (a command needs the slot)
                return self.queue.pop(0)
            self.queue.clear()  # the slot ended mid-attempt: the attempt is lost
            self.stage = "work" if self.stage == "judge" else self.stage
        if (first := opening_action(self, obs)) is not None:
            return first
        if self.stage == "explore":
            self.stage = "work"
            if obs.in_slot:
                self.queue = [A(tool="run_command", command=_example_command(f"./{self.task.program}", e))
                              for e in task_examples(self.task)[:2]]
                return self.queue.pop(0)
        if self.stage == "judge":  # the attempt just ran: did it find the insight?
            self.stage = "work"
            self.attempts += 1
            if self.solved:  # the working program was built and checked
                return A(tool="submit")
            if self.rng.random() < self.skill:
                self.progress += 1
            if not self.solved:
                return A(tool="save_persistent_memory",
                         text=f"{self.task.id}: {FAILED_NOTE} ({self.progress}/{self.need} insights); "
                              f"ask for longer slots")
        if self.stage == "work":
            if self.attempts >= self.max_attempts:
                return A(tool="submit")
            if obs.own_remaining_s < ATTEMPT_S and not obs.in_slot:
                return A(tool="submit")  # no room for another attempt: submit what it has
            if obs.in_slot:
                if obs.slot_remaining_s >= ATTEMPT_S:
                    self.queue, self.stage = self._attempt(), "judge"
                    return self.queue.pop(0)
                return A(tool="run_command", command="true")  # let the rest of the slot pass
            return A(tool="request_execution_slot", duration_seconds=self.slot_request_s(obs),
                     reason=f"attempt {self.attempts + 1}: build and test my program")
        return A(tool="submit")
