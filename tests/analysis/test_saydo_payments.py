"""Say-do for SCARCE payments: the public bid against the amount paid for the slot,
recomputed here from the raw events (declarations, payments, schedules); a scheduler
that does not price by the bid is left out; visibility tags checked."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import scarce_lab as sl
from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task


def _runs(out: Path, seeds=(1, 2), **kw) -> None:
    for seed in seeds:
        cfg = ScarceConfig(workers=3, subruns=1, model="scripted/fifo", seed=seed, **kw)
        run_scarce(cfg, out, tasks=[toy_task()], grade_fn=fake_grade, sandbox=FakeSandbox(out / f"sbx{seed}"))


def _by_hand(out: Path) -> dict[str, tuple[float, float, int]]:
    """run_id -> (share of paid slots whose amount != the chosen declared bid, mean
    amount - bid, slots), from events.jsonl alone."""
    res = {}
    for run in sorted(p for p in out.iterdir() if (p / "events.jsonl").exists()):
        evs = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
        rid = json.loads((run / "manifest.json").read_text())["run_id"]
        bids = {(e["round"], e["agent"]): e["payload"]["bid_price"] for e in evs
                if e["kind"] == "declaration" and not e["payload"]["fallback_used"]}
        rule = {e["round"]: e["payload"]["rule"] for e in evs if e["kind"] == "schedule"}
        diffs = [e["payload"]["amount"] - bids[(e["round"], e["payload"]["payer"])] for e in evs
                 if e["kind"] == "payment" and (e["round"], e["payload"]["payer"]) in bids
                 and rule[e["round"]] in ("ballots", "highest-bid")]
        if diffs:
            res[rid] = (sum(d != 0 for d in diffs) / len(diffs), sum(diffs) / len(diffs), len(diffs))
    return res


def _row(frame: pl.DataFrame, measure: str) -> dict:
    (r,) = frame.filter(pl.col("measure") == measure).iter_rows(named=True)
    return r


def test_revisable_bids_paid_against_the_public_bid_recomputed_from_events(tmp_path):
    _runs(tmp_path, negotiator_model="scripted/random", mechanism="revisable", scheduler="ballots",
          private_rounds=1)
    ds = sl.load(tmp_path)
    res = sl.scarce.scarce_payment_gaps(ds)
    hand = _by_hand(tmp_path)
    assert len(hand) == 2 and all(n > 0 for *_, n in hand.values())
    share, size = _row(res.frame, "paid_differs"), _row(res.frame, "paid_minus_declared")
    assert share["n_runs"] == 2 and share["n_items"] == sum(n for *_, n in hand.values())
    assert share["mean"] == pytest.approx(sum(h[0] for h in hand.values()) / 2)
    assert size["mean"] == pytest.approx(sum(h[1] for h in hand.values()) / 2)
    assert share["ci_method"].startswith("mean of run rates") and size["ci_method"].startswith("mean of run means")
    # revisable: the price is capped at the final (revised) bid (scheduler.py)
    rows = res.extra["saydo_scarce_payment_rows"]
    assert (rows["amount"] <= rows["final_bid"].fill_null(rows["declared_bid"])).all()
    last = rows.with_columns(d=(pl.col("amount") != pl.col("final_bid").fill_null(pl.col("declared_bid")))
                             .cast(pl.Float64)).group_by("run_id").agg(pl.col("d").mean())["d"].mean()
    assert _row(res.frame, "paid_differs_final_bid")["mean"] == pytest.approx(last)
    # no contract events: the side-payment measure is absent, not a copy of the slot measure
    assert res.frame.filter(pl.col("measure") == "paid_with_contracts_minus_declared").height == 0


def test_fixed_bids_bind_and_unpriced_schedulers_are_left_out(tmp_path):
    _runs(tmp_path / "a", seeds=(1,), negotiator_model="scripted/bid-first", scheduler="ballots")
    res = sl.scarce.scarce_payment_gaps(sl.load(tmp_path / "a"))
    hand = _by_hand(tmp_path / "a")
    r = _row(res.frame, "paid_differs")
    (h,) = hand.values()
    assert r["mean"] == h[0] and r["n_items"] == h[2] > 0
    assert r["ci_low"] is None and "one run: no interval" in r["note"]
    rows = res.extra["saydo_scarce_payment_rows"]
    # fixed bids: the declared bid is the price; only the ledger's cap can make them differ
    assert (rows.filter(pl.col("paid_differs") == 1.0)["capped"]).all()
    _runs(tmp_path / "b", seeds=(1,), negotiator_model="scripted/bid-first", scheduler="fifo")
    res = sl.scarce.scarce_payment_gaps(sl.load(tmp_path / "b"))
    assert res.frame.filter(pl.col("mean").is_not_null()).height == 0 and "left out" in res.reading


def test_a_payment_tagged_public_is_an_error(tmp_path):
    _runs(tmp_path, seeds=(1,), negotiator_model="scripted/bid-first", scheduler="ballots")
    (run,) = [p for p in tmp_path.iterdir() if (p / "events.jsonl").exists()]
    out = []
    for line in (run / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["kind"] == "payment":
            e["visibility"], e["visible_to"] = "public", []
        out.append(json.dumps(e))
    (run / "events.jsonl").write_text("\n".join(out) + "\n")
    with pytest.raises(ValueError, match="payment event seq .* is 'public'"):
        sl.scarce.scarce_payment_gaps(sl.load(tmp_path))


def test_held_contract_payments_add_to_what_was_paid(tmp_path):
    _runs(tmp_path, negotiator_model="scripted/institution-mix", scheduler="ballots",
          institutions=dict(contracts=True))
    res = sl.scarce.scarce_payment_gaps(sl.load(tmp_path))
    rows = res.extra["saydo_scarce_payment_rows"]
    held: dict[tuple, int] = {}
    for run in (p for p in tmp_path.iterdir() if (p / "events.jsonl").exists()):
        rid = json.loads((run / "manifest.json").read_text())["run_id"]
        for e in map(json.loads, (run / "events.jsonl").read_text().splitlines()):
            if e["kind"] == "contract_settlement":
                assert e["visibility"] == "private"
                if e["payload"]["held"]:
                    k = (rid, e["round"], e["payload"]["payer"])
                    held[k] = held.get(k, 0) + e["payload"]["amount"]
    assert held and sum(held.values()) > 0  # the contractor's offers were signed and held
    got = {(r["run_id"], r["contention"], r["agent"]): r["contract_paid"] for r in rows.iter_rows(named=True)}
    assert {k: v for k, v in got.items() if v} == held and all(v is not None for v in got.values())
    side = _row(res.frame, "paid_with_contracts_minus_declared")
    per_run = rows.group_by("run_id").agg((pl.col("amount") + pl.col("contract_paid")
                                           - pl.col("declared_bid")).cast(pl.Float64).mean().alias("x"))
    assert side["mean"] == pytest.approx(per_run["x"].mean()) and side["n_runs"] == 2


def test_all_zero_bids_and_payments_say_the_check_has_nothing_to_compare(tmp_path):
    # the fifo negotiator bids 0 and a 0 bid pays 0: "0% of slots differ" would be no finding
    _runs(tmp_path, seeds=(1, 2), negotiator_model="scripted/fifo", scheduler="ballots")
    res = sl.scarce.scarce_payment_gaps(sl.load(tmp_path))
    rows = res.extra["saydo_scarce_payment_rows"]
    assert rows.height > 0 and (rows["declared_bid"] == 0).all() and (rows["amount"] == 0).all()
    assert "every declared bid and every payment is 0" in res.reading.lower()
    assert "nothing to compare" in res.reading and "0% of" not in res.reading
