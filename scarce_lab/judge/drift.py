"""Language drift over the stages of a run (pure functions on text).

A *stage* is any ordered slice of a run (a round, a contention, a block of rounds);
its text is everything the agents wrote in it. Per stage:

- ``cosine_prev``: cosine similarity of the bag-of-words count vectors of this stage
  and the previous one (1 = same word distribution; null for the first stage).
- ``trigram_repetition``: share of the stage's word-trigram occurrences that repeat a
  trigram seen earlier in the same stage, ``(n - n_distinct) / n`` (0 = no repetition;
  null when the stage has no trigram). Formulaic, copy-pasted language scores high.
- ``new_word_share``: share of the stage's distinct words never used in any earlier
  stage of the run (null for the first stage or an empty stage).

Tokens are lower-cased runs of letters, digits and apostrophes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import polars as pl

from ..undefined import or_none

_TOKEN = re.compile(r"[a-z0-9']+")


def tokenize(text: str | None) -> list[str]:
    """Lower-cased word tokens of ``text`` (empty list for None)."""
    return _TOKEN.findall((text or "").lower())


def bow_cosine(a: Sequence[str], b: Sequence[str]) -> float:
    """Cosine similarity of two token lists' count vectors; NaN if either is empty."""
    ca, cb = Counter(a), Counter(b)
    if not ca or not cb:
        return math.nan
    dot = sum(v * cb.get(k, 0) for k, v in ca.items())
    na = math.sqrt(sum(v * v for v in ca.values()))
    nb = math.sqrt(sum(v * v for v in cb.values()))
    return dot / (na * nb)


def trigram_repetition(tokens: Sequence[str]) -> float:
    """``(n - n_distinct) / n`` over the word trigrams of ``tokens``; NaN if n == 0."""
    grams = [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]
    if not grams:
        return math.nan
    return (len(grams) - len(set(grams))) / len(grams)


def new_word_share(tokens: Sequence[str], seen: set[str]) -> float:
    """Share of the distinct ``tokens`` not in ``seen``; NaN for no tokens."""
    types = set(tokens)
    if not types:
        return math.nan
    return len(types - seen) / len(types)


DRIFT_SCHEMA = {
    "run_id": pl.String,
    "stage": pl.Int64,
    "n_tokens": pl.Int64,
    "cosine_prev": pl.Float64,
    "trigram_repetition": pl.Float64,
    "new_word_share": pl.Float64,
}


def drift_table(
    df: pl.DataFrame,
    *,
    run_col: str = "run_id",
    stage_col: str = "round",
    text_col: str = "text",
) -> pl.DataFrame:
    """Drift measures per (run, stage) from a frame of texts.

    Args:
        df: one or more rows per (run, stage); the texts of a stage are joined in row
            order.
        run_col, stage_col, text_col: column names (stage must be integer-valued).

    Returns:
        One row per (run, stage), sorted, with :data:`DRIFT_SCHEMA` columns (undefined
        values are null).

    Raises:
        ValueError: a named column is missing.
    """
    if missing := [c for c in (run_col, stage_col, text_col) if c not in df.columns]:
        raise ValueError(f"drift_table: missing columns {missing}; frame has {df.columns}")
    grouped = (
        df.select(run_col, stage_col, pl.col(text_col).fill_null(""))
        .group_by(run_col, stage_col, maintain_order=True)
        .agg(pl.col(text_col).str.join(" "))
        .sort(run_col, stage_col)
    )
    rows = []
    for (run,), part in grouped.group_by(run_col, maintain_order=True):
        prev: list[str] | None = None
        seen: set[str] = set()
        for stage, text in zip(part[stage_col], part[text_col], strict=True):
            tokens = tokenize(text)
            rows.append(
                {
                    "run_id": str(run),
                    "stage": int(stage),
                    "n_tokens": len(tokens),
                    "cosine_prev": None if prev is None else or_none(bow_cosine(prev, tokens)),
                    "trigram_repetition": or_none(trigram_repetition(tokens)),
                    "new_word_share": None if prev is None else or_none(new_word_share(tokens, seen)),
                }
            )
            prev = tokens
            seen |= set(tokens)
    return pl.DataFrame(rows, schema=DRIFT_SCHEMA, orient="row").sort("run_id", "stage")


def units_text_frame(units) -> pl.DataFrame:
    """``run_id``, ``round``, ``text`` (reasoning + messages) from judge units, for
    :func:`drift_table`."""
    return pl.DataFrame(
        {
            "run_id": [u.run_id for u in units],
            "round": [u.round for u in units],
            "text": [
                " ".join([u.public_reasoning, *(m.text for m in u.private_messages)]) for u in units
            ],
        },
        schema={"run_id": pl.String, "round": pl.Int64, "text": pl.String},
    )
