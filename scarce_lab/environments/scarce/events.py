"""SCARCE event payloads (environment ``scarce``).

``Event.round`` is the run-wide contention index (0-based); solver events between two
contentions carry the index of the next contention; the end of a subrun is committed
under the index of the next contention too. ``Event.t`` is seconds since the subrun
started (virtual or wall clock). Every payload has ``subrun`` (0-based). Money in
integer credits, durations in seconds.

Visibility (``Event.visibility``): ``public`` (every participant: declarations after
they are unsealed, public reasoning, the schedule, slots), ``private`` (the worker
itself; a private message its sender and recipient), ``researcher`` (nobody in the
game: the run configuration, ballots as inputs of the mechanism, submissions and
scores, ledger checks).

==================  ===========  ====================================================
kind                agent        what
==================  ===========  ====================================================
run_config          --           workers, budgets, deadlines, mechanism, clock
subrun_start        worker       its task, budget and deadline
solver_action       worker       a solver tool call
tool_error          worker       a tool call that failed (reason shown to the solver)
memory_save         worker       a note saved to persistent memory
slot_request        worker       a request for an execution slot
contention_start    --           participants and the queue
declaration         worker       sealed declaration (position, duration, bid)
reasoning           worker       public reasoning
private_message     sender       a directed message
private_silence     worker       no message this private round
protocol_violation  worker       a message the protocol refused
bid_revision        worker       revised bid (revisable mechanism)
tactic_intent       worker       what a scripted policy meant by its text (ground truth)
ballot              worker       ranking with durations and prices
schedule            --           the aggregated schedule
payment             worker       the charge for its slot
slot_start          worker       its slot opens
execution           worker       a command run in the sandbox (or refused)
slot_end            worker       its slot closes
submission          worker       graded submission
subrun_end          --           ledger check
agent_joined        worker       a newcomer plays from this subrun on (``joins``)
agent_left          worker       a worker played its last subrun (``leaves``)
interview           worker       retrospective interview (opt-in; researcher-only)
==================  ===========  ====================================================

Institutions (only when a module is on; :mod:`scarce_lab.environments.scarce.world.institutions`):

=====================  ===========  ==========  =========================================
kind                   agent        visibility  what
=====================  ===========  ==========  =========================================
reputation             --           public      every worker's score at a contention start
promise                worker       public      a ballot promise (rank itself p or later)
promise_judged         worker       public      kept or broken, against its own ballot
breach                 worker       public      a broken commitment (promise or overrun)
fine_vote              voter        public      a vote to fine (or not) a breach
sanction               worker       public      fined or not (the nominal fine), the votes
fine_payment           worker       private     what was levied and where it went
contract_offer         payer        private     an offer (payer and payee see it)
contract_answer        payee        private     accepted or declined; signed (escrowed)
contract_settlement    payer        private     paid to the payee or refunded
=====================  ===========  ==========  =========================================

Size: the whole event schema of SCARCE in one place (every payload the tables above
list, each with its recorded fields, and the version-1 migration).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from ...data.events.base import DecisionFields, Payload, Visibility
from ...data.events.interview import InterviewFields
from ...data.events.migrations import pairs, private_to


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Scarce(Payload):
    subrun: int


class _ScarceDecision(DecisionFields):
    subrun: int


class WorkerSetting(_Record):
    """One worker's private setting: budget (credits) and deadline (seconds after its
    subrun started)."""

    worker: str
    budget: int
    deadline_s: float


class ClockSetting(_Record):
    """Time accounting: ``kind`` (virtual or wall) and the virtual costs in seconds of a
    model call, a scripted decision and a command."""

    kind: str
    model_call_s: float
    scripted_call_s: float
    command_s: float


class RunConfig(_Scarce):
    """The run's settings as the environment applies them (researcher only)."""

    kind: Literal["run_config"] = "run_config"
    default_visibility: ClassVar[Visibility] = Visibility.researcher
    workers: list[WorkerSetting]
    scheduler: str
    mechanism: str
    memory: str
    clock: ClockSetting
    slot_cap_s: int
    private_rounds: int


