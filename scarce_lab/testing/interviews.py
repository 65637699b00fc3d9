"""Conformance of retrospective interviews on a recorded run: an interview answer never
reaches any agent.

:func:`check_interviews_unseen` reads a run folder written with ``interviews: true``
(any environment that records ``interview`` events) and fails when

- an interview event is not researcher-only (``visibility`` must be ``researcher``);
- the text of an answer (explanation or view of the others, as a canary: a test's
  model plants a distinctive string there) appears in any prompt of any model call
  other than the interview's own answer, i.e. in some agent's later observation, or in
  any other event of the run;
- (positive control) the run holds no interview answer with text at all, or the
  canary is not found in its own interview event (a check that cannot fail fails).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["check_interviews_unseen"]

_MIN_CANARY = 12  # characters: shorter answers are not distinctive enough to search for


def check_interviews_unseen(run_dir: Path | str) -> int:
    """Check ``run_dir`` (see the module docstring); returns the number of answers
    searched for.

    Raises:
        AssertionError: a breach (the event, the call or the event it leaked into is
            named), or nothing to check.
    """
    run_dir = Path(run_dir)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    calls_path = run_dir / "llm_calls.jsonl"
    calls = [json.loads(line) for line in calls_path.read_text().splitlines() if line.strip()] \
        if calls_path.exists() else []
    interviews = [e for e in events if e["kind"] == "interview"]
    assert interviews, f"{run_dir}: no interview event (was the run made with interviews: true?)"
    canaries: list[tuple[str, dict]] = []
    for e in interviews:
        assert e["visibility"] == "researcher" and not e["visible_to"], (
            f"{run_dir}: interview seq {e['seq']} of {e['agent']} is {e['visibility']} to {e['visible_to']}")
        for key in ("explanation", "view_of_others"):
            text = e["payload"].get(key) or ""
            if len(text) >= _MIN_CANARY and e["payload"].get("answered_by") == "model":
                canaries.append((text, e))
    assert canaries, f"{run_dir}: no model's interview answer with text to search for (positive control)"
    for text, e in canaries:
        where = f"interview of {e['agent']} (seq {e['seq']})"
        for c in calls:
            prompt = "\n".join(str(m.get("content") or "") for m in c.get("messages") or [])
            assert text not in prompt, (
                f"{run_dir}: the {where} reached the prompt of call {c.get('call_id')} "
                f"({c.get('agent')}, {c.get('purpose')}, round {c.get('round')})")
        for other in events:
            if other["kind"] == "interview":
                continue
            assert text not in json.dumps(other["payload"], ensure_ascii=False), (
                f"{run_dir}: the {where} appears in event seq {other['seq']} ({other['kind']})")
        own = json.dumps(e["payload"], ensure_ascii=False)
        assert text in own  # positive control: the search finds it where it is
    return len(canaries)
