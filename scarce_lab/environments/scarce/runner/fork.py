"""SCARCE forks: where a fork may start, what it may change, and the runner's side of it.

A fork of a SCARCE run starts at a contention ``at`` (the global contention index of the
parent's ``contention_start`` events: :func:`fork_steps`). It replays the parent's prefix by
playing the parent's config again with the same seed: every model call of the prefix is
answered from the parent's records (the core's replay source); scripted agents decide the
same by determinism; **sandbox commands are re-executed** (the workers' folders must hold
the files the solvers wrote for the later commands and for grading, and no recorded result
can recreate a folder). The re-execution reproduces the parent because the tasks' programs
are deterministic and the virtual clock charges a command ``command_s`` whatever it measured
(unless it ran longer: then the parent was not reproducible either); the one field that
differs is an ``execution`` event's measured ``duration_s`` (wall seconds, not part of the
play). So that a difference never passes silently, the fork compares its own prefix events
with the parent's when it reaches ``at`` (:meth:`ForkPlay.start`) and raises
``ForkDivergedError`` naming the first event that differs.

At contention ``at`` (before it opens) the runner switches to the continuation:

- ``rule(setting, value)``: a setting of :data:`RULES` from ``at`` on (the world's rules,
  mechanism and institutions are rebuilt from the changed config; the institutions' state
  starts empty when they are switched on mid-run; ``memory`` applies at the next subrun's
  start, when memories are kept or reset);
- ``seat_model(seat, model)``: ``w1.negotiator``, ``w1.solver`` or ``w1`` (both parts) plays
  ``model`` from ``at`` on (a new solver starts the worker's current task afresh from its
  folder and transcript);
- ``replace_message(agent, text)``: the text of ``agent``'s first private message of
  contention ``at`` (to the recipient its negotiator chose; it must send one in the parent);
  ``agent="w1.public"`` replaces its public reasoning of contention ``at`` instead;
- ``replace_decision(agent, decision)``: its declaration (keys of
  ``desired_position``, ``desired_duration_seconds``, ``bid_price``, merged into its own),
  revised bid (``{"bid_price": n}`` under ``mechanism=revisable``: the revision) or ballot
  (``{"ranking": [w, ...]}``, its own ballot's durations and prices kept) in contention
  ``at``; a value the contention refuses is a ``ForkError`` (never repaired);
- ``none``: nothing changes.

Seeds (``fork.seed = j``): ``j = 0`` keeps the parent's seeds; ``j > 0`` gives every
agent, the ballot tie-break and the interviews from ``at`` on the base seed
``step_seed(cfg, at, ...)`` (the fork stream), with which they derive their per-call seeds
as before. Task assignment is fixed at the run's start and is never re-seeded.
``remove_agent`` / ``add_agent`` are refused: a worker's task, budget and deadline are fixed
when its subrun starts (``joins`` / ``leaves`` in the config add or remove a worker at a
subrun in a new run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Settings a ``rule`` fork may change from contention ``at`` on (dotted config keys).
RULES: tuple[str, ...] = (
    "mechanism", "memory", "private_rounds", "slot_cap_s", "history_k", "transcript_k",
    "institutions.sanctions", "institutions.fine", "institutions.fine_to", "institutions.reputation",
    "institutions.contracts", "institutions.max_contract",
)
#: Intervention kinds SCARCE plays.
KINDS: tuple[str, ...] = ("none", "replace_message", "replace_decision", "rule", "seat_model")
#: Kinds SCARCE refuses, with the reason.
REFUSED: dict[str, str] = {
    "remove_agent": "SCARCE cannot remove a worker mid-run: its task, budget and deadline are fixed when "
                    "its subrun starts (set `leaves` in a new run instead)",
    "add_agent": "SCARCE cannot add a worker mid-run: a worker's task, budget and deadline are fixed when "
                 "its subrun starts (set `joins` in a new run instead)",
}
DECLARATION_KEYS = ("desired_position", "desired_duration_seconds", "bid_price")


def _errors():
    from scarce_lab.forks import ForkDivergedError, ForkError

    return ForkError, ForkDivergedError


def fork_steps(run_dir: Path) -> list[int]:
    """The contentions a fork of the SCARCE run in ``run_dir`` may start at: the global
    index (``round``) of each ``contention_start`` event, in order (read through the read
    gate, :func:`scarce_lab.data.recorder.read_events`)."""
    from scarce_lab.data.recorder import read_events

    return [e.round for e in read_events(Path(run_dir)) if e.kind == "contention_start"]


def fork_check(config: Any, parent: Any, intervention: Any, at: int, run_dir: Path | None = None) -> None:
    """Refuse a fork SCARCE cannot play, before any run starts.

    Args:
        config: the fork's :class:`~scarce_lab.environments.scarce.config.ScarceConfig`
            (the parent's with ``fork`` set).
        parent: the parent's :class:`~scarce_lab.data.schema.RunManifest`.
        intervention: the intervention (``kind`` and its fields).
        at: the contention index the fork starts at.
        run_dir: the parent's folder (its events name the contentions and messages).

    Raises:
        ForkError: no such contention (the message lists them), no such worker or seat,
            a setting outside :data:`RULES`, a value the config refuses, a message to
            replace that the parent never sent, a decision with unknown keys, or a kind of
            :data:`REFUSED` (each message names what is wrong and what exists).
    """
    ForkError, _ = _errors()
    kind = intervention.kind
    if kind in REFUSED:
        raise ForkError(f"intervention {kind}: {REFUSED[kind]}")
    if kind not in KINDS:
        raise ForkError(f"intervention {kind}: SCARCE plays {list(KINDS)}")
    events = _parent_events(run_dir) if run_dir is not None else None
    if events is not None:
        steps = [e.round for e in events if e.kind == "contention_start"]
        if at not in steps:
            raise ForkError(f"contention {at}: run {parent.run_id} has contentions {_span(steps)}")
    workers = list(config.names)
    if kind == "rule":
        if intervention.setting not in RULES:
            raise ForkError(f"rule {intervention.setting}: SCARCE cannot change it mid-run; it changes {list(RULES)}")
        after_config(config, intervention)  # the value is validated as a setting
    elif kind == "seat_model":
        w, _, part = intervention.seat.partition(".")
        if w not in workers or part not in ("", "solver", "negotiator"):
            raise ForkError(f"seat {intervention.seat}: run {parent.run_id} has seats "
                            f"{[f'{x}.{p}' for x in workers for p in ('solver', 'negotiator')]} (or a worker: both parts)")
        after_config(config, intervention)
    elif kind in ("replace_message", "replace_decision"):
        w, _, part = intervention.agent.partition(".")
        if w not in workers or part not in ("", "public") or (part and kind == "replace_decision"):
            raise ForkError(f"agent {intervention.agent}: run {parent.run_id} has workers {workers}"
                            + (" (a message: w.public for its public reasoning)" if kind == "replace_message" else ""))
        if events is not None:
            _check_replacement(events, intervention, w, part, at, parent.run_id,
                               revisable=str(config.mechanism.value if hasattr(config.mechanism, "value")
                                             else config.mechanism) == "revisable")


def target_phase(decision: dict, revisable: bool) -> str | None:
    """The phase a ``replace_decision`` replaces: ``ballots`` for ``{"ranking"}``,
    ``revision`` for ``{"bid_price"}`` under revisable bids, ``declaration`` for keys of
    :data:`DECLARATION_KEYS` otherwise; ``None`` for anything else."""
    keys = set(decision)
    if keys == {"ranking"}:
        return "ballots"
    if keys == {"bid_price"} and revisable:
        return "revision"
    return "declaration" if keys and keys <= set(DECLARATION_KEYS) else None


def _check_replacement(events: list, iv: Any, w: str, part: str, at: int, run_id: str,
                       revisable: bool = False) -> None:
    ForkError, _ = _errors()
    mine = [e for e in events if e.round == at and e.agent == w]
    if iv.kind == "replace_message":
        kind = "reasoning" if part == "public" else "private_message"
        # the text an agent's answer could hold, no more: the answer schema's bound
        # (ReasoningText.reasoning, the private message's text)
        from ..agents.schemas import ReasoningText, private_schema

        field = ReasoningText.model_fields["reasoning"] if part == "public" else \
            private_schema([]).model_fields["text"]
        limit = next(m.max_length for m in field.metadata if getattr(m, "max_length", None) is not None)
        if len(iv.text) > limit:
            raise ForkError(f"replace_message: a {kind.replace('_', ' ')} holds at most {limit} characters (the "
                            f"answer schema's bound), got {len(iv.text)}")
        if not any(e.kind == kind for e in mine):
            sent = sorted({e.round for e in events if e.kind == kind and e.agent == w})
            raise ForkError(f"agent {iv.agent}: sent no {kind.replace('_', ' ')} in contention {at} of run {run_id} "
                            f"(it did in contentions {_span(sent)})")
        return
    need = {"ballots": "ballot", "revision": "bid_revision", "declaration": "declaration",
            None: None}[target_phase(iv.decision, revisable)]
    if need is None:
        raise ForkError(f"decision {iv.decision}: a declaration takes keys of {list(DECLARATION_KEYS)}, a revised "
                        "bid {'bid_price'} (mechanism revisable), a ballot {'ranking'}")
    if need == "ballot":
        start = next((e for e in events if e.kind == "contention_start" and e.round == at), None)
        have = sorted(start.payload.participants) if start is not None else None
        if have is not None and sorted(iv.decision["ranking"]) != have:
            raise ForkError(f"decision ranking {iv.decision['ranking']}: contention {at} of run {run_id} ranks "
                            f"its participants {have}, each once")
    if not any(e.kind == need for e in mine):
        raise ForkError(f"agent {w}: made no {need.replace('_', ' ')} in contention {at} of run {run_id}")


def _span(xs: list[int]) -> str:
    return f"{xs[0]}..{xs[-1]} ({len(xs)})" if len(xs) > 3 else str(xs)


def _parent_events(run_dir: Path) -> list:
    from scarce_lab.data.recorder import read_events

    return read_events(Path(run_dir))


def after_config(config: Any, intervention: Any) -> Any:
    """The config the play follows from the fork on (:meth:`ExperimentConfig.after_intervention`):
    a ``seat_model`` seat is ``wN`` (solver and negotiator) or ``wN.solver`` /
    ``wN.negotiator``, written as ``seats`` entries.

    Raises:
        ForkError: the config refuses the value (the message names the setting and value).
    """
    def seat(data: dict, iv: Any) -> None:
        w, _, part = iv.seat.partition(".")
        seats = dict(data.get("seats") or {})
        for p in ([part] if part else ["solver", "negotiator"]):
            seats[f"{w}.{p}"] = iv.model
        data["seats"] = seats

    return config.after_intervention(intervention, seat)



class ForkPlay:
    """The runner's side of one fork (``runner.cfg.fork`` set): the prefix check, the
    switch at contention ``at`` and the replacements in it.

    Args:
        runner: the :class:`~.play.ScarceRunner`.
        replay: the core's replay source of the parent (its events and recorded calls).
    """

    def __init__(self, runner: Any, replay: Any):
        self.runner, self.replay = runner, replay
        self.spec = runner.cfg.fork
        self.at = self.spec.at
        self.iv = self.spec.intervention
        self.live = False
        self.replaced = False
        #: the base seed of the agents from the fork on (the run seed while it is the parent's)
        self.base = runner.cfg.seed
        #: the replaying client, once the runner made one (scripted runs make none)
        self.replaying: Any = None
        if replay is None or getattr(replay, "run_dir", None) is None:
            ForkError, _ = _errors()
            raise ForkError(f"a fork of {self.spec.parent} runs with its parent's replay "
                            "(scarce_lab.forks.replay.Replay.from_run; `scarce-lab fork` makes it)")
        from scarce_lab.data.recorder import read_manifest

        fork_check(runner.cfg, read_manifest(replay.run_dir), self.iv, self.at, run_dir=replay.run_dir)

    def client(self, inner: Any) -> Any:
        """The client the runner's agents use: ``inner`` wrapped to answer from the
        parent's records until the fork's contention (then ``inner`` itself)."""
        from scarce_lab.forks.replay import ReplayingClient

        if self.live or isinstance(inner, ReplayingClient):
            return inner
        self.replaying = ReplayingClient(inner, self.replay)
        return self.replaying

    def notes(self) -> dict[str, Any]:
        """The manifest's ``notes["fork"]``: the fork spec, the calls answered from the
        parent's record so far (``replayed_calls``) and, for a ``seat_model``, the models
        that play from the fork on (``models``: ``w1.negotiator -> model``)."""
        out = {**self.spec.model_dump(mode="json"), "replayed_calls": self.replay.replayed}
        if self.iv.kind == "seat_model":
            w, _, part = self.iv.seat.partition(".")
            out["models"] = {f"{w}.{p}": self.iv.model for p in ([part] if part else ["solver", "negotiator"])}
        return out

    # -- the switch ----------------------------------------------------------------------
    def before_contention(self, k: int) -> None:
        """Called before contention ``k`` opens: at ``k == at``, check the prefix and switch."""
        if k == self.at and not self.live:
            self.start()

    def start(self) -> None:
        """Check the prefix against the parent, then switch to the continuation: the live
        client, the changed rules and seats, the fork's seeds.

        Raises:
            ForkDivergedError: the prefix differs from the parent's (first event named).
        """
        r = self.runner
        self._check_prefix()
        from scarce_lab.runtime import step_seed

        if self.spec.seed:
            self.base = step_seed(r.cfg, self.at, "scarce")
        after = after_config(r.cfg, self.iv)
        r.retarget(after, self.base, new_solvers=self._new_solvers(after))
        if self.replaying is not None:
            self.replaying.go_live()
        self.live = True

    def after_contention(self, k: int) -> None:
        """Called when contention ``k`` is settled: a replacement the fork contention never
        made (a re-seeded negotiator that stayed silent or did not take part) fails the
        fork by name, so a fork never passes for one that intervened.

        Raises:
            ForkError: ``k == at``, a ``replace_message`` / ``replace_decision``, and
                nothing was replaced.
        """
        if k == self.at and self.iv.kind in ("replace_message", "replace_decision") and not self.replaced:
            ForkError, _ = _errors()
            raise ForkError(f"{self.iv.kind}: {self.iv.agent} made no such move in contention {k} of this fork "
                            f"(seed {self.spec.seed}): nothing was replaced")

    def resumed(self, k: int) -> None:
        """A fork resumed from its checkpoint with ``k`` the next contention: past the
        fork contention, the checkpointed world and agents already play the fork's rules
        and seeds; the seats, the base seed and the live client are set again (no prefix
        check: its events were checked when first played)."""
        if k <= self.at or self.live:
            return
        from scarce_lab.runtime import step_seed

        if self.spec.seed:
            self.base = step_seed(self.runner.cfg, self.at, "scarce")
        self.runner._seats, self.runner.base_seed = after_config(self.runner.cfg, self.iv).seat_plan(), self.base
        if self.replaying is not None:
            self.replaying.go_live()
        self.live = True

    def _new_solvers(self, after: Any) -> set[str]:
        plan_then, plan_now = self.runner._seats, after.seat_plan()
        return {w for w in plan_now if plan_now[w].solver != plan_then[w].solver}

    def _check_prefix(self) -> None:
        from scarce_lab.forks.prefix import check_prefix
        from scarce_lab.registry import get

        check_prefix(self.runner.rec, self.replay, self.at, measured=get("scarce").measured,
                     next_kind="contention_start")

    # -- replacements at contention ``at`` -------------------------------------------------
    def replace(self, k: int, w: str, phase: str, d: Any) -> Any:
        """``d`` (a :class:`~scarce_lab.agents.decided.Decided` of ``w`` in ``phase`` of
        contention ``k``), with its value replaced when the intervention names it (once:
        the first private message, the one decision); the replaced value is marked
        ``outcome="fork"`` in the decision's fields, and a value the contention refuses is
        a ``ForkError`` (:func:`~.play._submit`).

        Raises:
            ForkError: a ballot ranking that is not the contention's participants, or a
                declaration the declaration's type refuses.
        """
        iv = self.iv
        if self.replaced or k != self.at or iv.kind not in ("replace_message", "replace_decision"):
            return d
        who, _, part = iv.agent.partition(".")
        if who != w:
            return d
        ForkError, _ = _errors()
        if iv.kind == "replace_message":
            if phase == "reasoning" and part == "public":
                return self._replaced(d, iv.text)
            if phase == "private" and not part and d.value is not None:  # its first message (recipient kept)
                return self._replaced(d, (d.value[0], iv.text))
            return d
        dec = dict(iv.decision)
        if phase != target_phase(dec, getattr(m := self.runner.world.rules.mechanism, "value", m) == "revisable"):
            return d
        if phase == "declaration":
            try:
                return self._replaced(d, type(d.value).model_validate({**d.value.model_dump(), **dec}))
            except ValueError as exc:
                raise ForkError(f"decision {dec}: not a declaration of contention {k} ({exc})") from None
        if phase == "revision":
            return self._replaced(d, dec["bid_price"])
        by = {e.worker: e for e in d.value.entries}
        ranking = list(dec["ranking"])
        if sorted(ranking) != sorted(by):
            raise ForkError(f"decision ranking {ranking}: contention {k}'s ballot ranks {sorted(by)}")
        return self._replaced(d, d.value.model_copy(update={"entries": [by[x] for x in ranking]}))

    def _replaced(self, d: Any, value: Any) -> Any:
        d.value, d.outcome, self.replaced = value, "fork", True
        return d
