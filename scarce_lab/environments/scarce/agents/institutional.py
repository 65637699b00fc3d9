"""Scripted SCARCE negotiators that exercise the auction's institutions (sanctions,
public reputation, contracts; :mod:`scarce_lab.environments.scarce.world.institutions`): a defector
that promises and breaks its promise, a sanctioner that keeps its promises and votes to
fine, a contractor that offers and honours enforceable side payments, and a mix of the
three in one run. Policies, not models: their rules are below.
"""

from __future__ import annotations

from scarce_lab.agents.decided import Decided

from ..world.observations import NegotiationView
from .negotiators import ScriptedNegotiatorPolicy, fifo_declaration, ranked_ballot

# -- institutions: policies that exercise sanctions, reputation and contracts ----------
#: Scripted negotiators for the auction's institutions (scarce_lab.environments.scarce.world.institutions):
#: ``promise-breaker`` promises to rank itself last (``min_own_rank = n``) and then ranks
#: itself first (a defector), votes against every fine, offers and accepts no contract;
#: ``sanctioner`` promises ``max(2, its request-time position)`` and keeps it (its FIFO
#: ballot with itself moved down to that rank), votes to fine every breach by another
#: worker, accepts every contract offer; ``contractor`` offers the participant just ahead
#: of it in request-time order ``max(1, balance // 10)`` credits (capped by the legal
#: maximum) if it goes first, accepts offers of at least 1 credit, honours its signed
#: contracts in its ballot (a contract's ``first`` ahead of its ``second``), makes no
#: promise and votes to fine breaches that harmed it. Every other phase is truthful
#: FIFO (:func:`~.negotiators.fifo_declaration`, public reasoning, no private message,
#: the current bid). With every institution off they are FIFO negotiators whose
#: ballots differ as stated (the promise-breaker ranks itself first).
#: ``institution-mix`` plays the three in one run: worker ``w<i>`` plays
#: ``("promise-breaker", "sanctioner", "contractor")[i % 3]`` (from its name's number).
INSTITUTION_ROLES: tuple[str, ...] = ("promise-breaker", "sanctioner", "contractor")
INSTITUTION_NEGOTIATORS: tuple[str, ...] = (*INSTITUTION_ROLES, "institution-mix")


def mix_role(worker: str) -> str:
    """The role ``worker`` plays in ``institution-mix``: by the number in its name.

    Raises:
        ValueError: a worker name without a number.
    """
    digits = "".join(c for c in worker if c.isdigit())
    if not digits:
        raise ValueError(f"institution-mix: worker name {worker!r} has no number to pick a role by")
    return INSTITUTION_ROLES[int(digits) % len(INSTITUTION_ROLES)]


class InstitutionalNegotiator(ScriptedNegotiatorPolicy):
    """A scripted negotiator of :data:`INSTITUTION_NEGOTIATORS` (rules there); holds no
    state between calls (contracts and promises come from the view).

    Raises:
        ValueError: unknown policy name.
    """

    def __init__(self, policy: str, seed: int = 0):
        if policy not in INSTITUTION_NEGOTIATORS:
            raise ValueError(f"institution negotiator must be one of {INSTITUTION_NEGOTIATORS}, got {policy!r}")
        self.policy, self.seed, self.model = policy, seed, f"scripted/{policy}"

    def role(self, worker: str) -> str:
        """The role of ``worker``: the policy, or under ``institution-mix`` :func:`mix_role`
        (which raises ValueError for a worker name without a number)."""
        return mix_role(worker) if self.policy == "institution-mix" else self.policy

    @staticmethod
    def _ranks(view: NegotiationView) -> tuple[int, ...]:
        li = view.legal.institutions
        return li.promise_ranks if li is not None else ()

    def _promised(self, view: NegotiationView) -> int | None:
        ranks = self._ranks(view)
        if not ranks:
            return None
        if self.role(view.worker) == "promise-breaker":
            return ranks[-1]
        if self.role(view.worker) == "sanctioner":
            return min(max(2, view.fifo_position()), ranks[-1])
        return None

    async def declare(self, view):
        return Decided(fifo_declaration(view))

    async def reason(self, view):
        p = self._promised(view)
        tail = f" I promise to rank myself {p} or later." if p else ""
        return Decided(f"[{self.role(view.worker)}] I follow the request order.{tail}")

    async def message(self, view):
        return Decided(None)

    async def revise(self, view):
        return Decided(view.public_bid(view.worker))

    async def ballot(self, view):
        parts = list(view.participants)
        if self.role(view.worker) == "promise-breaker":
            order = [view.worker, *(w for w in parts if w != view.worker)]
        elif self.role(view.worker) == "sanctioner":
            order = [w for w in parts if w != view.worker]
            p = self._promised(view) or view.fifo_position()
            order.insert(max(p, view.fifo_position()) - 1, view.worker)
        else:
            order = list(parts)
            for k in view.contention.get("your_contracts", []):
                first, second = (x.strip() for x in k["condition"].split(" before "))
                if k.get("signed") and first in order and second in order and order.index(first) > order.index(second):
                    order.remove(first)
                    order.insert(order.index(second), first)
        return Decided(ranked_ballot(view, order))

    async def promise(self, view):
        return Decided(self._promised(view))

    async def offer_contract(self, view):
        li = view.legal.institutions
        if self.role(view.worker) != "contractor" or li is None or not li.contract_payees or li.max_contract < 1:
            return Decided(None)
        pos = view.fifo_position()
        if pos == 1:
            return Decided(None)
        ahead = view.participants[pos - 2]
        if ahead not in li.contract_payees:
            return Decided(None)
        return Decided((ahead, min(li.max_contract, max(1, view.own_budget // 10)), view.worker))

    async def answer_contract(self, view, offer):
        if self.role(view.worker) == "promise-breaker":
            return Decided(False)
        return Decided(int(offer.get("amount", 0)) >= 1)

    async def vote_fine(self, view, breach):
        if breach.get("worker") == view.worker or self.role(view.worker) == "promise-breaker":
            return Decided(False)
        if self.role(view.worker) == "sanctioner":
            return Decided(True)
        return Decided(view.worker in breach.get("harmed", ()))
