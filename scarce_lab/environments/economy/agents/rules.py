"""Rule agents for Blocks World: a trigger (a conjunction of 1-2 feature literals)
and a move. Scripted mutation changes one part of a rule.

Hayek (Baum & Durdanovic 2000) evolved agents written as S-expressions over world
predicates; these rules are a deliberately small grammar of the same kind, so that
the economy has to *select* a working set from a random population rather than being
handed one. ``expert_rules()`` is the hand-written set that solves every instance
(used as a ceiling and in tests).

Model names (``--model scripted/<name>``): ``scripted/random-rules`` (random founders,
the learning setting) and ``scripted/expert`` (the expert set as founders).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..world.blocksworld import FEATURES, STACKS, BlocksObs, Move

MOVES: tuple[tuple[int, int], ...] = tuple((s, d) for s in STACKS for d in STACKS if s != d)


@dataclass(frozen=True)
class BlocksRule:
    """``literals``: ``(feature, wanted value)`` pairs that must all hold; ``move``:
    ``(src, dst)`` working stacks."""

    literals: tuple[tuple[str, bool], ...]
    move: tuple[int, int]

    def __post_init__(self) -> None:
        if not 1 <= len(self.literals) <= 2:
            raise ValueError(f"literals must hold 1 or 2 conditions, got {len(self.literals)}")
        for feat, _ in self.literals:
            if feat not in FEATURES:
                raise ValueError(f"literal feature must be one of {FEATURES}, got {feat!r}")
        if self.move not in MOVES:
            raise ValueError(f"move must be one of {MOVES}, got {self.move!r}")

    def fires(self, obs: BlocksObs) -> bool:
        """The trigger: every literal holds in ``obs``."""
        return all(obs.feature(f) == want for f, want in self.literals)

    def act(self, obs: BlocksObs) -> Move:
        """The policy: always the rule's move."""
        return Move(*self.move)

    def to_json(self) -> dict:
        return {"kind": "rule", "if": [[f, w] for f, w in self.literals], "move": list(self.move)}

    def describe(self) -> str:
        cond = " and ".join(("" if w else "not ") + f for f, w in self.literals)
        return f"if {cond}: move {self.move[0]}->{self.move[1]}"


def _literal(rng: random.Random) -> tuple[str, bool]:
    return (rng.choice(FEATURES), rng.random() < 0.5)


def _normal(literals) -> tuple[tuple[str, bool], ...]:
    seen: dict[str, bool] = {}
    for f, w in literals:
        seen.setdefault(f, w)
    return tuple(sorted(seen.items()))


def random_rule(rng: random.Random) -> BlocksRule:
    """A random rule: 1 or 2 literals and a random move."""
    n = 1 if rng.random() < 0.5 else 2
    lits = _normal(_literal(rng) for _ in range(n))
    return BlocksRule(lits, rng.choice(MOVES))


def mutate_rule(rule: BlocksRule, rng: random.Random, *, keep_move: bool = False) -> BlocksRule:
    """Scripted mutation: change the move, flip a literal, replace one, or add/drop one
    (``keep_move``: never the move, so the rule keeps its role under the eom-reference
    preset, as the reference's births keep the parent's class)."""
    lits = list(rule.literals)
    op = rng.choice(("flip", "replace", "grow_or_shrink") if keep_move else ("move", "flip", "replace", "grow_or_shrink"))
    move = rule.move
    if op == "move":
        move = rng.choice([m for m in MOVES if m != rule.move])
    elif op == "flip":
        i = rng.randrange(len(lits))
        lits[i] = (lits[i][0], not lits[i][1])
    elif op == "replace":
        i = rng.randrange(len(lits))
        lits[i] = _literal(rng)
    elif len(lits) == 1:
        lits.append(_literal(rng))
    else:
        lits.pop(rng.randrange(len(lits)))
    return BlocksRule(_normal(lits), move)


def expert_rules() -> list[BlocksRule]:
    """Hand-written rules that solve any instance (unstack, place, dig)."""
    return [
        BlocksRule((("prefix_ok", False),), (1, 2)),
        BlocksRule((("need_top2", True),), (2, 1)),
        BlocksRule((("need_top3", True),), (3, 1)),
        BlocksRule((("need_in2", True), ("need_top2", False)), (2, 3)),
        BlocksRule((("need_in3", True), ("need_top3", False)), (3, 2)),
    ]


def rule_role(genome: BlocksRule) -> str:
    """A rule agent's role under the eom-reference preset: its move."""
    return f"move {genome.move[0]}->{genome.move[1]}"


def rule_tags(genome: BlocksRule) -> tuple[str, ...]:
    """Every rule may make the final move: tagged ``terminal``."""
    return ("terminal",)


class RulePolicy:
    """Agent layer for rule agents. Every agent kind offers the same methods to the
    runner: ``founders(n, rng)``, ``newcomer(rng)``, ``mutate(genome, rng)`` and
    ``repair(genome, rng)`` (genomes of a child and of a bankrupt agent's replacement),
    ``trigger(genome, obs) -> bool``, ``act(genome, obs, agent=, episode=, step=)``
    (an action for the task) and ``genome_json(genome)`` (for birth events).

    Raises:
        ValueError: ``name`` is not ``random-rules`` or ``expert``.
    """

    kind = "rule"

    def __init__(self, name: str = "random-rules"):
        if name not in ("random-rules", "expert"):
            raise ValueError(f"scripted policy for blocksworld must be random-rules|expert, got {name!r}")
        self.name = name

    def founders(self, n: int, rng: random.Random) -> list[BlocksRule]:
        if self.name == "expert":
            base = expert_rules()
            return [base[i % len(base)] for i in range(n)]
        return [random_rule(rng) for _ in range(n)]

    newcomer = staticmethod(random_rule)
    #: a child's and a bankrupt rule's replacement's genome: the rule modified
    mutate = repair = staticmethod(mutate_rule)

    def trigger(self, genome: BlocksRule, obs: BlocksObs) -> bool:
        return genome.fires(obs)

    def act(self, genome: BlocksRule, obs: BlocksObs, *, agent: str, episode: int, step: int) -> Move:
        return genome.act(obs)

    def genome_json(self, genome: BlocksRule) -> dict:
        return genome.to_json() | {"text": genome.describe()}

    # -- the eom-reference preset: a rule's role is its move (every founding move is kept
    # present); any rule may make the final move (tagged terminal); the trigger stands in
    # for the wake-up question and a rule mutation that keeps the move (the role) for the
    # prompt rewrites ------------------------------------------------------------------------
    role_of = staticmethod(rule_role)
    tags_of = staticmethod(rule_tags)
    reference = False

    def wakes(self, genome: BlocksRule, obs: BlocksObs, *, agent: str, step: int) -> bool:
        return genome.fires(obs)

    def ref_mutate(self, genome: BlocksRule, rng: random.Random) -> BlocksRule:
        return mutate_rule(genome, rng, keep_move=True)

    def ref_repair(self, genome: BlocksRule, failure: dict | None, rng: random.Random) -> BlocksRule:
        return mutate_rule(genome, rng, keep_move=True)

