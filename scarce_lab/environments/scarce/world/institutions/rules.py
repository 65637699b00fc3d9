"""The institutions' condition setting (pure data): which modules are on and their
parameters. Every module is off by default, and with all of them off the world plays
exactly as without this package (no extra decision, event, transfer or view field).

Source of the rules: the SCARCE paper's open questions (do agents develop sanctions
against defectors? do their institutions help or hurt collective output?) motivate
the three modules; the mechanics below (what a commitment is, who is harmed, the
reputation formula, escrowed contracts on a queue order) are this project's design.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Default fine (credits): a tenth of the default subrun budget.
DEFAULT_FINE = 100


class InstitutionRules(BaseModel):
    """Which institutions run in the auction, and how.

    Attributes:
        sanctions: ``off``; ``mechanism`` (every breach of a commitment is fined
            automatically); ``vote`` (a breach is fined when a strict majority of the
            other participants of its contention vote to fine). What a commitment is
            and what a breach is: :mod:`.sanctions`.
        fine: credits a breach costs (capped at the breaker's balance, as payments are).
        fine_to: ``bank`` (the auctioneer's sink) or ``harmed`` (split equally among the
            harmed workers, :mod:`.sanctions`; the indivisible remainder to the bank).
        reputation: a public score per worker (:mod:`.reputation`), shown to every
            participant in the declaration phase.
        contracts: escrowed side payments between two participants, paid when their
            queue-order condition holds in the schedule (:mod:`.contracts`).
        max_contract: largest contract amount (credits); the payer's balance bounds it too.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    sanctions: Literal["off", "mechanism", "vote"] = Field("off", description=(
        "fine broken commitments: off, mechanism (automatic) or vote (a majority of the others)"))
    fine: int = Field(DEFAULT_FINE, ge=0, description="credits one breach is fined (capped at the balance)")
    fine_to: Literal["bank", "harmed"] = Field("bank", description="who receives a fine: the bank or the harmed workers")
    reputation: bool = Field(False, description="a public reputation score per worker, shown when declaring")
    contracts: bool = Field(False, description="escrowed side payments enforced on an order of the queue")
    max_contract: int = Field(500, ge=1, description="largest contract amount (credits)")

    @property
    def on(self) -> bool:
        """Whether any module is on."""
        return self.sanctions != "off" or self.reputation or self.contracts

    @property
    def promises(self) -> bool:
        """Whether negotiators are offered a ballot commitment (sanctions or
        reputation need one to judge)."""
        return self.sanctions != "off" or self.reputation
