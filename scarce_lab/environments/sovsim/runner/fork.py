"""SovSim's fork hook (:mod:`scarce_lab.forks`): where a game may branch and what may change.

Steps are rounds: a fork may start at any round the parent settled (rounds before it
are the parent's, their model calls answered from its record). At the start of round
``at`` (before anyone acts) the intervention applies and the client goes live:

- ``none``: nothing (seed ``j > 0`` re-seeds rounds ``>= at``);
- ``replace_decision(agent, {value, reasoning?})``: the agent's first decision of round
  ``at`` (the king's announcement in ``kcpr_m``, else its extraction) is ``value``; the
  agent is not asked. An illegal value fails the fork by name (never the fallback);
- ``replace_message(agent, text)``: the agent's first talk turn of round ``at`` posts
  ``text`` (public) instead of asking it; the parent must have talk on;
- ``seat_model(seat, model)``: the seat's agents (an agent id or a seat alias: ``king``,
  ``leader``, ``worker``, ``*``...) play ``model`` from round ``at`` on, seeing the
  history the world shows them;
- ``rule(talk, none|public|public+private)``: the discussion from round ``at`` on
  (not with a newcomer, as in :class:`~scarce_lab.environments.sovsim.config.SovSimConfig`);
  ``rule(misreport, false)`` (``kcpr_m`` only): from round ``at`` on the king's
  announcement is the true pool, set by the world (the king is not asked to announce;
  the peasants are still told an announcement may be false: no agent learns of the fork).

``remove_agent`` and ``add_agent`` are refused: SovSim's membership changes only through
the newcomer rule, which a game sets before round 1 (``newcomer``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scarce_lab.agents.decided import Decided
from scarce_lab.forks import ForkError, ForkSpec

from ..config import SovSimConfig
from ..world.commons import Condition, Observation, Phase
from ..world.talk import TalkMode, TalkRules, Utterance

#: The intervention kinds a SovSim fork takes.
SUPPORTED = ("none", "replace_message", "replace_decision", "seat_model", "rule")
#: rule settings -> the values they take.
RULES: dict[str, tuple[Any, ...]] = {"talk": tuple(m.value for m in TalkMode), "misreport": (False,)}


def fork_steps(run_dir: Path) -> list[int]:
    """The rounds the parent in ``run_dir`` settled (a fork may start at any of them)."""
    from scarce_lab.data.recorder import read_events

    return sorted({e.round for e in read_events(Path(run_dir)) if e.kind == "round"})


def fork_check(cfg: SovSimConfig, manifest: Any, intervention: Any, at: int) -> None:
    """Refuse, before anything runs, an intervention this game cannot take (module
    docstring), naming the agent, seat or rule asked for and those the game has.

    Raises:
        ForkError: the kind, agent, seat, rule, value or message does not fit.
    """
    kind = intervention.kind
    if kind not in SUPPORTED:
        raise ForkError(f"SovSim forks take {', '.join(SUPPORTED)}; not {kind!r} (a game's membership changes "
                        "only through its newcomer rule, set before round 1)")
    agents = cfg.agent_ids()
    if kind in ("replace_decision", "replace_message") and intervention.agent not in agents:
        raise ForkError(f"{kind}: agent {intervention.agent!r} is not in {manifest.run_id}; agents: {', '.join(agents)}")
    if kind == "replace_decision":
        extra = set(intervention.decision) - {"value", "reasoning"}
        value = intervention.decision.get("value")
        if extra or isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ForkError(f"replace_decision: a SovSim decision is {{value: int >= 0, reasoning: text}}, got "
                            f"{intervention.decision!r}")
    elif kind == "replace_message":
        if cfg.talk == TalkMode.none:
            raise ForkError(f"replace_message: {manifest.run_id} has no talk (talk=none): no message to replace; "
                            "fork with rule:setting=talk,value=public instead")
        if not intervention.text or len(intervention.text) > cfg.talk_max_chars:
            raise ForkError(f"replace_message: the text must be 1..{cfg.talk_max_chars} characters (talk_max_chars), "
                            f"got {len(intervention.text)}")
    elif kind == "seat_model":
        if intervention.seat not in cfg.seat_keys():
            raise ForkError(f"seat_model: {manifest.run_id} has no seat {intervention.seat!r}; seats: "
                            f"{', '.join(cfg.seat_keys())}")
        try:
            SovSimConfig.model_validate({**cfg.model_dump(mode="json", exclude={"fork"}),
                                         "seats": {**{k: v.model_dump(exclude_none=True) for k, v in cfg.seats.items()},
                                                   intervention.seat: intervention.model}})
        except ValueError as exc:
            raise ForkError(f"seat_model: {intervention.seat}={intervention.model!r}: {exc}") from None
    elif kind == "rule":
        if intervention.setting not in RULES:
            raise ForkError(f"rule: SovSim has no rule {intervention.setting!r} a fork may change; rules: "
                            + ", ".join(f"{k} ({'|'.join(str(v).lower() for v in vs)})" for k, vs in RULES.items()))
        value = intervention.value
        if value not in RULES[intervention.setting] or (intervention.setting == "talk" and not isinstance(value, str)):
            raise ForkError(f"rule {intervention.setting}: {value!r} is not one of "
                            f"{[str(v).lower() for v in RULES[intervention.setting]]}")
        if intervention.setting == "misreport" and cfg.condition != Condition.kcpr_m:
            raise ForkError(f"rule misreport: {manifest.run_id} is {cfg.condition.value}, where no king announces the "
                            "pool (kcpr_m only)")
        if intervention.setting == "talk" and value != TalkMode.none.value and cfg.newcomer is not None:
            raise ForkError("rule talk: a game with a newcomer has no discussion (talk and newcomer do not combine)")


@dataclass
class ForkPlay:
    """A fork's intervention during play (:func:`start` makes it at round ``at``)."""

    spec: ForkSpec
    truthful: bool = False  # rule misreport=false: the world announces the true pool
    pending: dict[str, Any] = field(default_factory=dict)  # agent -> its replaced decision/message
    seated: dict[str, str] = field(default_factory=dict)  # seat_model: agent -> its model from the step on

    def fixed(self, agent: str, obs: Observation) -> Decided | None:
        """The decision ``agent`` is not asked for: its replaced decision (once), or the
        true pool as the king's announcement under ``misreport=false``; else ``None``.

        Raises:
            ForkError: a replaced value the rules do not allow here (named).
        """
        iv = self.spec.intervention
        if iv.kind == "replace_decision" and self.pending.pop(agent, None) is not None:
            value = iv.decision["value"]
            if (why := obs.legal.why_not(value)) is not None:
                raise ForkError(f"replace_decision: {agent}'s {obs.phase.value} in round {obs.round} cannot be "
                                f"{value}: {why}")
            return Decided(value=value, reasoning=str(iv.decision.get("reasoning", "")))
        if self.truthful and obs.phase == Phase.announce:
            return Decided(value=obs.pool, reasoning="")
        return None

    def message(self, agent: str) -> Decided | None:
        """The replaced talk message of ``agent`` (once), else ``None``."""
        iv = self.spec.intervention
        if iv.kind == "replace_message" and self.pending.pop(agent, None) is not None:
            return Decided(value=Utterance(text=iv.text), reasoning="")
        return None


def start(spec: ForkSpec, cfg: SovSimConfig, game: Any, agents: dict[str, Any], client: Any,
          make_agent: Any) -> ForkPlay:
    """Apply ``spec``'s intervention at the start of its round and send every later call
    live (``client.go_live()``); ``agents`` is changed in place for ``seat_model``."""
    if hasattr(client, "go_live"):
        client.go_live()
    iv = spec.intervention
    play = ForkPlay(spec)
    if iv.kind in ("replace_decision", "replace_message"):
        play.pending[iv.agent] = iv
    elif iv.kind == "seat_model":
        ids = [a for a in cfg.agent_ids() if iv.seat in (a, *cfg.seat_aliases(a), "*")]
        seat = cfg.resolved_seats()[ids[0]].model_copy(update={"model": iv.model})
        new = make_agent(iv.model, client, role_labels=cfg.role_labels, llm=seat)
        agents.update(dict.fromkeys(ids, new))
        play.seated = dict.fromkeys(ids, iv.model)
    elif iv.kind == "rule" and iv.setting == "talk":
        game.set_talk(TalkRules(TalkMode(iv.value), cfg.talk_turns, cfg.talk_max_chars))
    elif iv.kind == "rule" and iv.setting == "misreport":
        play.truthful = True
    return play
