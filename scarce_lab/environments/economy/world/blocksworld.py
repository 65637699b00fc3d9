"""Blocks World as in Baum & Durdanovic's Hayek experiments: rebuild the target stack.

The world has a fixed *target* stack (stack 0, read-only) and three working stacks
1, 2, 3. Blocks are coloured (``n_colors`` colours). The goal is to make stack 1 equal
to the target, bottom to top. An action moves the top block of one working stack onto
another. Reward (credits) is paid only on completion: ``reward_per_block * n_blocks``
(Hayek: reward on solving the instance, scaled with its size). An instance of ``n``
blocks deals a shuffled copy of the target's blocks onto stacks 1..3.

Observation features (what triggers may test; all booleans):

- ``prefix_ok``: stack 1 is a correct prefix of the target (empty counts).
- ``need_top2`` / ``need_top3``: prefix is ok and the next needed colour is on top of
  stack 2 / 3.
- ``need_in2`` / ``need_in3``: prefix is ok and the next needed colour is somewhere in
  stack 2 / 3.

Step kinds (for specialisation): ``unstack`` (stack 1 holds a wrong block), ``place``
(a needed block is on top of stack 2 or 3), ``dig`` (a needed block is buried).

Legal actions (the action mask on every observation, :class:`LegalMoves`): every
:class:`Move` between working stacks 1..3 is legal; one from an empty stack or onto
its own stack changes nothing and costs a step (Hayek's world), so the mask also
names the *effective* moves. :func:`legal_moves` is the one home of this rule:
:meth:`BlocksWorld.apply` checks actions with it and agents read it from
:attr:`BlocksObs.legal`.
"""

from __future__ import annotations

import numbers
import random
from dataclasses import dataclass, field

from .engine import StepResult

FEATURES: tuple[str, ...] = ("prefix_ok", "need_top2", "need_top3", "need_in2", "need_in3")
STACKS: tuple[int, ...] = (1, 2, 3)


@dataclass(frozen=True)
class Move:
    """Move the top block of working stack ``src`` onto working stack ``dst`` (1..3)."""

    src: int
    dst: int

    def __post_init__(self) -> None:
        for name in ("src", "dst"):
            v = getattr(self, name)
            # True == 1 and 2.0 == 2: without the type check Move(True, 2.0) was legal and
            # recorded as {"src": true, "dst": 2.0}
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v not in STACKS:
                raise ValueError(f"{name} must be one of {STACKS} (an integer), got {v!r}")
            object.__setattr__(self, name, int(v))

    def to_json(self) -> dict:
        return {"src": self.src, "dst": self.dst}


@dataclass(frozen=True)
class LegalMoves:
    """The legal moves now (module docstring).

    Attributes:
        moves: every legal :class:`Move` (all nine ``(src, dst)`` pairs of 1..3).
        effective: the legal moves that change the state (a non-empty source, another
            destination).
    """

    moves: tuple[Move, ...]
    effective: tuple[Move, ...]

    def why_not(self, action: object) -> str | None:
        """Why ``action`` is not a legal move (``None`` when it is)."""
        if not isinstance(action, Move):
            return f"action must be a Move, got {type(action).__name__}"
        return None if action in self.moves else f"move {action} is not one of {len(self.moves)} legal moves"


def legal_moves(stacks) -> LegalMoves:
    """The :class:`LegalMoves` of working ``stacks`` (three stacks, bottom first)."""
    moves = tuple(Move(a, b) for a in STACKS for b in STACKS)
    return LegalMoves(moves, tuple(m for m in moves if m.src != m.dst and stacks[m.src - 1]))


@dataclass(frozen=True)
class BlocksObs:
    """What agents see: target and working stacks (colour ids, bottom first), and the
    legal moves (:class:`LegalMoves`; derived from ``stacks`` when not given)."""

    target: tuple[int, ...]
    stacks: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    features: dict
    legal: LegalMoves = field(default=None, compare=False)  # type: ignore[assignment] - set in __post_init__

    def __post_init__(self) -> None:
        if self.legal is None:
            object.__setattr__(self, "legal", legal_moves(self.stacks))

    def feature(self, name: str) -> bool:
        return bool(self.features[name])


def features_of(target: tuple[int, ...], stacks) -> dict:
    """The boolean features (see module docstring) of a world state."""
    s1, s2, s3 = stacks
    prefix_ok = tuple(s1) == tuple(target[: len(s1)])
    need = target[len(s1)] if prefix_ok and len(s1) < len(target) else None
    return {
        "prefix_ok": prefix_ok,
        "need_top2": need is not None and bool(s2) and s2[-1] == need,
        "need_top3": need is not None and bool(s3) and s3[-1] == need,
        "need_in2": need is not None and need in s2,
        "need_in3": need is not None and need in s3,
    }


