"""What a solver's tool call may carry into the harness and the record is bounded at
the one type every solver returns (``agents.scarce.schemas.SolverAction``), and the
recorded arguments are cut, so a policy written in code cannot make a run's dataset
unloadable (a 10**30-second slot request did: an Int128 value in an Int64 column) or
write a 20 MB event line (a memory note)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scarce_lab.agents.scarce.schemas import SolverAction
from scarce_lab.runners.scarce.runner import _action_args


@pytest.mark.parametrize(("field", "value"), [
    ("duration_seconds", 10**30), ("duration_seconds", -(10**30)), ("text", "x" * 100_001),
    ("command", "y" * 131_072), ("path", "p" * 4097), ("content", "c" * 200_001), ("reason", "r" * 10_001),
])
def test_out_of_bounds_arguments_are_refused_naming_the_field(field, value):
    with pytest.raises(ValidationError, match=field):
        SolverAction(tool="save_persistent_memory", **{field: value})


def test_recorded_arguments_are_cut():
    a = SolverAction(tool="save_persistent_memory", text="m" * 90_000)
    assert len(_action_args(a)["text"]) == 4000
    w = SolverAction(tool="write_file", path="f.py", content="é" * 150_000)
    args = _action_args(w)
    assert len(args["content"]) == 4000 and args["bytes"] == 300_000
    ok = SolverAction(tool="request_execution_slot", duration_seconds=2**31 - 1, reason="why")
    assert _action_args(ok) == {"duration_seconds": 2**31 - 1, "reason": "why"}
