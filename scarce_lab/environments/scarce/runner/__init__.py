"""Run SCARCE: N workers, up to 4 subruns, four-phase contentions for one sandbox.

Flow of one run::

    ScarceConfig -> WorldRules -> ScarceWorld (pure: envs/scarce/world.py)
      for each subrun: tasks + deadlines + budgets; the world says what happens next
        - a worker's solver takes a step (a model call or scripted step costs
          ClockConfig.call_cost; a command costs ClockConfig.command_cost)
        - when the sandbox is free and requests are pending, a contention runs
          (declaration, reasoning, private messages, revision, ballots -> schedule;
          each phase costs the slowest participant's decision time), payments are
          charged, and the scheduled slots are booked back to back; the first starts
          at once, the others wait in the queue (waiting counts against deadlines)
        - a worker stops when it submits, when its step budget is spent (automatic
          submission) or when its deadline passes (graded as is, flagged as missed)
      the next subrun starts when every worker has finished or missed its deadline.
    -> RunRecorder events (see :mod:`scarce_lab.environments.scarce.tables` for every kind),
       committed after every contention and at the end of every subrun.

Modules: :mod:`scarce_lab.environments.scarce.config` (the settings), :mod:`.runner` (agents, I/O
and recording around the world), :mod:`.io` (sandbox, file tools and grading, in one
adapter).
The rules are documented in :mod:`scarce_lab.environments.scarce.world.auction`.
"""

from ..config import ScarceConfig, run_id_for
from .play import ENVIRONMENT, REAL_WINDOW_S, ScarceRunner, run_scarce, sweep

__all__ = ["ENVIRONMENT", "REAL_WINDOW_S", "ScarceConfig", "ScarceRunner", "run_id_for", "run_scarce", "sweep"]
