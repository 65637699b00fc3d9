"""Contracts: an escrowed side payment between two participants of a contention,
enforced by the mechanism on an order of the queue (pure; no I/O). Source: the SCARCE
paper reports agents striking private side deals the mechanism cannot enforce; making
them enforceable is this project's design.

Rules:

- After the private phase of a negotiated contention each participant (the *payer*)
  may offer one contract (:class:`Offer`) to another participant (the *payee*):
  "I pay you ``amount`` credits if ``first`` is placed before ``second`` in the
  schedule", where ``{first, second} == {payer, payee}`` and
  ``1 <= amount <= min(max_contract, payer's balance)``.
- The payee accepts or declines. On acceptance (*signing*) ``amount`` moves from the
  payer to the escrow account (:data:`~..budgets.ESCROW`); an offer the payer can no
  longer cover at signing is void.
- At settlement (right after the slot payments of that contention) a signed contract
  whose condition holds in the schedule pays the escrow to the payee, otherwise it is
  refunded to the payer. Escrow is empty again after every settlement.

Offers, signatures and settlements are private to the two parties (a void signature
tells the payee the payer could not cover the amount: by design, it is party to it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..budgets import ESCROW, InsufficientFunds, Ledger, Transfer
from ..protocol import ProtocolError


@dataclass(frozen=True)
class Offer:
    """A contract offer in contention ``contention``: ``payer`` pays ``payee``
    ``amount`` credits if ``first`` precedes ``second`` in the schedule."""

    contention: int
    payer: str
    payee: str
    amount: int
    first: str
    second: str

    def public(self) -> dict:
        return {"contention": self.contention, "payer": self.payer, "payee": self.payee, "amount": self.amount,
                "condition": f"{self.first} before {self.second}"}


def check_offer(contention: int, payer: str, payee: str, amount: int, first: str, participants: Sequence[str],
                max_amount: int) -> Offer:
    """A validated :class:`Offer` (``second`` is the other party).

    Raises:
        ProtocolError: payee not another participant, ``first`` not one of the two
            parties, or ``amount`` not an integer in ``1..max_amount`` (naming the value).
    """
    if payer not in participants:
        raise ProtocolError(f"contract: payer {payer!r} is not a participant ({list(participants)})")
    if payee not in participants or payee == payer:
        raise ProtocolError(f"contract: payee must be another participant, got {payee!r}")
    if first not in (payer, payee):
        raise ProtocolError(f"contract: first must be {payer!r} or {payee!r}, got {first!r}")
    if isinstance(amount, bool) or not isinstance(amount, int) or not 1 <= amount <= max_amount:
        raise ProtocolError(f"contract: amount must be an integer in 1..{max_amount} credits, got {amount!r}")
    return Offer(contention, payer, payee, amount, first, payee if first == payer else payer)


def sign(ledger: Ledger, offer: Offer) -> Transfer | None:
    """Escrow the offer's amount from the payer; ``None`` (void) when it cannot pay."""
    try:
        return ledger.transfer(offer.payer, ESCROW, offer.amount, purpose="escrow", ref=f"c{offer.contention}")
    except InsufficientFunds:
        return None


def settle(ledger: Ledger, offer: Offer, order: Sequence[str]) -> tuple[bool, Transfer]:
    """Pay or refund a signed contract on the schedule's ``order``: returns
    ``(condition held, transfer)``."""
    held = list(order).index(offer.first) < list(order).index(offer.second)
    to = offer.payee if held else offer.payer
    return held, ledger.transfer(ESCROW, to, offer.amount, purpose="contract_payout" if held else "contract_refund",
                                 ref=f"c{offer.contention}")