def make_instance(n_blocks: int, n_colors: int, rng: random.Random) -> tuple[tuple, tuple]:
    """A random unsolved instance: ``(target, (stack1, stack2, stack3))``.

    Raises:
        ValueError: ``n_blocks`` < 1 or ``n_colors`` < 1.
    """
    if not isinstance(n_blocks, int) or n_blocks < 1:
        raise ValueError(f"n_blocks must be an int >= 1, got {n_blocks!r}")
    if not isinstance(n_colors, int) or n_colors < 1:
        raise ValueError(f"n_colors must be an int >= 1, got {n_colors!r}")
    target = tuple(rng.randrange(n_colors) for _ in range(n_blocks))
    for _ in range(100):
        blocks = list(target)
        rng.shuffle(blocks)
        stacks: list[list[int]] = [[], [], []]
        for b in blocks:
            stacks[rng.randrange(3)].append(b)
        if tuple(stacks[0]) != target:
            break
    return target, (tuple(stacks[0]), tuple(stacks[1]), tuple(stacks[2]))


def size_for_episode(
    episode: int,
    rng: random.Random,
    *,
    min_blocks: int,
    max_blocks: int,
    schedule: str = "uniform",
    current: int | None = None,
    streak: int = 0,
    promote_after: int = 3,
) -> int:
    """Instance size for the next episode.

    ``uniform``: a draw from ``[min_blocks, max_blocks]``. ``curriculum``: ``current``
    (start ``min_blocks``), plus one once ``streak`` consecutive solves reach
    ``promote_after``, capped at ``max_blocks`` (Hayek presented harder instances as
    the system got better).

    Raises:
        ValueError: unknown ``schedule`` or ``min_blocks > max_blocks``.
    """
    if min_blocks > max_blocks:
        raise ValueError(f"min_blocks ({min_blocks}) must be <= max_blocks ({max_blocks})")
    if schedule == "uniform":
        return rng.randint(min_blocks, max_blocks)
    if schedule == "curriculum":
        size = min_blocks if current is None else current
        if streak >= promote_after:
            size += 1
        return max(min_blocks, min(size, max_blocks))
    raise ValueError(f"schedule must be 'uniform' or 'curriculum', got {schedule!r}")


class BlocksWorld:
    """One Blocks World instance as a :class:`~.engine.TaskEnv`.

    ``max_steps`` defaults to ``5 * n_blocks + 5`` moves. Invalid moves (empty source,
    ``src == dst``) change nothing and cost a step.
    """

    def __init__(
        self,
        target: tuple[int, ...],
        stacks,
        *,
        reward_per_block: int = 10,
        max_steps: int | None = None,
    ):
        if not target:
            raise ValueError("target must hold at least one block")
        if sorted(target) != sorted(b for s in stacks for b in s):
            raise ValueError("stacks must hold exactly the target's blocks")
        self.target = tuple(target)
        self.stacks = [list(s) for s in stacks]
        self.reward_per_block = reward_per_block
        self.max_steps = max_steps if max_steps is not None else 5 * len(target) + 5
        self.done = False

    @property
    def n_blocks(self) -> int:
        return len(self.target)

    def solved(self) -> bool:
        return tuple(self.stacks[0]) == self.target

    def observe(self) -> BlocksObs:
        st = tuple(tuple(s) for s in self.stacks)
        return BlocksObs(self.target, st, features_of(self.target, st))

    def step_kind(self, obs: BlocksObs) -> str:
        f = obs.features
        if not f["prefix_ok"]:
            return "unstack"
        if f["need_top2"] or f["need_top3"]:
            return "place"
        return "dig"

    def apply(self, action: Move) -> StepResult:
        """Apply a move; reward ``reward_per_block * n_blocks`` on completion.

        Raises:
            RuntimeError: the episode is already done.
            TypeError: ``action`` is not a :class:`Move`.
        """
        if self.done:
            raise RuntimeError("episode is done; make a new instance")
        reason = legal_moves(self.stacks).why_not(action)
        if reason is not None:
            raise TypeError(reason)
        src, dst = self.stacks[action.src - 1], self.stacks[action.dst - 1]
        valid = action.src != action.dst and bool(src)
        if valid:
            dst.append(src.pop())
        if self.solved():
            self.done = True
            return StepResult(self.reward_per_block * self.n_blocks, True, True)
        return StepResult(0, False, False, {} if valid else {"invalid": True})
