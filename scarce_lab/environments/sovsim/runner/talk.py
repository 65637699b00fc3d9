"""The talk turns of a SovSim round (``talk`` public or public+private): ask the
speaker, keep a legal message, post it to the world and record it.

Each turn's seed derives from ``(run seed, round, agent, "talk<turn>")`` (:func:`~scarce_lab.runtime.step_seed`), so a resumed
run asks the same questions with the same seeds. A message the world would refuse
(too long, a recipient that is not another agent, recipients under ``talk: public``)
is replaced by the documented fallback, silence, and recorded as a violation; the
event of a private message is ``private`` with ``visible_to`` = the speaker then its
recipients, a public one ``public``, a silence private to its speaker.
"""

from __future__ import annotations

from typing import Any

from scarce_lab.agents.decided import Decided
from scarce_lab.data.events.base import Visibility
from scarce_lab.runtime import record_calls_of, step_seed

from .. import events as ev
from ..world.commons import CommonsGame
from ..world.talk import TalkObservation, Utterance


def legal_utterance(obs: TalkObservation, d: Decided[Utterance], rules: Any) -> tuple[Utterance, Decided[Utterance]]:
    """``d``'s utterance when the talk rules allow it, else silence (the fallback) with
    the reason recorded as the violation."""
    u = d.value
    reason = rules.why_not(obs.agent, obs.agents, u.text, u.to) if isinstance(u, Utterance) else \
        f"talk decision of {obs.agent} is not an Utterance: {u!r}"
    if reason is None:
        return u, d
    d.violation = d.violation or reason
    d.valid, d.fallback_used = False, True
    return Utterance(), d


async def play_talk_turn(game: CommonsGame, cfg: Any, rec: Any, agents: dict[str, Any], fixed: Any = None) -> None:
    """One talk turn: the current speaker talks (or stays silent); the event is emitted.
    ``fixed(speaker)`` (a fork's replaced message) gives a message the speaker is then
    not asked for; ``cfg``: the game's config (its seeds, :func:`~scarce_lab.runtime.step_seed`).

    Raises:
        TypeError: the speaker's agent has no ``atalk`` (a custom agent made for games
            without talk).
        Exception: whatever the agent raised (its model calls are recorded first).
    """
    (speaker,) = game.acting_agents()
    agent = agents[speaker]
    if not callable(getattr(agent, "atalk", None)):
        raise TypeError(f"agent {speaker} ({getattr(agent, 'model', type(agent).__name__)}) has no atalk(obs, seed): "
                        f"it cannot take part in talk={game.talk_rules.mode.value if game.talk_rules else None!r}")
    obs = game.observe_talk(speaker)
    r, turn = obs.round, obs.turn
    try:
        d = fixed(speaker) if fixed is not None else None
        if d is None:
            d = await agent.atalk(obs, seed=step_seed(cfg, r, speaker, f"talk{turn}"))
    except BaseException as exc:
        record_calls_of(rec, exc)
        raise
    record_calls_of(rec, d)
    u, d = legal_utterance(obs, d, game.talk_rules)
    msg = game.speak(speaker, u)
    payload = ev.Talk(text=u.text, recipients=list(u.to), turn=turn, reasoning=d.reasoning, **d.decision_fields())
    if msg is not None and msg.public:
        rec.emit(payload, round=r, phase="talk", agent=speaker, visibility=Visibility.public)
    else:
        visible = list(msg.visible_to) if msg is not None else [speaker]
        rec.emit(payload, round=r, phase="talk", agent=speaker, visibility=Visibility.private, visible_to=visible)
