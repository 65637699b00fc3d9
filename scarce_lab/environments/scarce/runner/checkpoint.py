"""What a SCARCE checkpoint holds and how a run continues from one.

A checkpoint is written with every commit (after each contention and at the end of
each subrun): the pure world, the agents (pickled without their models' client), the
solvers' streaks of failing actions, and the workers' folders (only the files the
worker owns, through the one gate, :mod:`scarce_lab.sandbox.gate`, so at most 16 MiB
a worker whatever it writes; the task's original program is installed again on restore).
"""

from __future__ import annotations

import pickle
from typing import Any

from scarce_lab.data.sealed import seal, unseal


def save_state(runner: Any, *, subrun_done: bool, folders: dict[str, dict] | None = None) -> dict[str, Any]:
    """The checkpoint of ``runner`` (a :class:`~.runner.ScarceRunner`) now; ``folders``:
    the workers' snapshots already taken (:meth:`~.io.WorkerIO.snapshot`, bounded by
    :data:`scarce_lab.sandbox.gate.CHECKPOINT`), else taken here.

    Agents that cannot be pickled (a class defined inside a function, say) leave the
    checkpoint without them (``agents`` is ``None`` and ``agents_error`` says why): the
    run goes on, and a resume says it cannot continue such a run.
    """
    clients = [(h, h.client) for h in _client_holders(runner) if getattr(h, "client", None) is not None]
    for a, _ in clients:
        a.client = None
    try:
        try:
            pickled_agents = seal((runner.solvers, runner.negotiators), _context(runner))
            agents_error = None
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            pickled_agents, agents_error = None, f"{type(exc).__name__}: {exc}"
        return {
            "world": runner.world, "agents": pickled_agents, "agents_error": agents_error,
            "subrun_done": subrun_done, "streaks": dict(runner.streaks),
            "folders": {} if subrun_done else (folders if folders is not None else
                                               {w: runner.io.snapshot(runner._sbx(w)) for w in runner.world.workers}),
        }
    finally:
        for a, c in clients:
            a.client = c


def restore_state(runner: Any, state: dict[str, Any], plan: list[dict[str, Any]]) -> bool:
    """Put the checkpoint ``state`` back into ``runner`` (world, agents with a fresh
    model client, streaks, and the workers' folders when the subrun was unfinished,
    each with the task of the checkpoint's subrun in ``plan``, the run's tasks per
    subrun); returns whether its subrun was finished. The agents are unpickled only
    through the one gate, :func:`scarce_lab.data.sealed.unseal`.

    Raises:
        CheckpointRefusedError: the agents were not sealed for this run on this machine.
        RuntimeError: the checkpoint holds no agents (they could not be pickled).
    """
    if state.get("agents") is None:
        raise RuntimeError(f"this run's agents could not be checkpointed ({state.get('agents_error')}); "
                           "it cannot be resumed: delete its folder to restart it")
    runner.world = state["world"]
    runner.solvers, runner.negotiators = unseal(state["agents"], _context(runner), "the checkpoint's agents")
    runner.streaks = dict(state.get("streaks", {}))
    for h in _client_holders(runner):
        if hasattr(h, "client") and h.client is None:  # detached by save_state
            h.client = runner._client()
    if not state["subrun_done"]:
        tasks = plan[runner.world.subrun]  # the restored world's subrun (not the fresh world's -1)
        for w in runner.world.workers:  # the workers of the checkpoint's subrun (joins/leaves)
            runner.io.restore(runner._sbx(w), tasks[w], state["folders"][w])
    return state["subrun_done"]


def _context(runner: Any) -> str:
    """What the agents' seal binds them to (:mod:`scarce_lab.data.sealed`): this run."""
    return f"scarce-agents:{runner.cfg.run_id}"


def _client_holders(runner: Any) -> list[Any]:
    """What holds a model client among the runner's agents: each agent's model
    (``agent.lm``, a :class:`~scarce_lab.llm.model.ClientModel`; a scripted model holds
    none), or the agent itself for an agent without a model."""
    from scarce_lab.llm.model import ClientModel, Model

    holders = []
    for a in [*runner.solvers.values(), *runner.negotiators.values()]:
        lm = a.__dict__.get("lm") if hasattr(a, "__dict__") else None  # not a wrapper's forwarded attribute
        if not isinstance(lm, Model):
            holders.append(a)
        elif isinstance(lm, ClientModel):
            holders.append(lm)
    return holders
