"""Counterfactual forks: branch a recorded run at a step, intervene, continue live.

The contract every environment's hook follows (the core knows no environment):

- **Replay, not checkpoints.** A fork re-runs its parent's config with the parent's
  run seed; every model call of the prefix (steps ``< at``) is answered from the
  parent's recorded ``llm_calls.jsonl`` by :class:`~scarce_lab.forks.replay.Replay`
  (read through the read gate: data, never code; the parent's ``.checkpoint.pkl`` is
  never read). :class:`~scarce_lab.forks.replay.ReplayingClient` wraps the run's normal
  client: while it is not live, a call without a recorded answer raises
  :class:`ForkDivergedError` (never a live call in the prefix); replayed calls are
  recorded like cache hits (``cache_hit=True``, ``cost_usd=0``: never new spend) and
  counted in the fork manifest's ``notes["fork"]["replayed_calls"]``.
- **The fork is a config field.** ``ExperimentConfig.fork: ForkSpec | None``. Its
  condition settings are ``fork.at`` and ``fork.intervention.*`` (so a fork is never
  pooled with its parent, nor forks of another step or intervention with each other);
  ``fork.parent``, ``fork.parent_digest`` and ``fork.seed`` are in the manifest's
  config, not the condition (forks of several parents and seeds are replicates of one
  condition). The run id must differ per fork seed: an environment's ``run_id`` appends
  :meth:`~scarce_lab.config.base.ExperimentConfig.fork_tag` (``""`` without a fork).
- **Seeds.** Runners call :func:`scarce_lab.runtime.step_seed` ``(cfg, step, *parts)``
  instead of ``derive_seed(cfg.run_seed, step, *parts)``: the same seed as before for a
  run without a fork, for a step before the fork, and for fork seed 0; re-seeded
  (``derive_seed(run_seed, "fork", j, step, *parts)``) from the fork step on for seed
  ``j > 0``.
- **The environment's hook** (:class:`scarce_lab.registry.EnvironmentSpec`):
  ``fork_steps(run_dir) -> list[int]`` (the steps a fork may start at),
  ``fork_check(config, parent_manifest, intervention, at) -> None`` (raises
  :class:`ForkError` naming the step, seat or rule and what exists; called before any
  run starts), and its ``run(config, out, replay=<Replay>)``: steps ``< at`` with the
  replaying client, then at step ``at`` it applies the intervention (its own code) and
  calls ``client.go_live()``. An intervention reaches the agents only through what the
  world shows them.
- **Faces.** :func:`scarce_lab.forks.launch.fork` (``sl.fork``, ``scarce-lab fork``)
  and :func:`scarce_lab.forks.effects.effects` (``sl.effects``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .interventions import (
    KINDS,
    AddAgent,
    Intervention,
    NoIntervention,
    RemoveAgent,
    ReplaceDecision,
    ReplaceMessage,
    Rule,
    SeatModel,
    as_intervention,
    parse_intervention,
)

__all__ = [
    "KINDS", "AddAgent", "ForkDivergedError", "ForkError", "ForkSpec", "Intervention", "NoIntervention",
    "RemoveAgent", "ReplaceDecision", "ReplaceMessage", "Rule", "SeatModel", "as_intervention",
    "parse_intervention",
]


class ForkError(ValueError):
    """A fork that cannot be made: a step the parent does not have, a seat, rule or agent
    it lacks, an intervention kind the environment does not support, a parent whose
    files changed since the fork was planned (digest). The message names what was asked
    and what exists."""


class ForkDivergedError(RuntimeError):
    """A prefix model call the parent never made (no recorded answer): the replay no
    longer follows the parent. The message names the run, step, agent and call."""


class ForkSpec(BaseModel):
    """Where a run branches from its parent and what changes there.

    Attributes:
        parent: the parent's run id.
        parent_digest: SHA-256 (hex) of the parent's ``events.jsonl`` then
            ``llm_calls.jsonl`` (:func:`scarce_lab.forks.replay.parent_digest`); a parent
            whose files differ is refused.
        at: the step the fork starts at (the environment's unit: SovSim round, SCARCE
            contention, Economy episode); steps before it are the parent's, replayed.
        seed: 0 keeps the parent's seed stream (with ``none`` the parent again); ``j > 0``
            re-seeds every step ``>= at`` (:func:`scarce_lab.runtime.step_seed`).
        intervention: what changes at ``at`` (:mod:`scarce_lab.forks.interventions`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    parent: str = Field(min_length=1)
    parent_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    at: int = Field(ge=0)
    seed: int = Field(0, ge=0)
    intervention: Intervention = Field(default_factory=NoIntervention)

    def label(self) -> str:
        """``fork@<at>:<kind>[:<target>]``, as condition labels show it
        (:func:`scarce_lab.data.tables.fork_label`)."""
        from ..data.tables import fork_label

        iv = {f"fork.intervention.{k}": v for k, v in self.intervention.model_dump(mode="json").items()}
        return fork_label({"fork.at": self.at, **iv}) or ""
