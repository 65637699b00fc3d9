"""Economy of Minds forks: a fork starts at an episode (``round``: training episodes, then
evaluation; :func:`fork_steps`).

The prefix is replayed by playing the parent's config again with its seed: model calls
answered from the parent's records (the core's replaying client), scripted agents by
determinism; the gate :func:`scarce_lab.forks.prefix.check_prefix` compares the fork's
events with the parent's before the fork episode starts. At the fork episode:

- ``rule(setting, value)``: an economy setting (``economy.<name>``, e.g. ``economy.rent``,
  or ``ablation``) from that episode on: the economy plays the changed parameters;
- ``seat_model(seat, model)``: ``*`` (every agent, in a run without seats) or a seat of
  the run's ``seats`` plays ``model`` from that episode on (the agents keep their genomes;
  the model must play the task: Blocks World takes scripted rule agents only);
- ``none``: nothing changes.

Seeds (``fork.seed = j > 0``): the auction's tie-breaks, the evolution and the model
policies' call seeds of every episode ``>= at`` come from
:func:`scarce_lab.runtime.step_seed`; the task instances are the parent's (they depend on
the run seed only, so forks are compared on the same problems). ``replace_message``,
``replace_decision``, ``remove_agent`` and ``add_agent`` are refused (see :data:`REFUSED`);
the ``eom-reference`` presets' engine is not forkable.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ..world.core import EconomyConfig

#: Settings a ``rule`` fork may change from the fork episode on.
RULES: tuple[str, ...] = ("ablation", *(f"economy.{k}" for k in EconomyConfig.model_fields if k != "ablation"))
KINDS: tuple[str, ...] = ("none", "rule", "seat_model")
REFUSED: dict[str, str] = {
    "replace_message": "Economy of Minds agents send no messages (they bid and act)",
    "replace_decision": "an Economy of Minds decision is an agent's action inside an episode, not a step "
                        "a fork starts at (fork at the episode and change a rule or a seat's model instead)",
    "remove_agent": "the Economy's population changes only by its own rules (death, birth, exploration); "
                    "set economy.rent or economy.max_agents as a rule instead",
    "add_agent": "a newcomer joins through the config's `newcomer` setting of a new run (its join is "
                 "recorded from the start); the economy's exploration adds agents by its own rule",
}


def _errors():
    from scarce_lab.forks import ForkDivergedError, ForkError

    return ForkError, ForkDivergedError


def fork_steps(run_dir: Path) -> list[int]:
    """The episodes (``round`` of each ``episode_end`` event: training first, then
    evaluation) a fork of the Economy run in ``run_dir`` may start at, read through the
    read gate."""
    from scarce_lab.data.recorder import read_events

    return [e.round for e in read_events(Path(run_dir)) if e.kind == "episode_end"]


def fork_check(config: Any, parent: Any, intervention: Any, at: int, run_dir: Path | None = None) -> None:
    """Refuse an Economy fork that cannot be played, before any run starts.

    Raises:
        ForkError: a kind of :data:`REFUSED` (with the reason), an ``eom-reference``
            preset, an episode the parent did not play (``run_dir`` given: its episodes
            listed; else beyond ``episodes + eval_episodes``), a setting outside
            :data:`RULES`, a seat the run lacks, or a value the config refuses.
    """
    ForkError, _ = _errors()
    kind = intervention.kind
    if kind in REFUSED:
        raise ForkError(f"intervention {kind}: {REFUSED[kind]}")
    if kind not in KINDS:
        raise ForkError(f"intervention {kind}: the Economy of Minds plays {list(KINDS)}")
    if config.preset != "default":
        raise ForkError(f"preset {config.preset}: forks play the default engine only")
    steps = fork_steps(run_dir) if run_dir is not None else list(range(config.episodes + config.eval_episodes))
    if at not in steps:
        raise ForkError(f"episode {at}: run {parent.run_id} has episodes {steps[:1]}..{steps[-1:]} ({len(steps)})")
    if kind == "rule" and intervention.setting not in RULES:
        raise ForkError(f"rule {intervention.setting}: the Economy of Minds changes {list(RULES)} mid-run")
    if kind == "seat_model":
        seats = ["*"] if config.seats is None else list(config.resolved_seats())
        if intervention.seat not in seats:
            raise ForkError(f"seat {intervention.seat}: run {parent.run_id} has seats {seats}")
    after_config(config, intervention)


def after_config(config: Any, intervention: Any) -> Any:
    """The config the play follows from the fork episode on
    (:meth:`ExperimentConfig.after_intervention`): a ``seat_model`` sets the run's model, or
    one entry of its ``seats`` (its other settings kept).

    Raises:
        ForkError: the config refuses the value (setting and value named).
    """
    def seat(data: dict, iv: Any) -> None:
        if data.get("seats") is None:
            data["model"] = iv.model
            return
        seats = dict(data["seats"])
        old = seats.get(iv.seat)
        seats[iv.seat] = {**(old if isinstance(old, dict) else {}), "model": iv.model}
        data["seats"] = seats

    return config.after_intervention(intervention, seat)



class EconomyFork:
    """The runner's side of one Economy fork (``cfg.fork`` set).

    Args:
        cfg: the fork's config.
        replay: the parent's :class:`~scarce_lab.forks.replay.Replay` (``run_dir`` set).

    Raises:
        ForkError: no replay, or :func:`fork_check` refuses the fork.
    """

    def __init__(self, cfg: Any, replay: Any):
        ForkError, _ = _errors()
        if replay is None or getattr(replay, "run_dir", None) is None:
            raise ForkError(f"a fork of {cfg.fork.parent} runs with its parent's replay "
                            "(scarce_lab.forks.replay.Replay.from_run; `scarce-lab fork` makes it)")
        from scarce_lab.data.recorder import read_manifest

        self.cfg, self.replay, self.at = cfg, replay, cfg.fork.at
        fork_check(cfg, read_manifest(replay.run_dir), cfg.fork.intervention, self.at, run_dir=replay.run_dir)
        self.after = after_config(cfg, cfg.fork.intervention)
        self.client: Any = None
        #: ``config -> policy``: the runner's agent layers of a config (set by the runner)
        self.remake: Any = None

    def notes(self) -> dict[str, Any]:
        """The manifest's ``notes["fork"]``: the fork spec, the calls answered from the
        parent's record so far (``replayed_calls``) and, for a ``seat_model``, the model
        that plays the seat from the fork on (``models``)."""
        out = {**self.cfg.fork.model_dump(mode="json"), "replayed_calls": self.replay.replayed}
        iv = self.cfg.fork.intervention
        if iv.kind == "seat_model":
            out["models"] = {iv.seat: iv.model}
        return out

    def wrap(self, client: Any) -> Any:
        """``client`` (or one made from the config when a model of the parent or of the
        fork calls one) answering from the parent's records until :meth:`start`."""
        from scarce_lab.forks.replay import ReplayingClient

        if client is None and (self.cfg.llm_models() or self.after.llm_models()):
            from scarce_lab.llm import make_client

            client = make_client(self.cfg.llm)
        self.client = None if client is None else ReplayingClient(client, self.replay)
        return self.client

    def rng(self, rnd: int, key: str) -> random.Random:
        """The random stream ``key`` (``"{seed}:auction:train:3"``) of episode ``rnd``:
        the parent's before the fork and for fork seed 0, else from
        :func:`~scarce_lab.runtime.step_seed`."""
        from scarce_lab.runtime import step_seed

        if rnd < self.at or self.cfg.fork.seed == 0:
            return random.Random(key)
        return random.Random(step_seed(self.cfg, rnd, key.split(":", 1)[1]))

    def start(self, rec: Any, economy: Any, policy: Any, *, check: bool = True) -> Any:
        """At the fork episode: check the prefix, switch the economy's parameters, the
        policy (:attr:`remake` of the changed config when a seat's model changes) and the seeds,
        then go live; returns the policy to play with. ``check=False``: a fork resumed
        past its episode (the checkpointed economy already has the changed parameters)."""
        from scarce_lab.forks.prefix import check_prefix
        from scarce_lab.runtime import step_seed

        if check:  # a fork resumed past its episode was checked when first played
            check_prefix(rec, self.replay, self.at)
        economy.config = self.after.economy_config()
        if self.cfg.fork.intervention.kind == "seat_model":
            policy = self.remake(self.after)
        if self.cfg.fork.seed:
            from .seats import layer_of

            for p in layer_of(policy)[1]:
                if hasattr(p, "seed"):
                    p.seed = step_seed(self.cfg, self.at, "policy")
        if self.client is not None:
            self.client.go_live()
        return policy
