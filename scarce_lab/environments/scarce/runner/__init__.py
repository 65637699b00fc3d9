"""Run SCARCE: N workers, up to 4 subruns, four-phase contentions for one sandbox.

:mod:`.play` (:func:`run_scarce`, :class:`ScarceRunner`) plays one
:mod:`scarce_lab.environments.scarce.config` around the pure world, whose rules (solver
steps, contentions, slots, payments, deadlines, time) are documented in
:mod:`scarce_lab.environments.scarce.world.auction`, and records its events (kinds:
:mod:`scarce_lab.environments.scarce.events`), committed after every contention and at
the end of every subrun (:mod:`.checkpoint`). :mod:`.io` is the one adapter to the
sandbox, file tools and grading; :mod:`.institutions` asks the institutions' questions.
"""

from ..config import ScarceConfig
from .play import ENVIRONMENT, REAL_WINDOW_S, ScarceRunner, run_scarce

__all__ = ["ENVIRONMENT", "REAL_WINDOW_S", "ScarceConfig", "ScarceRunner", "run_scarce"]
