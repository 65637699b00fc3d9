"""Talk in the commons: an optional discussion phase of each SovSim round (pure, no I/O).

A GovSim-style conversation (Piatti et al. 2024 let agents converse every month, with a
no-language ablation) added to SovSim as a condition setting, ``talk``:

- ``none``: no discussion (the paper's SovSim game, unchanged);
- ``public``: every message is seen by every agent;
- ``public+private``: a message may instead name recipients; it is then seen only by
  its speaker and those recipients (its ``visible_to``).

Order of a round: the king's announcement (``kcpr_m``), then the discussion, then the
extractions. The discussion has ``turns`` passes; in each pass the speakers take turns
in seat order, subordinates first and the leader (boss or king) **last**, as in the
extraction phase where the leader moves last and sees the others' extractions: here it
sees every message visible to it that the others posted this round before it speaks.
In ``cpr`` (no leader) the four citizens speak in seat order. Each speaker sees, when it
speaks, every message visible to it so far (this round's earlier turns and earlier
rounds); a kcpr_m peasant's talk observation holds no true pool, as its extraction
observation does not.

Rules of one message (:meth:`TalkRules.why_not`, the one home of talk legality): at most
``max_chars`` characters; recipients only under ``public+private``, each another agent
of the game, no repeats; an empty text is silence (the speaker passes its turn and no
message is posted). Each agent speaks at most once per pass, so at most ``turns``
messages per agent and round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class TalkMode(StrEnum):
    """Who may be addressed in the discussion phase."""

    none = "none"
    public = "public"
    public_private = "public+private"


class InvalidTalkError(ValueError):
    """A message broke the talk rules; the message names the agent, field and value."""


@dataclass(frozen=True)
class TalkRules:
    """The discussion's settings.

    Attributes:
        mode: :class:`TalkMode` (``none`` means no discussion phase at all).
        turns: passes through the speakers per round (>= 1): each agent may post at
            most this many messages per round.
        max_chars: longest message (characters, >= 1).

    Raises:
        ValueError: an unknown mode, or ``turns``/``max_chars`` below 1 (names the value).
    """

    mode: TalkMode = TalkMode.none
    turns: int = 1
    max_chars: int = 200

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", TalkMode(self.mode))
        except ValueError:
            raise ValueError(f"talk must be one of {[m.value for m in TalkMode]}, got {self.mode!r}") from None
        for name in ("turns", "max_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"talk_{name} must be an int >= 1, got {v!r}")

    @property
    def on(self) -> bool:
        """True when rounds have a discussion phase."""
        return self.mode != TalkMode.none

    @property
    def private_allowed(self) -> bool:
        """True when a message may name recipients (``public+private``)."""
        return self.mode == TalkMode.public_private

    def why_not(self, speaker: str, agents: tuple[str, ...], text: object, to: object) -> str | None:
        """Why the message ``(text, to)`` of ``speaker`` is illegal (``None`` when legal).

        ``agents`` are the game's agents; ``to`` is a tuple of recipients (empty: public).
        """
        if not isinstance(text, str):
            return f"talk text of {speaker} must be a string, got {type(text).__name__}"
        if len(text) > self.max_chars:
            return f"talk text of {speaker} has {len(text)} characters, more than talk_max_chars={self.max_chars}"
        if not isinstance(to, tuple) or not all(isinstance(x, str) for x in to):
            return f"talk recipients of {speaker} must be a tuple of agent ids, got {to!r}"
        if to and not self.private_allowed:
            return f"talk recipients {list(to)} of {speaker} need talk='public+private', not {self.mode.value!r}"
        others = [a for a in agents if a != speaker]
        bad = [x for x in to if x not in others]
        if bad:
            return f"talk recipients of {speaker} must be other agents of {list(others)}, got {bad}"
        if len(set(to)) != len(to):
            return f"talk recipients of {speaker} repeat an agent: {list(to)}"
        return None


@dataclass(frozen=True)
class Utterance:
    """What a speaker says in its turn: ``text`` (``""`` = silence) and ``to`` (the
    recipients of a private message; empty = public)."""

    text: str = ""
    to: tuple[str, ...] = ()

    @property
    def silent(self) -> bool:
        """True for a pass (empty text)."""
        return self.text == ""


@dataclass(frozen=True)
class TalkMessage:
    """A posted message.

    Attributes:
        round: the game round (1-based).
        turn: the pass within the round (1-based).
        speaker: the agent who wrote it.
        text: its text (at most ``max_chars`` characters).
        to: its recipients; empty for a public message.
    """

    round: int
    turn: int
    speaker: str
    text: str
    to: tuple[str, ...] = ()

    @property
    def public(self) -> bool:
        """True when every agent sees it."""
        return not self.to

    @property
    def visible_to(self) -> tuple[str, ...]:
        """Who sees a private message: its speaker then its recipients (empty when public)."""
        return () if self.public else (self.speaker, *self.to)

    def seen_by(self, agent: str) -> bool:
        """True when ``agent`` sees this message."""
        return self.public or agent in self.visible_to


@dataclass(frozen=True)
class TalkObservation:
    """What a speaker sees when it is its turn to talk.

    ``pool`` is ``None`` for a kcpr_m subordinate (the true pool is hidden; it sees the
    ``announced_pool``); ``messages`` are every message it may see so far (earlier
    rounds and this round's earlier turns, in order of posting); ``recipients`` are the
    agents it may address privately (empty unless ``public+private``); ``history`` the
    settled rounds (:class:`scarce_lab.environments.sovsim.world.commons.RoundRecord`).
    """

    condition: Any
    round: int
    rounds_total: int
    turn: int
    turns_total: int
    agent: str
    agent_index: int
    role: str
    is_leader: bool
    agents: tuple[str, ...]
    pool: int | None
    announced_pool: int | None
    pool_may_be_false: bool
    mode: TalkMode
    max_chars: int
    recipients: tuple[str, ...]
    messages: tuple[TalkMessage, ...]
    history: tuple[Any, ...]
    config: Any = field(repr=False, default=None)

    @property
    def pool_seen(self) -> int:
        """The pool as presented to this agent (announcement if the truth is hidden)."""
        if self.pool is not None:
            return self.pool
        assert self.announced_pool is not None
        return self.announced_pool


class Discussion:
    """One round's discussion: ``turns`` passes through ``order`` (subordinates in seat
    order, then the leader). :attr:`speaker` is who talks now; :meth:`speak` posts its
    message (or its silence) and moves on; :attr:`done` after the last turn."""

    def __init__(self, round: int, order: tuple[str, ...], rules: TalkRules):
        if not rules.on:
            raise ValueError("a Discussion needs talk rules with mode public or public+private")
        self.round = round
        self.order = order
        self.rules = rules
        self._i = 0  # index into the flattened (turn, speaker) sequence

    @property
    def done(self) -> bool:
        """True when every turn of every speaker has been taken."""
        return self._i >= len(self.order) * self.rules.turns

    @property
    def turn(self) -> int:
        """The current pass (1-based)."""
        return self._i // len(self.order) + 1

    @property
    def speaker(self) -> str:
        """Who speaks now. Raises RuntimeError when the discussion is over."""
        if self.done:
            raise RuntimeError(f"the discussion of round {self.round} is over")
        return self.order[self._i % len(self.order)]

    def observe(self, agent: str, game: Any, *, pool: int | None, announced: int | None) -> TalkObservation:
        """What ``agent`` sees in its turn; ``game`` is the
        :class:`~scarce_lab.environments.sovsim.world.commons.CommonsGame` (its agents, roles, history and
        transcript), ``pool`` the pool this agent may see (``None`` when hidden)."""
        return TalkObservation(
            condition=game.condition, round=self.round, rounds_total=game.config.rounds, turn=self.turn,
            turns_total=self.rules.turns, agent=agent, agent_index=game.agents.index(agent),
            role=game.roles[agent], is_leader=agent == game.leader, agents=game.agents, pool=pool,
            announced_pool=announced, pool_may_be_false=pool is None, mode=self.rules.mode,
            max_chars=self.rules.max_chars,
            recipients=tuple(a for a in game.agents if a != agent) if self.rules.private_allowed else (),
            messages=game.talk_seen_by(agent), history=tuple(game.history), config=game.config,
        )

    def speak(self, agent: str, utterance: Utterance, agents: tuple[str, ...]) -> TalkMessage | None:
        """Post ``agent``'s utterance; returns the message (``None`` for silence).

        Raises:
            InvalidTalkError: ``agent`` is not the speaker now, or the message breaks the
                rules (:meth:`TalkRules.why_not`; names the agent and value).
        """
        if self.done or agent != self.speaker:
            now = None if self.done else self.speaker
            raise InvalidTalkError(f"{agent} may not talk now (round {self.round}; the speaker is {now})")
        reason = self.rules.why_not(agent, agents, utterance.text, utterance.to)
        if reason is not None:
            raise InvalidTalkError(reason)
        turn = self.turn
        self._i += 1
        if utterance.silent:
            return None
        return TalkMessage(self.round, turn, agent, utterance.text, tuple(utterance.to))
