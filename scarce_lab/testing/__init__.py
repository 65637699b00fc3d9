"""Conformance suite that every environment runs (``tests/test_conformance.py``), and
that a new environment should pass before it ships.

Three properties, checked by playing each pure world with one generic policy that
chooses only from the legal actions each observation carries
(:class:`~.core.LegalPolicy`, extended by each environment with its own choices:
random values and the edges of each legal range; no model, no sandbox, no files):

- **legality**: at every decision an action just outside the legal set is tried and
  the world must refuse it (the trace fails naming the action when it is accepted),
  and every action the policy draws from the legal set is accepted;

- **determinism**: the same seed gives the same trajectory (every observation and every
  outcome, compared as JSON);
- **privacy**: no observation of one agent holds another agent's private fields. Each
  harness plants distinctive *canaries* in the private state (budgets, deadlines,
  private messages, a king's true pool) and reports, per observation, which other
  agents' canaries it contains; the suite fails on any. Positive controls check that
  every agent does see its own private state, so a check that cannot fail fails.

Use::

    from scarce_lab.testing import HARNESSES, check_environment
    check_environment(HARNESSES["scarce"])          # raises AssertionError on a breach

A new environment's spec names its play (``EnvironmentSpec.harness``);
:data:`HARNESSES` lists every registered environment's.

Layout: :mod:`.core` holds the shared machinery (its docstring says what lies where).
"""

from __future__ import annotations

from .core import (
    HARNESSES,
    LegalPolicy,
    Observation,
    Trace,
    check_determinism,
    check_environment,
    check_privacy,
    refused,
)

__all__ = ["HARNESSES", "LegalPolicy", "Observation", "Trace", "check_determinism", "check_environment",
           "check_privacy", "refused"]

