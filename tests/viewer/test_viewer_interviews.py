"""The viewer shows retrospective interviews as researcher-only, says who answered
(a model, or a scripted rule labelled as such), and shows no text for an answer that
is missing or unusable."""

from __future__ import annotations

import asyncio

from scarce_lab.config import SovSimConfig
from scarce_lab.environments.sovsim.runner.play import arun_game
from scarce_lab.llm.mock import MockModel
from scarce_lab.viewer import view
from scarce_lab.viewer.render import INTERVIEW_SEEN_BY, render_run


def _answers(messages):
    text = messages[-1]["content"]
    if "A researcher now asks you" in text:
        return ('{"explanation": "I kept <b>to</b> my share.", "view_of_others": "Fair players.", '
                '"self_assessment": "fair"}')
    return '{"reasoning": "r", "extraction": 12}'


def test_sovsim_interviews_shown_researcher_only_with_model_calls(tmp_path):
    cfg = SovSimConfig(condition="cpr", model="mock/any", interviews=True, game={"rounds": 2})
    res = asyncio.run(arun_game(cfg, tmp_path, client=MockModel(_answers)))
    html = view(tmp_path / res.run_id)._repr_html_()
    assert "Retrospective interviews (researcher only)" in html
    assert html.count('data-kind="interview" data-visibility="researcher"') == 4
    assert html.count(INTERVIEW_SEEN_BY) == 4
    assert "self-assessment <b>fair</b>" in html and "I kept &lt;b&gt;to&lt;/b&gt; my share." in html
    assert html.count("model <code>mock/any</code>") == 4
    # each interview shows its own call: the prompt it was asked (its memory) and the answer
    blocks = html.split('data-kind="interview"')[1:]
    assert all('class="sl-call"' in b and "A researcher now asks you" in b for b in blocks)


def test_scripted_missing_and_unusable_interviews_are_labelled():
    manifest = {"run_id": "r", "environment": "scarce", "condition": "c", "models": {}, "seed": 0}
    base = {"subrun": 0, "questions": "interview_v1", "memory_events": 3}
    ev = [
        {"seq": 0, "kind": "subrun_end", "agent": None, "t": 9.0, "visibility": "researcher",
         "payload": {"subrun": 0, "conserved": True, "sink": "bank", "sink_balance": 0, "balances": []}},
        {"seq": 1, "kind": "interview", "agent": "w0", "t": 9.0, "visibility": "researcher",
         "payload": {**base, "answered_by": "scripted", "model": "scripted/fifo", "explanation": "rule text",
                     "view_of_others": "", "self_assessment": "fair", "valid": True}},
        {"seq": 2, "kind": "interview", "agent": "w1", "t": 9.0, "visibility": "researcher",
         "payload": {**base, "answered_by": "model", "model": "m", "missing": True, "valid": False,
                     "explanation": "", "view_of_others": ""}},
        {"seq": 3, "kind": "interview", "agent": "w2", "t": 9.0, "visibility": "researcher",
         "payload": {**base, "answered_by": "model", "model": "m", "fallback_used": True, "valid": False,
                     "explanation": "", "view_of_others": ""}},
    ]
    html = render_run(manifest, ev)
    assert "scripted policy <code>scripted/fifo</code> (its rule, written by scarce_lab; not a model)" in html
    assert "no answer (missing" in html and "no usable answer (fallback" in html
    assert html.count(INTERVIEW_SEEN_BY) == 3
    assert html.index("subrun ends") < html.index("interview of w0")  # after the subrun's end, in time order
