"""The four-phase SCARCE contention, as a pure state machine.

A *contention* starts when the shared sandbox is free and at least one worker has a
pending slot request. Its participants (ordered by request time) play:

1. ``declaration``: each submits a :class:`Declaration`
   ``{desired_position, desired_duration_seconds, bid_price}`` (sealed until all
   have declared, then public).
2. ``reasoning``: each submits public text explaining its declaration.
3. ``private``: up to ``private_rounds`` (R) rounds of directed messages; a message is
   seen only by its sender and recipient, who may reply in the next round. The default
   R = 2 lets a recipient answer (SCARCE: "a recipient may reply; at most R rounds",
   the paper's protocol). The phase ends early after a round in which nobody sent a
   message (nothing is left to answer). Skipped when there is one participant or
   ``private_rounds == 0``.
4. ``revision`` (``revisable`` mechanism only): each may revise its bid price; the
   revised bids are public before ballots. Under ``fixed`` the declared price binds.
5. ``ballots``: each submits a :class:`Ballot`: a complete ranking of participants,
   an allocated duration (seconds) and a payment price (credits) for each.

Then :func:`scarce_lab.environments.scarce.world.scheduler.aggregate_ballots` turns the ballots
into a schedule. Centralised baselines (FIFO, SJF, EDF, highest bid) stop after the
declaration phase.

Visibility: :meth:`Contention.public_view` holds what every participant may see
(queue, request times, declarations once sealed phase ends, reasoning, revised
bids); :meth:`Contention.private_view` adds a worker's own private messages. The
contention never holds budgets or deadlines, so no view can leak them.

Errors: every out-of-phase or malformed submission raises :class:`ProtocolError`
naming the field and value; the agent layer repairs model output before submitting.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_SLOT_CAP_S = 300
#: Default rounds of private messages: a message, then the recipient's reply.
DEFAULT_PRIVATE_ROUNDS = 2


class ProtocolError(ValueError):
    """A submission that breaks the contention protocol."""


class Mechanism(StrEnum):
    """``fixed``: the declared price binds. ``revisable``: it may be revised before ballots."""

    fixed = "fixed"
    revisable = "revisable"


class Phase(StrEnum):
    declaration = "declaration"
    reasoning = "reasoning"
    private = "private"
    revision = "revision"
    ballots = "ballots"
    closed = "closed"


class MechanismConfig(BaseModel):
    """Rules of one contention.

    Units: ``slot_cap_s`` seconds (longest slot any worker can get, default 300);
    text limits in characters. ``private_rounds``: at most this many rounds of private
    messages (default 2: a message and its reply). ``negotiate`` false means a
    centralised baseline: only the declaration phase is played.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mechanism: Mechanism = Mechanism.fixed
    slot_cap_s: int = Field(DEFAULT_SLOT_CAP_S, ge=1)
    private_rounds: int = Field(DEFAULT_PRIVATE_ROUNDS, ge=0, le=10)
    reasoning_max_chars: int = Field(800, ge=1)
    message_max_chars: int = Field(500, ge=1)
    negotiate: bool = True


class Request(BaseModel):
    """A solver's slot request: when (seconds on the run timeline), how long, why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worker: str
    time_s: float = Field(ge=0)
    duration_s: int = Field(ge=1)
    reason: str = ""


class Declaration(BaseModel):
    """Phase 1 JSON: desired queue position (1 = first), seconds, bid in credits.

    Strict, like every decision (:class:`scarce_lab.llm.decisions.DecisionModel`):
    ``True``, ``"5"`` and ``30.0`` are refused, not read as numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    desired_position: int = Field(ge=1)
    desired_duration_seconds: int = Field(ge=1)
    bid_price: int = Field(ge=0)


class PrivateMessage(BaseModel):
    """Phase 3 directed message; ``round`` counts from 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sender: str
    recipient: str
    text: str
    round: int = Field(ge=1)


class BallotEntry(BaseModel):
    """One line of a ballot: a participant, its allocated seconds and its price (credits)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    worker: str
    duration_seconds: int = Field(ge=0)
    price: int = Field(ge=0)


