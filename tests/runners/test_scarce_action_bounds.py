"""What a solver's tool call carries into the record is bounded: the duration at the one
type every solver returns (``agents.scarce.schemas.SolverAction``: a 10**30-second slot
request made a run's dataset unloadable, an Int128 value in an Int64 column), and the
recorded texts cut (a memory note wrote a 20 MB event line)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scarce_lab.environments.scarce.agents.schemas import SolverAction
from scarce_lab.environments.scarce.runner.play import _action_args


@pytest.mark.parametrize("value", [10**30, -(10**30)])
def test_a_duration_beyond_32_bits_is_refused_naming_the_field(value):
    with pytest.raises(ValidationError, match="duration_seconds"):
        SolverAction(tool="request_execution_slot", duration_seconds=value)


def test_long_texts_are_not_refused_by_the_type():
    """Long texts reach the tools and the sandbox, which refuse them to the solver (a tool
    error, a refused command: the run goes on; ``tests/security/test_command_inputs.py``)."""
    assert len(SolverAction(tool="run_command", command="y" * 200_000).command) == 200_000


def test_recorded_arguments_are_cut():
    a = SolverAction(tool="save_persistent_memory", text="m" * 90_000)
    assert len(_action_args(a)["text"]) == 4000
    w = SolverAction(tool="write_file", path="f.py", content="é" * 150_000)
    args = _action_args(w)
    assert len(args["content"]) == 4000 and args["bytes"] == 300_000
    ok = SolverAction(tool="request_execution_slot", duration_seconds=2**31 - 1, reason="why")
    assert _action_args(ok) == {"duration_seconds": 2**31 - 1, "reason": "why"}
