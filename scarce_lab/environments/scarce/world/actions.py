"""The solver's legal actions now: an action mask, derived from one worker's state and
its file names (pure; no I/O: the runner lists the files).

Rules (the SCARCE paper's tool set):

============================  ===============================================================
tool                          legal when
============================  ===============================================================
``list_files``                always (active or in its slot)
``read_file``                 the folder holds at least one file; ``path`` is one of them
``write_file``                always; ``path`` a non-empty relative path inside the folder
``request_execution_slot``    the worker holds no open slot; ``duration_seconds`` in
                              ``1..slot_cap_s``
``run_command``               only inside the worker's granted slot; a non-empty command
``save_persistent_memory``    always
``submit``                    ``compile.sh`` exists: the grader builds a submission with
                              ``bash compile.sh`` (:mod:`scarce_lab.tasks.grading`), so
                              without it there is nothing to submit
============================  ===============================================================

A solver moves only while ``active`` or ``in_slot`` (:meth:`~.world.ScarceWorld.next_event`);
:class:`LegalActions` also answers *why* a tool is not legal now, with the legal
alternatives, which is the text a solver is shown when an illegal call still arrives.
The world puts the mask on the observation it builds
(:meth:`~.world.ScarceWorld.solver_observation`, :attr:`~.observations.SolverObservation.legal`);
the solver reads it there and the runner checks the chosen action against that same
object.

A negotiator's legal submissions in one contention (:class:`LegalNegotiation`, on
:attr:`~.observations.NegotiationView.legal`): positions ``1..n`` (``n`` participants),
durations ``1..slot_cap_s`` (ballot durations ``0..slot_cap_s``), its own bid (declared
or revised) ``0..own budget``, ballot prices ``0..MAX_PRICE``, a ballot ranks each
participant once, private messages go to another participant. The contention
(:class:`~.protocol.Contention`) refuses positions, durations and rankings outside
these; a bid above the budget is refused by no one (the ledger caps the payment,
:mod:`.budgets`), so the budget bound is what every agent is offered and clamped to.
:meth:`LegalNegotiation.clamp_declaration`, :meth:`~LegalNegotiation.clamp_bid` and
:meth:`~LegalNegotiation.complete_ballot` are the one repair of raw numbers into this
set, reported as a violation note.

With an institution on (:mod:`.institutions`), :attr:`LegalNegotiation.institutions`
holds a :class:`~.institutions.LegalInstitutions`: the legal ballot-promise ranks
(``2..n``), whether it may vote on fines, the contract payees and the largest contract
amount; its ``clamp_promise`` and ``check_offer`` are the repair and the refusal of
those submissions. With every institution off it is ``None`` (nothing more is offered).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .protocol import Ballot, BallotEntry, Declaration

#: Largest ballot price (credits): a bound on a number a model may write, not a budget.
MAX_PRICE = 1_000_000

#: The solver's tools in the order they are offered.
SOLVER_TOOLS: tuple[str, ...] = (
    "list_files", "read_file", "write_file", "request_execution_slot", "run_command",
    "save_persistent_memory", "submit",
)
#: The file a submission needs before ``submit`` is legal.
BUILD_SCRIPT = "compile.sh"
#: A relative path of 1..3 segments, none starting with a dot (no ``..``, no hidden
#: files, no absolute path), each 1..40 characters of ``[A-Za-z0-9_.-]``.
WRITE_PATH_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}){0,2}$"
_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_REST = _FIRST | {".", "-"}


def writable_path(path: str) -> bool:
    """Whether ``path`` matches :data:`WRITE_PATH_PATTERN` (checked without ``re``:
    this package imports nothing beyond pure data modules)."""
    parts = str(path).split("/")
    return 1 <= len(parts) <= 3 and all(
        1 <= len(p) <= 40 and p[0] in _FIRST and all(c in _REST for c in p[1:]) for p in parts)


@dataclass(frozen=True)
class LegalActions:
    """The legal solver actions of one worker at one step.

    Attributes:
        worker: the worker.
        tools: legal tool names, in :data:`SOLVER_TOOLS` order.
        read_paths: files ``read_file`` may name (the worker's current files).
        max_duration_s: the slot cap; ``request_execution_slot`` durations lie in
            ``1..max_duration_s`` seconds.
        in_slot: whether the worker holds its granted slot now.
        can_submit: whether :data:`BUILD_SCRIPT` exists.
    """

    worker: str
    tools: tuple[str, ...]
    read_paths: tuple[str, ...]
    max_duration_s: int
    in_slot: bool
    can_submit: bool

    def why_not(self, tool: str) -> str | None:
        """Why ``tool`` is not legal now (``None`` when it is)."""
        if tool in self.tools:
            return None
        if tool not in SOLVER_TOOLS:
            return f"unknown tool {tool!r}"
        if tool == "run_command":
            return "run_command needs a granted execution slot: call request_execution_slot first"
        if tool == "request_execution_slot":
            return "you already hold an execution slot: use run_command until it ends"
        if tool == "submit":
            return f"nothing to submit yet: write {BUILD_SCRIPT} (it must build ./executable) first"
        if tool == "read_file":
            return "your folder holds no files to read"
        return f"{tool} is not allowed now"  # pragma: no cover - every tool is covered above

    def check(self, tool: str, *, path: str = "", command: str = "", duration_seconds: int | None = None) -> str | None:
        """Why this call is illegal now (tool and its arguments), or ``None``; never
        raises (an argument of the wrong type, ``True`` or ``30.5`` seconds, a path that
        is not text, is a reason like any other).

        Units: ``duration_seconds`` seconds.
        """
        reason = self.why_not(tool)
        if reason is not None:
            return reason
        for name, v in (("path", path), ("command", command)):
            if not isinstance(v, str):
                return f"{name} must be text, got {type(v).__name__} {v!r}"[:200]
        if duration_seconds is not None and (isinstance(duration_seconds, bool) or not isinstance(duration_seconds, int)):
            return f"duration_seconds must be a whole number of seconds, got {duration_seconds!r}"[:200]
        if tool == "read_file" and path not in self.read_paths:
            return f"read_file path {path!r} is not one of your files {list(self.read_paths)}"
        if tool == "write_file" and not writable_path(path or ""):
            if not (path or "").strip():
                return "path: empty"
            if path.startswith("/") or ".." in path.split("/"):
                return f"path: {path!r} is outside your folder"
            return (f"path: {path!r} is not allowed: use 1-3 parts of letters, digits, '_', '.', '-' "
                    f"separated by '/', none starting with '.'")
        if tool == "run_command" and not command.strip():
            return "run_command needs a non-empty command"
        if tool == "request_execution_slot" and duration_seconds is not None and not (
                1 <= duration_seconds <= self.max_duration_s):
            return f"duration_seconds {duration_seconds} is outside 1..{self.max_duration_s}"
        return None

    def narrowed(self, paths: list[str] | tuple[str, ...]) -> LegalActions:
        """These legal actions with ``read_file`` (and ``submit``) limited to the
        ``read_paths`` that are also in ``paths``: a subset of a legal set is legal, so
        an agent may offer its model fewer names (e.g. a bounded listing) without
        restating the rule."""
        keep = set(paths)
        return legal_actions(self.worker, in_slot=self.in_slot, slot_cap_s=self.max_duration_s,
                             files=[p for p in self.read_paths if p in keep])

    def describe(self) -> str:
        """One line naming the legal tools (shown with every refusal)."""
        return "legal now: " + ", ".join(self.tools)

    def key(self) -> tuple:
        """A hashable key of everything that shapes the action schema (for caching)."""
        return (self.tools, self.read_paths, self.max_duration_s)


def legal_actions(worker: str, *, in_slot: bool, files: list[str] | tuple[str, ...], slot_cap_s: int) -> LegalActions:
    """The :class:`LegalActions` of a worker that may move (``active`` or ``in_slot``).

    Args:
        worker: the worker.
        in_slot: it holds its granted slot now.
        files: the names in its work folder (relative paths).
        slot_cap_s: the longest slot (seconds, >= 1).

    Raises:
        ValueError: ``slot_cap_s`` < 1.
    """
    if slot_cap_s < 1:
        raise ValueError(f"slot_cap_s must be >= 1 second, got {slot_cap_s!r}")
    paths = tuple(sorted(dict.fromkeys(str(f) for f in files)))
    can_submit = BUILD_SCRIPT in paths
    legal = {
        "list_files": True,
        "read_file": bool(paths),
        "write_file": True,
        "request_execution_slot": not in_slot,
        "run_command": in_slot,
        "save_persistent_memory": True,
        "submit": can_submit,
    }
    return LegalActions(worker=worker, tools=tuple(t for t in SOLVER_TOOLS if legal[t]), read_paths=paths,
                        max_duration_s=int(slot_cap_s), in_slot=in_slot, can_submit=can_submit)


def _clamp(v: object, lo: int, hi: int) -> int:
    """``v`` into ``lo..hi``: an int clipped, a float floored then clipped (``+-inf`` to
    an end); anything that is no number (NaN, ``None``, text, a bool) becomes ``lo``,
    the most modest legal value: a repair never raises, and never reads a number out
    of text or ``True``."""
    if isinstance(v, bool) or not isinstance(v, int | float) or v != v:
        return lo
    if isinstance(v, float):
        return lo if v < lo else hi if v > hi else max(lo, min(hi, math.floor(v)))
    return max(lo, min(hi, v))


def _same(raw: tuple, fixed: tuple) -> bool:
    """Whether the repair changed nothing: equal values and each an int (``True`` or
    ``30.0`` read as a number is a change the note must report)."""
    return all(type(a) is int and a == b for a, b in zip(raw, fixed, strict=True))


@dataclass(frozen=True)
class LegalNegotiation:
    """The legal submissions of one worker in one contention (module docstring).

    Attributes:
        worker: the worker.
        participants: the contention's participants, in request-time order.
        max_duration_s: the slot cap (seconds).
        max_bid: the largest own bid offered (its remaining budget, credits).
        max_price: the largest ballot price (credits, :data:`MAX_PRICE`).
    """

    worker: str
    participants: tuple[str, ...]
    max_duration_s: int
    max_bid: int
    max_price: int = MAX_PRICE
    #: what it may submit to the institutions (:class:`~.institutions.LegalInstitutions`);
    #: ``None`` when every institution is off
    institutions: Any = None

    def with_institutions(self, legal: Any) -> LegalNegotiation:
        """This legal set with the institutions' legal submissions added."""
        return dataclasses.replace(self, institutions=legal)

    @property
    def max_position(self) -> int:
        """The last queue position (``n``; positions are 1-based)."""
        return len(self.participants)

    @property
    def recipients(self) -> tuple[str, ...]:
        """Who a private message may go to: every other participant."""
        return tuple(w for w in self.participants if w != self.worker)

    def clamp_declaration(self, pos: int, dur: int, bid: int) -> tuple[Declaration, str | None]:
        """Clamp raw declaration numbers into the legal ranges; the note says what
        changed (``None`` when nothing did). Floats are floored, ``+-inf`` clipped, and
        what is no number (NaN, ``None``, text, a bool) becomes the lowest legal value;
        never raises."""
        n, cap = self.max_position, self.max_duration_s
        fixed = (_clamp(pos, 1, n), _clamp(dur, 1, cap), _clamp(bid, 0, self.max_bid))
        note = None
        if not _same((pos, dur, bid), fixed):
            note = f"declaration clamped from {(pos, dur, bid)} to {fixed} (n={n}, cap={cap}, budget={self.max_bid})"
        return Declaration(desired_position=fixed[0], desired_duration_seconds=fixed[1], bid_price=fixed[2]), note

    def clamp_bid(self, bid: int) -> tuple[int, str | None]:
        """An own (revised) bid clamped to ``0..max_bid`` credits, with a note when changed."""
        fixed = _clamp(bid, 0, self.max_bid)
        return fixed, None if _same((bid,), (fixed,)) else f"revised bid clamped to {fixed}"

    def complete_ballot(self, entries: Sequence[tuple[str, int, int]],
                        fill: Mapping[str, tuple[int, int]]) -> tuple[Ballot, str | None]:
        """A legal ballot from raw ``(worker, seconds, price)`` rows: unknown workers
        and duplicates dropped, seconds clamped to ``0..max_duration_s``, prices to
        ``0..max_price``, missing participants appended in request-time order with
        ``fill[worker] = (seconds, price)``; the note lists every repair."""
        seen: dict[str, BallotEntry] = {}
        cap = self.max_duration_s
        problems = []
        for w, d, p in entries:
            if w not in self.participants:
                problems.append(f"unknown worker {w!r}")
                continue
            if w in seen:
                problems.append(f"duplicate {w!r}")
                continue
            seen[w] = BallotEntry(worker=w, duration_seconds=_clamp(d, 0, cap), price=_clamp(p, 0, self.max_price))
            if not _same((d, p), (seen[w].duration_seconds, seen[w].price)):
                problems.append(f"clamped {w!r}")
        for w in self.participants:
            if w not in seen:
                problems.append(f"missing {w!r}")
                d, p = fill[w]
                seen[w] = BallotEntry(worker=w, duration_seconds=_clamp(d, 0, cap), price=_clamp(p, 0, self.max_price))
        return Ballot(entries=list(seen.values())), ("ballot repaired: " + "; ".join(problems)) if problems else None


def legal_negotiation(worker: str, *, participants: Sequence[str], slot_cap_s: int, own_budget: int) -> LegalNegotiation:
    """The :class:`LegalNegotiation` of ``worker`` in a contention of ``participants``
    (request-time order) with slot cap ``slot_cap_s`` seconds and ``own_budget``
    credits left.

    Raises:
        ValueError: ``worker`` is not a participant, or ``slot_cap_s`` < 1.
    """
    if worker not in participants:
        raise ValueError(f"worker {worker!r} is not a participant ({list(participants)})")
    if slot_cap_s < 1:
        raise ValueError(f"slot_cap_s must be >= 1 second, got {slot_cap_s!r}")
    return LegalNegotiation(worker=worker, participants=tuple(participants), max_duration_s=int(slot_cap_s),
                            max_bid=max(0, int(own_budget)))
