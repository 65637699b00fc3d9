"""What a SCARCE agent is shown: the per-worker views now live in the environment
(:mod:`scarce_lab.envs.slots.observations`, built by
:class:`scarce_lab.envs.slots.world.ScarceWorld`); re-exported here for the agents.
"""

from __future__ import annotations

from ...envs.slots.observations import NegotiationView, SolverObservation

__all__ = ["NegotiationView", "SolverObservation"]
