"""What a SCARCE agent is shown: the per-worker views now live in the environment
(:mod:`scarce_lab.envs.scarce.observations`, built by
:class:`scarce_lab.envs.scarce.world.ScarceWorld`); re-exported here for the agents.
"""

from __future__ import annotations

from ...envs.scarce.observations import NegotiationView, SolverObservation

__all__ = ["NegotiationView", "SolverObservation"]