class SubrunStart(_Scarce):
    """A worker's subrun begins: its task (id and original program name), its budget
    (credits) and deadline (seconds)."""

    kind: Literal["subrun_start"] = "subrun_start"
    default_visibility: ClassVar[Visibility] = Visibility.private
    task_id: str
    program: str
    budget: int
    deadline_s: float


class ToolArgs(_Record):
    """Arguments of a solver tool call (only the tool's own fields are set).

    Texts are cut to 4,000 characters; ``bytes`` is the full content's size.
    """

    path: str | None = None
    content: str | None = None
    bytes: int | None = None
    command: str | None = None
    duration_seconds: int | None = None
    reason: str | None = None
    text: str | None = None


class SolverAction(_ScarceDecision):
    """One solver step: ``step`` (0-based within the subrun), ``tool`` and its ``args``."""

    kind: Literal["solver_action"] = "solver_action"
    default_visibility: ClassVar[Visibility] = Visibility.private
    step: int
    tool: str
    args: ToolArgs


class ToolError(_Scarce):
    """A tool call that failed; ``error`` is the reason shown to the solver."""

    kind: Literal["tool_error"] = "tool_error"
    default_visibility: ClassVar[Visibility] = Visibility.private
    tool: str
    error: str


class MemorySave(_Scarce):
    """A note saved with ``save_persistent_memory`` (at most 500 characters)."""

    kind: Literal["memory_save"] = "memory_save"
    default_visibility: ClassVar[Visibility] = Visibility.private
    text: str


class SlotRequest(_Scarce):
    """A request for an execution slot: ``duration_s`` clamped to the slot cap,
    ``asked_s`` as asked, the solver's ``reason``."""

    kind: Literal["slot_request"] = "slot_request"
    default_visibility: ClassVar[Visibility] = Visibility.private
    duration_s: int
    asked_s: int
    reason: str


class QueueEntry(_Record):
    """A pending request as every participant sees it (time in s since the subrun)."""

    worker: str
    request_time_s: float
    requested_duration_s: int


class ContentionStart(_Scarce):
    """A contention opens for the pending requests."""

    kind: Literal["contention_start"] = "contention_start"
    participants: list[str]
    queue: list[QueueEntry]
    scheduler: str


class Declaration(_ScarceDecision):
    """A sealed declaration (public once every participant has declared): desired
    1-based position, desired duration (s) and bid price (credits)."""

    kind: Literal["declaration"] = "declaration"
    desired_position: int
    desired_duration_seconds: int
    bid_price: int


class Reasoning(_ScarceDecision):
    """Public reasoning."""

    kind: Literal["reasoning"] = "reasoning"
    text: str


class PrivateMessage(_ScarceDecision):
    """A directed message (private to sender and recipient); ``private_round`` is the
    1-based private-message round of the contention."""

    kind: Literal["private_message"] = "private_message"
    default_visibility: ClassVar[Visibility] = Visibility.private
    sender: str
    recipient: str
    text: str
    private_round: int


class PrivateSilence(_ScarceDecision):
    """The worker sent no message in private round ``private_round``."""

    kind: Literal["private_silence"] = "private_silence"
    default_visibility: ClassVar[Visibility] = Visibility.private
    private_round: int


class ProtocolViolation(_Scarce):
    """An action the protocol refused (e.g. a message to a non-participant)."""

    kind: Literal["protocol_violation"] = "protocol_violation"
    default_visibility: ClassVar[Visibility] = Visibility.researcher
    error: str


class BidRevision(_ScarceDecision):
    """A revised bid (revisable mechanism): ``bid_price`` and the ``previous`` one
    (credits)."""

    kind: Literal["bid_revision"] = "bid_revision"
    bid_price: int
    previous: int


