"""The viewer shows a SCARCE run's institutions (promises, breaches, votes, fines,
reputation, contracts) with who could see each; overrun breaches stand where they happen."""

from __future__ import annotations

import json
import re

from scarce_lab.environments.scarce.runner import ScarceConfig, run_scarce
from scarce_lab.viewer.render import render_run
from tests.runners.test_scarce_run import FakeSandbox, fake_grade, toy_task


def test_institutions_are_shown_with_their_visibility(tmp_path):
    cfg = ScarceConfig(workers=4, subruns=1, model="scripted/fifo", negotiator_model="scripted/institution-mix", seed=1,
                       institutions=dict(sanctions="vote", reputation=True, contracts=True))
    run = run_scarce(cfg, tmp_path, tasks=[toy_task(0)], grade_fn=fake_grade, sandbox=FakeSandbox(tmp_path / "sbx"))
    manifest = json.loads((run / "manifest.json").read_text())
    evs = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    html = render_run(manifest, evs)
    assert html.count('data-phase="institutions"') >= 1
    for words in ("promises to rank itself", "BROKE its promise", "votes to fine", "not fined"):
        assert words in html, words
    offer = next(e for e in evs if e["kind"] == "contract_offer")
    p = offer["payload"]
    rows = [r for r in re.findall(r"<tr>.*?</tr>", html, re.S) if f"{p['payer']} offers {p['payee']}" in r]
    assert rows and all(f"private, visible to {p['payer']}, {p['payee']}" in r for r in rows)
    breach_rows = [r for r in re.findall(r"<tr>.*?</tr>", html, re.S) if "BROKE its promise" in r]
    assert breach_rows and all(">public<" in r for r in breach_rows)
    assert "reputation" in html and "(kept " in html


def test_an_overrun_breach_stands_outside_the_contention_block():
    from scarce_lab.environments.scarce.viewer import render

    base = {"visibility": "public", "visible_to": [], "t": 5.0, "seq": 1}
    evs = [
        {**base, "kind": "contention_start", "agent": None, "round": 0,
         "payload": {"subrun": 0, "participants": ["w0"], "queue": [], "scheduler": "fifo"}},
        {**base, "kind": "breach", "agent": "w0", "round": 1, "t": 50.0, "seq": 2,
         "payload": {"subrun": 0, "breach_kind": "overrun", "contention": 0, "detail": "overran its slot by 1.000 s",
                     "harmed": ["w1"], "voters": [], "overrun_s": 1.0}},
    ]
    html = render(evs, 500)
    block = html.split("</details>")[0]
    assert "overran its slot" not in block and "overran its slot by 1.000 s; harmed w1" in html
