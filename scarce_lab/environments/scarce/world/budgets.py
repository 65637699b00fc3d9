"""Private budgets and payments for SCARCE slot auctions (pure, no I/O).

Every worker starts a subrun with a private budget in integer *credits* (default
1000). A payment moves credits from a worker to the recorded
*sink* (the auctioneer; credits are never created or destroyed):

    sum(initial budgets) == sum(current balances) + sink balance + escrow   (conservation)
    total paid + net transfers into the sink == sink balance                 (per ledger)

Transfers (:meth:`Ledger.transfer`) move credits between workers, the sink (the
"bank") and the :data:`ESCROW` account: fines and contract escrows of the optional
institutions (:mod:`.institutions`). Without institutions there are none and the
two lines above read as before (escrow 0, no transfers).

Nobody can pay more than it has: :meth:`Ledger.charge_capped` pays
``min(price, balance)`` and records the requested price next to the amount paid;
:meth:`Ledger.debit` refuses an overdraft with :class:`InsufficientFunds`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_BUDGET = 1000
SINK = "auctioneer"
#: The account that holds escrowed contract money between signing and settlement
#: (:mod:`.institutions.contracts`); empty whenever no contract is open.
ESCROW = "escrow"


class InsufficientFunds(ValueError):
    """A debit larger than the payer's balance."""


@dataclass(frozen=True)
class Payment:
    """One transfer: ``amount`` credits from ``payer`` to ``sink``.

    ``requested`` is the price the mechanism asked for (credits); ``amount`` is what
    was paid (``<= requested``, ``<= balance_before``); ``ref`` names the contention.
    """

    payer: str
    sink: str
    requested: int
    amount: int
    balance_before: int
    balance_after: int
    ref: str = ""

    @property
    def capped(self) -> bool:
        """True when the payer could not afford the requested price."""
        return self.amount < self.requested


@dataclass(frozen=True)
class Transfer:
    """``amount`` credits from ``payer`` to ``payee`` (a worker, the sink or
    :data:`ESCROW`); ``purpose`` says why (``fine``, ``escrow``, ``contract_payout``,
    ``contract_refund``); ``ref`` names the contention or slot."""

    payer: str
    payee: str
    amount: int
    purpose: str
    ref: str = ""


@dataclass
class Ledger:
    """Integer balances for one subrun plus the sink that receives payments.

    Args:
        budgets: worker -> initial budget in credits (each an int >= 0).
        sink: name of the account that receives payments (default ``"auctioneer"``).

    Raises:
        ValueError: a budget is not a non-negative integer, or a worker is named
            like the sink.
    """

    budgets: dict[str, int]
    sink: str = SINK
    balances: dict[str, int] = field(init=False)
    sink_balance: int = field(init=False, default=0)
    payments: list[Payment] = field(init=False, default_factory=list)
    escrow_balance: int = field(init=False, default=0)
    transfers: list[Transfer] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        for worker, b in self.budgets.items():
            if isinstance(b, bool) or not isinstance(b, int) or b < 0:
                raise ValueError(f"budget of {worker!r} must be an integer >= 0 credits, got {b!r}")
            if worker in (self.sink, ESCROW):
                raise ValueError(f"worker name {worker!r} collides with the {worker} account")
        self.budgets = dict(self.budgets)
        self.balances = dict(self.budgets)

    def __setstate__(self, state: dict) -> None:
        """A ledger pickled before transfers existed (a checkpoint of an older run)
        gets an empty escrow and no transfers."""
        state.setdefault("escrow_balance", 0)
        state.setdefault("transfers", [])
        self.__dict__.update(state)

    def balance(self, worker: str) -> int:
        """Current balance of ``worker`` in credits.

        Raises:
            KeyError: unknown worker.
        """
        if worker not in self.balances:
            raise KeyError(f"unknown worker {worker!r} (known: {sorted(self.balances)})")
        return self.balances[worker]

    def debit(self, worker: str, amount: int, ref: str = "") -> Payment:
        """Move exactly ``amount`` credits from ``worker`` to the sink.

        Raises:
            ValueError: ``amount`` is not an integer >= 0.
            InsufficientFunds: ``amount`` exceeds the balance.
        """
        self._check_amount(amount)
        before = self.balance(worker)
        if amount > before:
            raise InsufficientFunds(f"{worker!r} cannot pay {amount} credits: balance is {before}")
        return self._transfer(worker, amount, amount, ref)

    def charge_capped(self, worker: str, price: int, ref: str = "") -> Payment:
        """Charge ``min(price, balance)``: nobody pays more than it has.

        Raises:
            ValueError: ``price`` is not an integer >= 0.
        """
        self._check_amount(price)
        amount = min(price, self.balance(worker))
        return self._transfer(worker, price, amount, ref)

    @property
    def total_paid(self) -> int:
        """Sum of all amounts paid (credits)."""
        return sum(p.amount for p in self.payments)

    def conserved(self) -> bool:
        """True when initial total == balances + sink + escrow, paid + net transfers
        into the sink == sink balance, and no account is negative."""
        into_sink = sum(t.amount for t in self.transfers if t.payee == self.sink) - sum(
            t.amount for t in self.transfers if t.payer == self.sink)
        return (
            sum(self.budgets.values()) == sum(self.balances.values()) + self.sink_balance + self.escrow_balance
            and self.total_paid + into_sink == self.sink_balance
            and all(b >= 0 for b in self.balances.values())
            and self.escrow_balance >= 0
        )

    def account(self, name: str) -> int:
        """Balance of a worker, the sink or :data:`ESCROW` (credits).

        Raises:
            KeyError: unknown account.
        """
        if name == self.sink:
            return self.sink_balance
        if name == ESCROW:
            return self.escrow_balance
        return self.balance(name)

    def transfer(self, payer: str, payee: str, amount: int, *, purpose: str, ref: str = "") -> Transfer:
        """Move exactly ``amount`` credits from ``payer`` to ``payee`` (workers, the
        sink or :data:`ESCROW`).

        Raises:
            ValueError: ``amount`` is not an integer >= 0, or payer == payee.
            KeyError: unknown account.
            InsufficientFunds: ``amount`` exceeds the payer's balance.
        """
        self._check_amount(amount)
        if payer == payee:
            raise ValueError(f"transfer: payer and payee are both {payer!r}")
        self.account(payee)  # the payee account must exist (KeyError otherwise)
        have = self.account(payer)
        if amount > have:
            raise InsufficientFunds(f"{payer!r} cannot transfer {amount} credits: balance is {have}")
        self._add(payer, -amount)
        self._add(payee, amount)
        t = Transfer(payer, payee, amount, purpose, ref)
        self.transfers.append(t)
        return t

    # -- internals ---------------------------------------------------------------
    @staticmethod
    def _check_amount(amount: int) -> None:
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise ValueError(f"payment amount must be an integer >= 0 credits, got {amount!r}")

    def _add(self, name: str, delta: int) -> None:
        if name == self.sink:
            self.sink_balance += delta
        elif name == ESCROW:
            self.escrow_balance += delta
        else:
            self.balances[name] += delta

    def _transfer(self, worker: str, requested: int, amount: int, ref: str) -> Payment:
        before = self.balances[worker]
        self.balances[worker] = before - amount
        self.sink_balance += amount
        p = Payment(worker, self.sink, requested, amount, before, before - amount, ref)
        self.payments.append(p)
        return p