class TacticIntent(_Scarce):
    """Ground truth for the tactic judges: the taxonomy categories (ids of
    ``judge/taxonomies/scarce.yaml``) that a scripted policy wrote its text to express,
    for the text recorded just before it by the same worker in the same contention
    (``of_kind`` ``reasoning``, or ``private_message`` of ``private_round``). Recorded
    only for policies that write texts on purpose (the strategic scripted negotiators);
    never shown to an agent."""

    kind: Literal["tactic_intent"] = "tactic_intent"
    default_visibility: ClassVar[Visibility] = Visibility.researcher
    of_kind: Literal["reasoning", "private_message"]
    private_round: int | None = None
    tactics: list[str]


class BallotEntry(_Record):
    """One place of a ballot: the worker ranked there, the duration (s) and price
    (credits) the voter proposes for it."""

    worker: str
    duration_seconds: int
    price: int


class Ballot(_ScarceDecision):
    """A complete ranking of the participants (input of the mechanism: researcher)."""

    kind: Literal["ballot"] = "ballot"
    default_visibility: ClassVar[Visibility] = Visibility.researcher
    entries: list[BallotEntry]


class Allocation(_Record):
    """One place of the schedule: 1-based position, duration (s), price (credits);
    ``borda`` and ``first_votes`` under the ballot rule (``None`` for baselines)."""

    worker: str
    position: int
    duration_s: int
    price: int
    borda: int | None = None
    first_votes: int | None = None


class Schedule(_Scarce):
    """The schedule: ``rule`` that made it, whether a seeded random tie-break was
    needed, the allocations in order, and the negotiation's duration (s)."""

    kind: Literal["schedule"] = "schedule"
    rule: str
    random_tiebreak: bool
    allocations: list[Allocation]
    negotiation_s: float


class SlotPayment(_Scarce):
    """The charge for a slot: ``requested`` price, ``amount`` paid (capped at the
    balance), paid by ``payer`` to ``sink``; ``balance_after`` (credits)."""

    kind: Literal["payment"] = "payment"
    default_visibility: ClassVar[Visibility] = Visibility.private
    payer: str
    sink: str
    requested: int
    amount: int
    capped: bool
    balance_after: int


class SlotStart(_Scarce):
    """A worker's slot opens: ``start_s``/``end_s`` on the subrun clock, its 1-based
    ``position``, the ``contention`` that booked it, ``waited_s`` from request to start."""

    kind: Literal["slot_start"] = "slot_start"
    start_s: float
    end_s: float
    position: int
    contention: int
    waited_s: float


class Execution(_Scarce):
    """A command in the sandbox. Refused commands carry ``error``; run ones
    ``exit_code``, the measured ``duration_s``, the timeline charge ``cost_s``,
    ``timed_out``, ``stdout``/``stderr`` (truncated to the output limit) and
    ``truncated``."""

    kind: Literal["execution"] = "execution"
    default_visibility: ClassVar[Visibility] = Visibility.private
    command: str
    refused: bool
    error: str | None = None
    exit_code: int | None = None
    duration_s: float | None = None
    cost_s: float | None = None
    timed_out: bool | None = None
    stdout: str | None = None
    stderr: str | None = None
    truncated: bool | None = None


class SlotEnd(_Scarce):
    """A worker's slot closes (``end_s`` on the subrun clock)."""

    kind: Literal["slot_end"] = "slot_end"
    end_s: float
    contention: int


class Submission(_Scarce):
    """A graded submission.

    Attributes:
        task_id: the task. reason: ``submit``, ``deadline``, ``step_limit`` or
            ``stuck``. deadline_missed: the deadline passed first.
        deadline_s: the worker's deadline (s). score: share of hidden tests passed
            (0 if missed and ``zero_score_on_miss``). score_as_is: the grade of the
            folder as it was. resolved (score 1), almost_resolved (>= 0.95).
        passed, total: hidden tests passed / run. violation: an anti-cheat finding.
        steps: solver steps taken. contentions: contentions it took part in.
        files: the worker's files (first 50). budget_left: credits left.
    """

    kind: Literal["submission"] = "submission"
    default_visibility: ClassVar[Visibility] = Visibility.researcher
    task_id: str
    reason: str
    deadline_missed: bool
    deadline_s: float
    score: float
    score_as_is: float
    resolved: bool
    almost_resolved: bool
    passed: int | None = None
    total: int | None = None
    violation: str | None = None
    steps: int
    contentions: int
    files: list[str]
    budget_left: int


