"""The one-sentence readings of a result frame (one row per group, with ``value``,
``lo``, ``hi``, ``se``, ``runs``): which group is highest and lowest and whether the
data can tell them apart (:func:`describe_extremes`), and whether a value changes
along an ordered setting (:func:`describe_change`), with every comparison of the
family tested and corrected (:mod:`.comparisons`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from . import comparisons
from .layout import _need, with_ci_text


def _identifying_keys(d: pl.DataFrame, keys: list[str]) -> list[str]:
    """``keys``, or the smallest extension of them that identifies one row of ``d``."""
    if d.height <= 1 or (keys and d.select(keys).n_unique() == d.height):
        return keys
    rest = [k for k in keys if k not in ("model", "condition", "group")]
    for cand in (["group", *rest], [*keys, "condition"], ["model", "condition", *rest]):
        if all(c in d.columns for c in cand) and d.select(cand).n_unique() == d.height:
            return list(dict.fromkeys(cand))
    raise ValueError(f"describe_extremes: {keys} name several rows ({d.height} rows, "
                     f"{d.select(keys).n_unique() if keys else 1} distinct); pass keys that identify one")


def _correction_name(where: str, correction: str) -> str:
    """The display name of ``correction`` (:data:`comparisons.CORRECTIONS`); ValueError otherwise."""
    if (corr := comparisons.CORRECTIONS.get(correction)) is None:
        raise ValueError(f"{where}: correction must be one of {sorted(comparisons.CORRECTIONS)}, got {correction!r}")
    return corr


def describe_extremes(df: pl.DataFrame, keys: Sequence[str], what: str, *, digits: int = 2,
                      scope: str = "In this dataset", correction: str = "holm") -> str:
    """One sentence naming the groups with the highest and lowest ``value`` of a result
    frame (with their intervals), and what the data say about their differences, for a
    notebook's interpretation line.

    Naming the highest and lowest of ``g`` groups compares every pair, so the claim is
    a family of ``g (g - 1) / 2`` comparisons: each pair of groups with a standard error
    (``se``, more than one run and some spread between runs) gets Welch's t-test over
    run means (:func:`comparisons.welch_p`), the p-values are adjusted together
    (``correction``: ``"holm"`` or ``"fdr_bh"``, :func:`comparisons.adjust_pvalues`), and the
    sentence says which correction, how many comparisons, how many differ at 5% and the
    highest-vs-lowest adjusted p. Overlapping or disjoint intervals are never presented
    as a test. A frame without ``se`` gets no test (the sentence says so). Mechanical
    results are not findings: every group equal says the comparison cannot tell them
    apart; rows whose ``by_construction`` column is true (e.g. a win rate of 1/n
    because every contender is the same policy) are named as such.

    Ties are broken deterministically: among equal values the group first in ascending
    order of ``keys`` is named (the sentence says how many groups tie). When ``keys``
    name several rows (a model with several conditions), the sentence names the chart
    ``group`` (or adds the ``condition``).

    Raises:
        ValueError: no such extension identifies one row (the sentence would name a
            model for a value of one of its conditions); an unknown ``correction``.
    """
    corr = _correction_name("describe_extremes", correction)
    d = df.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan())
    if d.height == 0:
        return f"{scope}, there is no data for {what}."
    d = with_ci_text(d, digits).with_row_index("_i")
    keys = _identifying_keys(d, list(keys))
    name = lambda r: ", ".join(f"{k}={r[k]}" for k in keys) or "all"  # noqa: E731
    order = [str(k) for k in keys]
    hi = d.sort(["value", *order], descending=[True] + [False] * len(order), nulls_last=True).row(0, named=True)
    lo = d.sort(["value", *order], nulls_last=True).row(0, named=True)
    runs = int(d["runs"].max() or 0)
    mech = ""
    if "by_construction" in d.columns and d["by_construction"].fill_null(False).any():
        k = int(d["by_construction"].fill_null(False).sum())
        if k == d.height:  # nothing to compare: every value is fixed by the contenders' number
            return (f"{scope}, {what} ranges from {lo['estimate']} to {hi['estimate']} over {d.height} group(s), "
                    "each fixed by construction: every contender of every contention is the same policy, so its "
                    "value is contentions / participations (1 / contenders). Not a finding; no comparison is made.")
        mech = (f" {k} of the {d.height} group(s) have this value by construction (every contender is the same "
                "policy, so it is 1/(contenders)): not a finding.")
    if d.height == 1 or hi["value"] == lo["value"]:
        where = f"for {name(hi)}" if d.height == 1 else f"in every group ({d.height} groups)"
        ci = "; no interval from a single run" if runs <= 1 else "; 95% CI in brackets where there is one"
        same = "" if d.height == 1 else " The comparison cannot tell the groups apart."
        return f"{scope}, {what} is {hi['estimate']} {where} (at most {runs} run(s) per group{ci}).{same}{mech}"
    n_top = d.filter(pl.col("value") == hi["value"]).height
    n_bot = d.filter(pl.col("value") == lo["value"]).height
    tie = lambda k: f", tied with {k - 1} other group(s)" if k > 1 else ""  # noqa: E731
    head = (f"{scope}, {what} is highest for {name(hi)} ({hi['estimate']}{tie(n_top)}) and lowest for "
            f"{name(lo)} ({lo['estimate']}{tie(n_bot)}); ")
    return head + _pairwise_sentence(d, hi, lo, correction, corr) + mech


def describe_change(df: pl.DataFrame, along: str, order: Sequence, keys: Sequence[str], question: str, *,
                    digits: int = 2, correction: str = "holm") -> str:
    """The answer to a table's question about a change along ``along`` (budget phase,
    stage...): for each group of ``keys``, its estimates in ``order`` (``a -> b -> c``),
    and whether the last value present differs from the first (Welch's t-test over run
    means, :func:`comparisons.welch_p`; unpaired, so conservative when the same runs give
    both values), the p-values of all groups adjusted together (``correction``). Opens
    with ``question``. Groups whose every row is ``by_construction`` are named as such
    and not tested (the "mechanical result" rule of :func:`describe_extremes`).

    Raises:
        ValueError: a column is missing, or an unknown ``correction``.
    """
    corr = _correction_name("describe_change", correction)
    _need(df, (*keys, along, "value", "se", "runs"), "describe_change input")
    d = with_ci_text(df.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan()), digits)
    rank = {v: i for i, v in enumerate(order)}
    d = d.filter(pl.col(along).is_in(list(order)))
    if d.height == 0:
        return f"{question} No group has a value at {', '.join(map(str, order))}."
    parts, pv, idx = [], [], []
    for key, part in d.group_by(list(keys), maintain_order=True):
        rows = sorted(part.iter_rows(named=True), key=lambda r: rank[r[along]])
        name = ", ".join(str(k) for k in key)
        path = " -> ".join(f"{r['estimate']}" for r in rows)
        where = " -> ".join(str(r[along]) for r in rows)
        if len(rows) < 2:
            parts.append(f"{name}: only {where} ({rows[0]['estimate']}), no change to test")
            continue
        if "by_construction" in part.columns and part["by_construction"].fill_null(False).all():
            parts.append(f"{name}: {path} ({where}), fixed by construction (every contender the same policy): "
                         "not a finding")
            continue
        first, last = rows[0], rows[-1]
        diff = last["value"] - first["value"]
        p = comparisons.welch_p(last["value"], last["se"], int(last["runs"] or 0),
                                first["value"], first["se"], int(first["runs"] or 0))
        steps = [b["value"] - a["value"] for a, b in zip(rows, rows[1:], strict=False)]
        if any(x > 0 for x in steps) and any(x < 0 for x in steps):
            # a zig-zag (350 -> 111 -> 350 -> 182) is no fall: first-to-last hides the path
            moves = ", ".join("rises" if x > 0 else "falls" if x < 0 else "stays" for x in steps)
            parts.append(f"{name}: {path} ({where}), not monotone ({moves}); last minus first "
                         f"{diff:+.{digits}f}")
        else:
            verb = "rises" if diff > 0 else "falls" if diff < 0 else "does not change"
            parts.append(f"{name}: {path} ({where}), {verb}" + (f" by {abs(diff):.{digits}f}" if diff else ""))
        pv.append(p)
        idx.append(len(parts) - 1)
    tested = int(np.sum(~np.isnan(pv))) if pv else 0
    if tested:
        reject, adj = comparisons.adjust_pvalues(pv, correction)
        for j, i in enumerate(idx):
            parts[i] += ("; untestable (a single run or no spread)" if math.isnan(adj[j]) else
                         f"; adjusted p = {adj[j]:.2g}" + (", a change at the 5% level" if reject[j] else ", not a change at the 5% level"))
        test = (f" First vs last value per group: Welch t over run means, {corr}-adjusted over {tested} comparison(s); "
                f"{int(reject.sum())} change(s) at the 5% level.")
    else:
        test = (" No group's change can be tested (single runs or runs that all give the same value), so the data "
                "cannot say whether anything changes." if pv else "")
    return f"{question} " + "; ".join(parts) + "." + test


def describe_contrast(df: pl.DataFrame, between: str, a, b, keys: Sequence[str], along: str, question: str, *,
                      labels: tuple[str, str] | None = None, digits: int = 2, correction: str = "holm") -> str:
    """The answer to "is ``a`` higher than ``b``?" per group of ``keys``: at each ``along``
    value (stage...), the estimate of the rows with ``between == a`` against those with
    ``between == b`` (Welch's t-test over run means, :func:`comparisons.welch_p`; unpaired,
    so conservative when the same runs give both), the p-values of every (group, ``along``)
    adjusted together (``correction``); per group, where ``a`` is higher or lower at the
    5% level, or that no difference is found. Opens with ``question``.

    Raises:
        ValueError: a column is missing, or an unknown ``correction``.
    """
    corr = _correction_name("describe_contrast", correction)
    _need(df, (*keys, between, along, "value", "se", "runs"), "describe_contrast input")
    la, lb = labels or (str(a), str(b))
    d = with_ci_text(df.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan()), digits)
    cells, pv = [], []
    for key, part in d.sort([*keys, along]).group_by(list(keys), maintain_order=True):
        for (at,), g in part.group_by([along], maintain_order=True):
            ra, rb = g.filter(pl.col(between) == a), g.filter(pl.col(between) == b)
            if ra.height != 1 or rb.height != 1:
                continue
            x, y = ra.row(0, named=True), rb.row(0, named=True)
            cells.append((key, at, x, y))
            pv.append(comparisons.welch_p(x["value"], x["se"], int(x["runs"] or 0),
                                          y["value"], y["se"], int(y["runs"] or 0)))
    if not cells:
        return f"{question} No group has both {la} and {lb} values to compare."
    tested = int(np.sum(~np.isnan(pv)))
    reject, adj = comparisons.adjust_pvalues(pv, correction) if tested else (np.zeros(len(pv), bool), pv)
    parts, current = [], None
    for (key, at, x, y), p, r in zip(cells, adj, reject, strict=True):
        name = ", ".join(str(k) for k in key)
        if name != current:
            parts.append([name, [], [], []])  # name, cell texts, higher at, lower at
            current = name
        test = "untestable" if math.isnan(p) else f"adjusted p = {p:.2g}"
        parts[-1][1].append(f"{along} {at}: {x['estimate']} vs {y['estimate']} ({test})")
        if r:
            parts[-1][2 if x["value"] > y["value"] else 3].append(str(at))
    out = []
    for name, texts, up, down in parts:
        verdict = "; ".join(v for v in (
            f"{la} higher at {along} {', '.join(up)}" if up else "",
            f"{la} lower at {along} {', '.join(down)}" if down else "") if v) or f"no {along} differs at the 5% level"
        out.append(f"{name}: {verdict} ({'; '.join(texts)})")
    test = (f" {la} vs {lb} per group and {along}: Welch t over run means (unpaired, so conservative when the same "
            f"runs give both), {corr}-adjusted over {tested} comparison(s); {int(np.sum(reject))} differ at the 5% "
            "level." if tested else " No comparison can be tested (single runs or no spread), so the data cannot "
            "say.")
    return f"{question} " + ". ".join(out) + "." + test


def _pairwise_sentence(d: pl.DataFrame, hi: dict, lo: dict, correction: str, corr: str) -> str:
    """The multiple-comparison half of :func:`describe_extremes`."""
    g = d.height
    pairs = g * (g - 1) // 2
    if "se" not in d.columns:
        return (f"no test was run (the table has no standard errors), so naming them claims no difference "
                f"among the {g} groups.")
    rows = d.select("value", "se", "runs").rows()
    pv, pair_ids = [], []
    for i in range(g):
        for j in range(i + 1, g):
            (m1, s1, n1), (m2, s2, n2) = rows[i], rows[j]
            pv.append(comparisons.welch_p(m1, s1, int(n1 or 0), m2, s2, int(n2 or 0)))
            pair_ids.append((i, j))
    tested = int(np.sum(~np.isnan(pv)))
    if tested == 0:
        return ("no pair of groups can be tested (a group from a single run, or whose runs all give the same "
                "value, has no standard error), so the data cannot separate them.")
    reject, adj = comparisons.adjust_pvalues(pv, correction)
    hi_i, lo_i = int(hi["_i"]), int(lo["_i"])
    k = pair_ids.index((min(hi_i, lo_i), max(hi_i, lo_i)))
    extreme = ("the highest and lowest cannot be tested against each other"
               if math.isnan(adj[k]) else
               f"highest vs lowest: adjusted p = {adj[k]:.2g}"
               + (", a difference at the 5% level" if reject[k] else ", not a difference at the 5% level"))
    untested = f"; {pairs - tested} pair(s) untestable (single run or no spread)" if tested < pairs else ""
    return (f"Welch t-tests over run means for {tested} of the {pairs} pairs of groups, {corr}-adjusted "
            f"({tested} comparisons{untested}): {int(reject.sum())} differ at the 5% level ({extreme}).")