class Ballot(BaseModel):
    """Phase 5: ``entries`` in ranked order (first = first slot), every participant once."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    entries: list[BallotEntry]

    def ranking(self) -> list[str]:
        return [e.worker for e in self.entries]


_ORDER_NEGOTIATED = [Phase.declaration, Phase.reasoning, Phase.private, Phase.revision, Phase.ballots, Phase.closed]


class Contention:
    """State of one contention. Call the phase's submit methods, then :meth:`advance`.

    Args:
        index: contention number within the run (0-based).
        requests: the pending requests; participants are ordered by request time,
            ties by worker name.
        config: the mechanism rules.

    Raises:
        ProtocolError: no requests, or a worker requested twice.
    """

    def __init__(self, index: int, requests: list[Request], config: MechanismConfig):
        if not requests:
            raise ProtocolError("a contention needs at least one request, got none")
        names = [r.worker for r in requests]
        if len(set(names)) != len(names):
            raise ProtocolError(f"requests: a worker appears twice in {names}")
        self.index = index
        self.config = config
        self.requests = {r.worker: r for r in sorted(requests, key=lambda r: (r.time_s, r.worker))}
        self.participants: list[str] = list(self.requests)
        self.phase = Phase.declaration
        self.private_round = 0
        self.declarations: dict[str, Declaration] = {}
        self.reasoning: dict[str, str] = {}
        self.messages: list[PrivateMessage] = []
        self.revised_bids: dict[str, int] = {}
        self.ballots: dict[str, Ballot] = {}

    # -- submissions ----------------------------------------------------------------
    def declare(self, worker: str, decl: Declaration) -> None:
        """Phase 1. Raises ProtocolError (wrong phase, unknown worker, position > n,
        duration > slot cap, second declaration)."""
        self._expect(Phase.declaration, worker)
        if not isinstance(decl, Declaration):
            raise ProtocolError(f"declaration of {worker!r} must be a Declaration, got {type(decl).__name__}")
        n = len(self.participants)
        if decl.desired_position > n:
            raise ProtocolError(f"desired_position must be in 1..{n}, got {decl.desired_position}")
        if decl.desired_duration_seconds > self.config.slot_cap_s:
            raise ProtocolError(f"desired_duration_seconds must be <= slot cap {self.config.slot_cap_s}, "
                                f"got {decl.desired_duration_seconds}")
        if worker in self.declarations:
            raise ProtocolError(f"{worker!r} already declared")
        self.declarations[worker] = decl

    def reason(self, worker: str, text: str) -> None:
        """Phase 2: public reasoning text (trimmed to ``reasoning_max_chars``)."""
        self._expect(Phase.reasoning, worker)
        self.reasoning[worker] = str(text)[: self.config.reasoning_max_chars]

    def send(self, sender: str, recipient: str, text: str) -> PrivateMessage:
        """Phase 3: a directed message in the current private round.

        Raises ProtocolError: wrong phase, unknown worker, message to oneself, or a
        second message to the same recipient in one round.
        """
        self._expect(Phase.private, sender)
        if recipient not in self.requests:
            raise ProtocolError(f"recipient {recipient!r} is not a participant ({self.participants})")
        if recipient == sender:
            raise ProtocolError(f"recipient: {sender!r} cannot message itself")
        r = self.private_round
        if any(m.sender == sender and m.recipient == recipient and m.round == r for m in self.messages):
            raise ProtocolError(f"{sender!r} already messaged {recipient!r} in private round {r}")
        msg = PrivateMessage(sender=sender, recipient=recipient, text=str(text)[: self.config.message_max_chars], round=r)
        self.messages.append(msg)
        return msg

    def revise(self, worker: str, bid_price: int) -> None:
        """Phase 4 (revisable only): a new bid price in credits (>= 0)."""
        self._expect(Phase.revision, worker)
        if isinstance(bid_price, bool) or not isinstance(bid_price, int) or bid_price < 0:
            raise ProtocolError(f"bid_price must be an integer >= 0, got {bid_price!r}")
        self.revised_bids[worker] = bid_price

    def ballot(self, worker: str, ballot: Ballot) -> None:
        """Phase 5. Raises ProtocolError unless the ranking is a permutation of the
        participants and each duration is <= the slot cap."""
        self._expect(Phase.ballots, worker)
        if not isinstance(ballot, Ballot):
            raise ProtocolError(f"ballot of {worker!r} must be a Ballot, got {type(ballot).__name__}")
        ranking = ballot.ranking()
        if sorted(ranking) != sorted(self.participants):
            raise ProtocolError(f"ballot of {worker!r}: ranking must list each participant once "
                                f"({self.participants}), got {ranking}")
        for e in ballot.entries:
            if e.duration_seconds > self.config.slot_cap_s:
                raise ProtocolError(f"ballot of {worker!r}: duration_seconds for {e.worker!r} must be <= "
                                    f"{self.config.slot_cap_s}, got {e.duration_seconds}")
        self.ballots[worker] = ballot

    # -- phase control --------------------------------------------------------------
    def advance(self) -> Phase:
        """Close the current phase (or private round) and return the new phase.

        A private round is followed by the next one while fewer than
        ``private_rounds`` were played and the round just closed carried at least one
        message (a silent round leaves nothing to answer, so the phase ends).

        Raises ProtocolError when a participant has not submitted the phase's
        required item (declarations, reasoning, ballots).
        """
        missing = self._missing()
        if missing:
            raise ProtocolError(f"phase {self.phase}: no submission from {missing}")
        if self.phase == Phase.private and self.private_round < self.config.private_rounds and any(
                m.round == self.private_round for m in self.messages):
            self.private_round += 1
            return self.phase
        self.phase = self._next_phase(self.phase)
        if self.phase == Phase.private:
            self.private_round = 1
        return self.phase

    def current_bid(self, worker: str) -> int:
        """The worker's binding or latest bid (credits): revised if revisable and revised."""
        if self.config.mechanism == Mechanism.revisable and worker in self.revised_bids:
            return self.revised_bids[worker]
        return self.declarations[worker].bid_price

    # -- views ----------------------------------------------------------------------
    def public_view(self) -> dict[str, Any]:
        """What every participant may see now (JSON-able)."""
        sealed = self.phase == Phase.declaration
        return {
            "contention": self.index,
            "phase": str(self.phase),
            "mechanism": str(self.config.mechanism),
            "slot_cap_s": self.config.slot_cap_s,
            "private_rounds": self.config.private_rounds,
            "queue": [{"worker": w, "request_time_s": round(r.time_s, 1), "requested_duration_s": r.duration_s}
                      for w, r in self.requests.items()],
            "declarations": {} if sealed else {w: d.model_dump() for w, d in self.declarations.items()},
            "reasoning": dict(self.reasoning),
            "revised_bids": dict(self.revised_bids),
        }

    def private_view(self, worker: str) -> dict[str, Any]:
        """Public view plus the private messages ``worker`` sent or received."""
        if worker not in self.requests:
            raise ProtocolError(f"worker {worker!r} is not a participant ({self.participants})")
        view = self.public_view()
        view["you"] = worker
        view["your_request"] = self.requests[worker].model_dump()
        view["private_messages"] = [m.model_dump() for m in self.messages if worker in (m.sender, m.recipient)]
        return view

    # -- internals ------------------------------------------------------------------
    def _expect(self, phase: Phase, worker: str) -> None:
        if self.phase != phase:
            raise ProtocolError(f"phase is {self.phase}, not {phase} (submission from {worker!r})")
        if worker not in self.requests:
            raise ProtocolError(f"worker {worker!r} is not a participant ({self.participants})")

    def _missing(self) -> list[str]:
        need = {Phase.declaration: self.declarations, Phase.reasoning: self.reasoning,
                Phase.ballots: self.ballots}.get(self.phase)
        if need is None:
            return []
        return [w for w in self.participants if w not in need]

    def _next_phase(self, phase: Phase) -> Phase:
        if phase == Phase.closed:
            raise ProtocolError("the contention is closed")
        if not self.config.negotiate:
            return Phase.closed
        i = _ORDER_NEGOTIATED.index(phase) + 1
        nxt = _ORDER_NEGOTIATED[i]
        if nxt == Phase.private and (self.config.private_rounds == 0 or len(self.participants) < 2):
            nxt = Phase.revision
        if nxt == Phase.revision and self.config.mechanism != Mechanism.revisable:
            nxt = Phase.ballots
        return nxt


class AuctionHistory:
    """Public record of past contentions: allocations and winning bids (visible to all).

    Payments are not kept: a payment capped at a budget would reveal that budget.
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(self, contention: int, allocations: list[dict[str, Any]], bids: dict[str, int]) -> None:
        """Store one contention's public outcome.

        ``allocations``: dicts with ``worker``, ``position``, ``duration_s`` (other keys,
        such as a payment, are dropped); ``bids``: the (final) public bid of each
        participant in credits.
        """
        winner = next((a for a in allocations if a["position"] == 1), None)
        self.rows.append({"contention": contention,
                          "allocations": [{k: a[k] for k in ("worker", "position", "duration_s")} for a in allocations],
                          "bids": dict(bids), "winner": winner["worker"] if winner else None,
                          "winning_bid": bids.get(winner["worker"]) if winner else None})