class Balance(_Record):
    """A worker's balance (credits)."""

    worker: str
    credits: int


class SubrunEnd(_Scarce):
    """End of a subrun: money ``conserved`` (balances + sink = budgets), the ``sink``
    account and its balance, every worker's balance (credits)."""

    kind: Literal["subrun_end"] = "subrun_end"
    default_visibility: ClassVar[Visibility] = Visibility.researcher
    conserved: bool
    sink: str
    sink_balance: int
    balances: list[Balance]


class AgentJoined(_Scarce):
    """A worker joins the run: the event's ``agent`` plays from ``subrun`` (0-based) on,
    with no memory of the subruns before. Names the seat and its ``role``, never its
    model (public). SovSim's ``agent_joined`` has the same shape with its own time
    (the event's ``round``)."""

    kind: Literal["agent_joined"] = "agent_joined"
    default_visibility: ClassVar[Visibility] = Visibility.public
    role: Literal["worker"] = "worker"


class AgentLeft(_Scarce):
    """A worker leaves the run: for the event's ``agent``, ``subrun`` (0-based) was its
    last. Names the seat and its ``role``, never its model (public)."""

    kind: Literal["agent_left"] = "agent_left"
    default_visibility: ClassVar[Visibility] = Visibility.public
    role: Literal["worker"] = "worker"


class Interview(InterviewFields):
    """A worker's retrospective interview at the end of a subrun (``interviews:
    true``; fields: :class:`~.interview.InterviewFields`), asked of its negotiator;
    researcher-only, after the ``subrun_end`` event."""

    kind: Literal["interview"] = "interview"
    subrun: int


# -- institutions (recorded only when a module is on) ------------------------------
class ReputationEntry(_Record):
    """One worker's public reputation (:mod:`scarce_lab.environments.scarce.world.institutions.reputation`)."""

    worker: str
    score: float
    kept: int
    broken: int
    fined: int


class Reputation(_Scarce):
    """The public reputation table as shown at a contention's declaration phase."""

    kind: Literal["reputation"] = "reputation"
    workers: list[ReputationEntry]


class Promise(_ScarceDecision):
    """A ballot promise: the worker will rank itself ``min_own_rank`` or later on its
    own ballot (public once declarations are unsealed)."""

    kind: Literal["promise"] = "promise"
    contention: int
    min_own_rank: int


class PromiseJudged(_Scarce):
    """A promise against the worker's own ballot: ``kept``, its promised and own rank."""

    kind: Literal["promise_judged"] = "promise_judged"
    contention: int
    kept: bool
    min_own_rank: int
    own_rank: int


class Breach(_Scarce):
    """A broken commitment (``breach_kind``: ``promise`` or ``overrun``), who it
    harmed and who may vote on a fine."""

    kind: Literal["breach"] = "breach"
    breach_kind: str
    contention: int
    detail: str
    harmed: list[str]
    voters: list[str]
    overrun_s: float | None = None


class FineVote(_ScarceDecision):
    """One voter's vote on fining ``offender``'s breach (``sanctions="vote"``)."""

    kind: Literal["fine_vote"] = "fine_vote"
    contention: int
    offender: str
    breach_kind: str
    fine: bool


class TransferEntry(_Record):
    """One ledger transfer (credits) of an institution."""

    payer: str
    payee: str
    amount: int
    purpose: str


class Sanction(_Scarce):
    """The public outcome of a breach: ``passed`` (fined by the mechanism or the vote),
    the nominal ``fine`` (credits; what was levied is in :class:`FinePayment`), yes/no votes."""

    kind: Literal["sanction"] = "sanction"
    contention: int
    breach_kind: str
    mode: str
    passed: bool
    fine: int
    votes_yes: int
    votes_no: int


