"""What a SCARCE agent is shown: the per-worker views now live in the environment
(:mod:`scarce_lab.environments.scarce.world.observations`, built by
:class:`scarce_lab.environments.scarce.world.auction.ScarceWorld`); re-exported here for the agents.
"""

from __future__ import annotations

from ..world.observations import NegotiationView, SolverObservation

__all__ = ["NegotiationView", "SolverObservation"]
