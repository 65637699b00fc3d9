"""Money ledger of the economy: integer credits, every transfer recorded.

Accounts are the living agents plus two system accounts:

- ``bank``: issues initial wealth and rewards, receives the first payment of each
  episode (there is no earlier winner to sell the world), and absorbs the balance of
  a removed agent (its estate if positive, its debt if negative). The bank may go
  negative: a negative bank balance is the money it has issued.
- ``rent_sink``: receives rent; nothing ever leaves it.

Invariant (tested): the sum of all open balances is always zero, because money only
moves by :meth:`Ledger.transfer`. This is the conservation of money that Baum &
Durdanovic (2000, "Evolution of cooperative problem solving in an artificial
economy", sec. 2) identify as what makes credit assignment accurate.
"""

from __future__ import annotations

from dataclasses import dataclass

BANK = "bank"
RENT_SINK = "rent_sink"
SYSTEM_ACCOUNTS = (BANK, RENT_SINK)


class LedgerError(ValueError):
    """A transfer or account operation that the ledger refuses (names the field)."""


@dataclass(frozen=True)
class Transfer:
    """One movement of ``amount`` credits (int, >= 0) from ``src`` to ``dst``."""

    src: str
    dst: str
    amount: int
    reason: str


class Ledger:
    """Integer balances (credits) with a zero-sum invariant.

    Raises:
        LedgerError: unknown account, duplicate account, non-integer or negative amount.
    """

    def __init__(self) -> None:
        self._balances: dict[str, int] = {BANK: 0, RENT_SINK: 0}

    # -- accounts -------------------------------------------------------------------
    def open(self, account: str) -> None:
        """Open an empty account (balance 0)."""
        if account in self._balances:
            raise LedgerError(f"account already open: {account!r}")
        self._balances[account] = 0

    def close(self, account: str) -> Transfer | None:
        """Close an agent account; its balance (positive or negative) goes to the bank.

        Returns the settling transfer (``estate`` or ``debt_write_off``), or None for a
        zero balance.
        """
        if account in SYSTEM_ACCOUNTS:
            raise LedgerError(f"cannot close system account {account!r}")
        bal = self.balance(account)
        tr = None
        if bal > 0:
            tr = self.transfer(account, BANK, bal, "estate")
        elif bal < 0:
            tr = self.transfer(BANK, account, -bal, "debt_write_off")
        del self._balances[account]
        return tr

    def balance(self, account: str) -> int:
        """Balance of ``account`` in credits."""
        try:
            return self._balances[account]
        except KeyError:
            raise LedgerError(f"unknown account: {account!r}") from None

    def balances(self) -> dict[str, int]:
        """Copy of every open balance (credits), system accounts included."""
        return dict(self._balances)

    def total(self) -> int:
        """Sum of all open balances; always 0 (the conservation invariant)."""
        return sum(self._balances.values())

    # -- money ----------------------------------------------------------------------
    def transfer(self, src: str, dst: str, amount: int, reason: str) -> Transfer:
        """Move ``amount`` credits from ``src`` to ``dst`` (balances may go negative).

        Raises:
            LedgerError: ``amount`` is not a non-negative int, or an account is unknown.
        """
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise LedgerError(f"amount must be an int number of credits, got {amount!r}")
        if amount < 0:
            raise LedgerError(f"amount must be >= 0 credits, got {amount}")
        for name in (src, dst):
            if name not in self._balances:
                raise LedgerError(f"unknown account: {name!r}")
        self._balances[src] -= amount
        self._balances[dst] += amount
        return Transfer(src, dst, amount, reason)
