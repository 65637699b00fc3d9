"""Reasoning-effort levels (no imports): the order the config checks a level against and
the pair the SCARCE paper's Table 9 compares, shared by the config and the analysis
(which reads datasets only and may not import the config's agents and tasks)."""

from __future__ import annotations

#: Every reasoning-effort level litellm accepts (``litellm.types.llms.openai.REASONING_EFFORT``,
#: litellm 1.110.2), weakest first; ``none`` turns reasoning off where a model allows it.
REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def strongest_efforts(levels: tuple[str, ...] | list[str], k: int = 2) -> tuple[str, ...]:
    """The ``k`` strongest of ``levels`` (weakest first), e.g. ``("high", "xhigh")`` for a
    model that accepts up to ``xhigh``: the pair SCARCE's Table 9 compares. ``none`` is
    never among them.

    Raises:
        ValueError: a level that is not one of :data:`REASONING_EFFORTS`.
    """
    bad = [e for e in levels if e not in REASONING_EFFORTS]
    if bad:
        raise ValueError(f"reasoning effort levels must be among {list(REASONING_EFFORTS)}, got {bad}")
    ordered = [e for e in REASONING_EFFORTS if e in set(levels) and e != "none"]
    return tuple(ordered[-k:]) if k > 0 else ()