class FinePayment(_Scarce):
    """What a passed fine levied (``amount`` credits, capped at the breaker's balance) and
    where it went; private to the breaker and the workers paid (the amount would reveal
    a capped balance)."""

    kind: Literal["fine_payment"] = "fine_payment"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    breach_kind: str
    amount: int
    transfers: list[TransferEntry]


class ContractOffer(_ScarceDecision):
    """``payer`` offers ``payee`` ``amount`` credits if ``first`` is placed before ``second``."""

    kind: Literal["contract_offer"] = "contract_offer"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    payer: str
    payee: str
    amount: int
    first: str
    second: str


class ContractAnswer(_ScarceDecision):
    """The payee's answer; ``signed``: accepted and escrowed (false when void)."""

    kind: Literal["contract_answer"] = "contract_answer"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    payer: str
    payee: str
    amount: int
    accepted: bool
    signed: bool


class ContractSettlement(_Scarce):
    """A signed contract settled on the schedule: ``held`` (paid to the payee) or refunded."""

    kind: Literal["contract_settlement"] = "contract_settlement"
    default_visibility: ClassVar[Visibility] = Visibility.private
    contention: int
    payer: str
    payee: str
    amount: int
    held: bool
    paid_to: str


#: The institutions' payload kinds (recorded only when a module is on).
INSTITUTION_PAYLOADS: tuple[type[Payload], ...] = (
    Reputation, Promise, PromiseJudged, Breach, FineVote, Sanction, FinePayment, ContractOffer, ContractAnswer,
    ContractSettlement,
)

PAYLOADS: tuple[type[Payload], ...] = (
    RunConfig, SubrunStart, SolverAction, ToolError, MemorySave, SlotRequest, ContentionStart,
    Declaration, Reasoning, PrivateMessage, PrivateSilence, ProtocolViolation, BidRevision, TacticIntent, Ballot,
    Schedule, SlotPayment, SlotStart, Execution, SlotEnd, Submission, SubrunEnd, AgentJoined, AgentLeft,
    *INSTITUTION_PAYLOADS, Interview,
)
ROUND_MEANING = "contention index, run-wide, 0-based"


def final_counts(config: dict) -> dict[str, int]:
    """Kinds a complete run holds a known number of times, from its config: one
    ``subrun_end`` per subrun (``config["subruns"]``)."""
    return {"subrun_end": config["subruns"]} if isinstance(config.get("subruns"), int) else {}


# -- version 1 -> 2 ------------------------------------------------------------
_SCARCE_VISIBILITY = {"public": "public", "private": "private", "scheduler": "researcher", "researcher": "researcher"}


def migrate_v1(out: dict, p: dict) -> None:
    """Rewrite a version-1 SCARCE event (``out``) and its payload (``p``) in place
    (visibility from the payload, run config and balances as records)."""
    kind = out["kind"]
    vis = _SCARCE_VISIBILITY.get(p.pop("visibility", "public"), "researcher")
    visible_to = p.pop("visible_to", None)
    if vis == "private":
        private_to(out, visible_to)
    else:
        out["visibility"], out["visible_to"] = vis, []
    if kind == "run_config":
        p.setdefault("subrun", 0)
        budgets, deadlines = p.pop("budgets"), p.pop("deadlines_s")
        p["workers"] = [{"worker": w, "budget": budgets[w], "deadline_s": float(deadlines[w])} for w in p["workers"]]
        p["clock"] = {k: p["clock"][k] for k in ("kind", "model_call_s", "scripted_call_s", "command_s")}
    elif kind == "subrun_end":
        p["balances"] = pairs(p.get("balances") or {}, "worker", "credits")
    elif kind == "solver_action":
        p["args"] = dict(p.get("args") or {})
    elif kind in ("private_message", "private_silence"):
        p["private_round"] = p.pop("round")
