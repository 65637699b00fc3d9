"""Institutional flags: spontaneous (not induced) and persistent (recurs later)."""

import polars as pl

from scarce_lab.judge.institutions import institutional_summary, institutions
from scarce_lab.judge.taxonomy import load_taxonomy


def test_institutions_by_hand():
    tax = load_taxonomy("scarce")
    labels = pl.DataFrame(
        {
            "unit_id": ["r:1:a", "r:1:b", "r:2:a", "r:3:b"],
            "run_id": ["r"] * 4,
            "round": [1, 1, 2, 3],
            "agent": ["a", "b", "a", "b"],
            "labels": [
                ["bid_priority", "reciprocity"],
                ["anchoring"],
                ["bid_priority", "anchoring"],
                ["reciprocity"],
            ],
        }
    )
    recipients = pl.DataFrame(
        {"unit_id": ["r:1:a", "r:1:b", "r:2:a", "r:3:b"], "recipients": [["b"], [], ["b"], ["a"]]}
    )
    t = institutions(labels, tax, recipients=recipients)
    rows = {(r["scope"], r["who"], r["label"]): r for r in t.iter_rows(named=True)}
    # a shows bid_priority in rounds 1 and 2: persistent, but induced by the auction rules.
    bp = rows[("agent", "a", "bid_priority")]
    assert bp["persistent"] and not bp["spontaneous"] and not bp["institutional"]
    # anchoring: once each for a and b -> not persistent for either agent.
    assert not rows[("agent", "a", "anchoring")]["persistent"]
    # reciprocity between a and b: a in round 1 (to b), b in round 3 (to a) -> pair institution.
    pair = rows[("pair", "a|b", "reciprocity")]
    assert pair["rounds"] == [1, 3] and pair["relational"] and pair["institutional"]
    assert not rows[("agent", "b", "reciprocity")]["institutional"]
    s = institutional_summary(t)
    assert s.rows() == [
        (False, "agent", 3, 0, 0.0),
        (True, "agent", 2, 0, 0.0),
        (True, "pair", 1, 1, 1.0),
    ]
    # With no induced labels, a's bid priority becomes institutional.
    t2 = institutions(labels, tax, induced=[])
    assert t2.filter((pl.col("who") == "a") & (pl.col("label") == "bid_priority"))[
        "institutional"
    ].item()
