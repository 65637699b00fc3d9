"""Run the Economy of Minds: population + task + recorder.

One run = ``episodes`` training episodes followed by ``eval_episodes`` frozen
evaluation episodes on instances that depend only on the seed (so every ablation of a
seed is evaluated on the same instances). Every episode is committed (``round`` =
episode index, training first, then evaluation; ``phase`` = ``train`` | ``eval``).
Event kinds and payloads: :mod:`scarce_lab.environments.economy.events`; how they are
written (both engines): :mod:`.record`.

Seeds: founders ``{seed}:founders``; instance of training episode e ``{seed}:train:e``;
evaluation instance i ``{seed}:eval:i``; auction tie-breaks ``{seed}:auction:phase:e``;
evolution ``{seed}:evo:e``.

Seats and the newcomer (per-seat agent layers, who runs what, the join) are in
:mod:`.seats`; the ``eom-reference`` presets' episode loop in :mod:`.reference`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING

from scarce_lab.data.schema import RunManifest, RunStatus, package_version
from scarce_lab.runners.calltap import CallTap
from scarce_lab.runtime import open_run, record_calls_of

from ..config import BASELINES, EconomyRunConfig
from ..world import Economy, run_episode
from ..world.arithmetic import make_problem
from ..world.blocksworld import BlocksWorld, make_instance, size_for_episode
from ..world.core import birth_record
from ..world.program import ProgramEpisode, ProgramState
from ..world.qa import QAItem, QATask
from .record import (
    EpisodeSummary,
    action_payload,
    close_episode,
    counted_act,
    emit_birth,
    end_episode,
    episodes_to_play,
    record_changes,
    start_episode,
)
from .seats import (
    SeatedPolicy,
    join_newcomer,
    layer_of,
    make_seated_policy,
    seat_generation,
    seat_manifest,
    seated_founders,
)

if TYPE_CHECKING:
    from scarce_lab.tasks.taskdir import TaskDir

__all__ = ["BASELINES", "EconomyRunConfig", "ProgramTask", "load_qa_jsonl", "make_policy", "run_economy"]


def load_qa_jsonl(path: Path) -> list[QAItem]:
    """Read question/answer pairs from a JSONL file (one object per line).

    Accepted keys: ``question`` or ``problem``; ``answer`` or ``solution``; optional
    ``id``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a line is not JSON or lacks a question/answer (names path and line).
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, expected a JSONL file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc})") from exc
    items = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{i}: not valid JSON ({exc})") from exc
        if not isinstance(obj, dict):
            raise ValueError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
        q = obj.get("question", obj.get("problem"))
        a = obj.get("answer", obj.get("solution"))
        if not isinstance(q, str) or not q.strip() or a is None:
            raise ValueError(f"{path}:{i}: needs 'question' (or 'problem') and 'answer' fields")
        items.append(QAItem(q, str(a), str(obj.get("id", i))))
    if not items:
        raise ValueError(f"{path}: no question/answer pairs")
    return items


def make_policy(cfg: EconomyRunConfig, *, client=None, record_calls=lambda calls: None, llm_kwargs=None,
                seat=None):
    """The agent layer for ``cfg.model`` and ``cfg.task``: the model string is resolved
    once (:func:`~scarce_lab.llm.model.model_for`) against the task's scripted
    registry; a scripted stand-in is its own agent layer, a model drives the LLM
    policy of the task (over ``client``, else one made from ``cfg.llm`` only then).
    ``llm_kwargs``: the policy's ``max_tokens`` (and ``program_tokens``) plus litellm
    kwargs for every call (``mock_response`` in tests).

    ``seat`` (resolved :class:`~scarce_lab.config.seats.SeatSettings`): one seat's layer:
    its model, its temperature / reasoning effort sent with every call, its
    ``max_tokens`` as the policy's answer tokens (:mod:`.seats`).

    Raises:
        ValueError: an LLM model on Blocks World, or an unknown scripted policy.
    """
    from scarce_lab.llm import make_client
    from scarce_lab.llm.model import model_for

    if cfg.task_name == "dir":
        from ..agents.program import make_program_policy

        return make_program_policy(cfg, client=client, record_calls=record_calls, llm_kwargs=llm_kwargs)
    from ..agents.partial import ScriptedPartialPolicy
    from ..agents.program import split_llm_kwargs
    from ..agents.rules import RulePolicy

    settings, litellm_kwargs = split_llm_kwargs(cfg, llm_kwargs, ("max_tokens",), per_seat=True)
    name, generation = seat_generation(cfg, seat, settings)
    full = cfg.baseline == "full"
    if cfg.task_name == "blocksworld":
        def no_client():  # called only for a model name: rule agents take no model
            raise ValueError(f"model {name!r}: Blocks World runs rule agents; use --model scripted/random-rules")

        return model_for(name, make_client=no_client, policies=_scripted(RulePolicy, "expert" if full else None)).policy
    lm = model_for(name, client=client, make_client=lambda: make_client(cfg.llm), generation=generation,
                   policies=_scripted(ScriptedPartialPolicy, "full" if full else None), **litellm_kwargs)
    if lm.scripted:  # a scripted stand-in is its own agent layer (same methods as the model policy)
        policy = lm.policy
    else:
        from ..agents.llm import LLMPartialPolicy

        policy = LLMPartialPolicy(lm, seed=cfg.seed, record_calls=record_calls, full=full, **settings)
    policy.reference = cfg.preset != "default"
    return policy


def _scripted(cls, every: str | None):
    """A task's scripted registry for :func:`~scarce_lab.llm.model.model_for`:
    ``(name, arg) -> cls(name)``, or ``cls(every)`` whatever the name (the ``full``
    baseline plays the task's full agents).

    Raises (from the registry):
        ValueError: an argument (no scripted policy of the Economy takes one), or a name
            ``cls`` does not know.
    """

    def policy(name: str, arg: str | None):
        if arg is not None:
            raise ValueError(f"scripted/{name} takes no argument, got {arg!r}")
        return cls(every or name)

    return policy


class ProgramTask:
    """The runner's handle on a task directory (``--task dir:PATH``): one
    :class:`~scarce_lab.environments.economy.world.program.ProgramEpisode` per episode,
    the program carried over between episodes (checkpointed with :meth:`state`).
    ``verify`` (``program text ->`` a :class:`~scarce_lab.tasks.taskdir.Verification`)
    defaults to the task's verifier in the sandbox
    (:class:`~scarce_lab.tasks.taskdir.SandboxVerifier` with ``sandbox``, ``timeout_s``
    and ``image``)."""

    def __init__(self, task: TaskDir, *, sandbox: str = "local", timeout_s: float = 300.0, max_steps: int = 10,
                 verify=None, image: str | None = None):
        from scarce_lab.tasks.taskdir import SandboxVerifier

        self.task = task
        self.verify = verify or SandboxVerifier(task, sandbox=sandbox, timeout_s=timeout_s, image=image)
        self.max_steps = max_steps
        self.program = ProgramState(task.program_text)

    def episode(self, *, frozen: bool = False) -> ProgramEpisode:
        """The next episode; ``frozen`` (evaluation): on a copy, so nothing carries over."""
        import copy

        state = copy.deepcopy(self.program) if frozen else self.program
        return ProgramEpisode(self.task.instruction, state, self.verify, max_steps=self.max_steps)

    def info(self) -> dict:
        """The episode's task record: the task id (as ``item_id``) and the instruction."""
        return {"item_id": self.task.task_id, "question": self.task.instruction[:2000]}

    def state(self) -> dict:
        """What carries over, as checkpointed: the program, the best score, the verifications."""
        return {"program": self.program.program, "best_score": self.program.best_score,
                "verifications": list(self.program.verifications)}

    def load_state(self, state: dict) -> None:
        """Continue from a :meth:`state` checkpoint."""
        self.program = ProgramState(state["program"], state["best_score"], list(state["verifications"]))


class _Tasks:
    """Builds the task instance of each episode (deterministic in the seed)."""

    def __init__(self, cfg: EconomyRunConfig, items: list[QAItem] | None):
        self.cfg = cfg
        self.size: int | None = None
        self.streak = 0
        self.train_items = self.eval_items = None
        self.program = None
        if cfg.task_name == "dir":
            from scarce_lab.tasks.taskdir import load_task_dir

            self.program = ProgramTask(load_task_dir(Path(cfg.task[4:])), sandbox=cfg.sandbox,
                                       timeout_s=cfg.verifier_timeout, max_steps=cfg.reference.max_steps_per_episode,
                                       image=cfg.sandbox_image)
        if cfg.task_name == "jsonl":
            items = items if items is not None else load_qa_jsonl(Path(cfg.task[6:]))
            order = list(items)
            random.Random(f"{cfg.seed}:jsonl").shuffle(order)
            k = min(cfg.eval_episodes, len(order) // 2)
            self.eval_items, self.train_items = order[:k], order[k:] or order

    def make(self, phase: str, episode: int):
        cfg = self.cfg
        rng = random.Random(f"{cfg.seed}:{phase}:{episode}")
        if cfg.task_name == "blocksworld":
            schedule = cfg.schedule if phase == "train" else "uniform"
            n = size_for_episode(
                episode, rng, min_blocks=cfg.min_blocks, max_blocks=cfg.max_blocks,
                schedule=schedule, current=self.size, streak=self.streak, promote_after=cfg.promote_after,
            )
            if phase == "train" and schedule == "curriculum":
                if n != self.size:
                    self.streak = 0
                self.size = n
            target, stacks = make_instance(n, cfg.n_colors, rng)
            env = BlocksWorld(  # under an eom-reference preset its reward rules pay, the task only grades
                target, stacks, reward_per_block=cfg.reward_per_block if cfg.preset == "default" else 0,
                max_steps=cfg.max_steps_per_block * (n + 1),
            )
            return env, {"n_blocks": n, "target": list(target), "stacks": [list(s) for s in stacks]}
        if self.program is not None:
            return self.program.episode(frozen=phase == "eval"), self.program.info()
        if cfg.task_name == "arithmetic":
            item = make_problem(f"{cfg.seed}:{phase}:{episode}", cfg.n_steps).to_item(f"{phase}-{episode}")
        else:
            pool = self.train_items if phase == "train" else self.eval_items
            item = pool[episode % len(pool)]
        if cfg.preset != "default":  # the reference's reward rules pay; the task only grades
            env = QATask(item, reward=0, max_steps=cfg.reference.max_steps_per_episode)
        else:
            env = QATask(item, reward=cfg.qa_reward, max_steps=cfg.qa_max_steps)
        return env, {"item_id": item.item_id, "question": item.question, "answer": item.answer}

    def state(self) -> dict:
        """The curriculum's state (for the checkpoint; a task directory's program too)."""
        out = {"size": self.size, "streak": self.streak}
        if self.program is not None:
            out["program"] = self.program.state()
        return out

    def load_state(self, state: dict) -> None:
        """Restore :meth:`state`."""
        self.size, self.streak = state["size"], state["streak"]
        if self.program is not None and "program" in state:
            self.program.load_state(state["program"])

    def record(self, solved: bool) -> None:
        self.streak = self.streak + 1 if solved else 0


def manifest_for(cfg: EconomyRunConfig, run_id: str) -> RunManifest:
    """The run manifest (condition derived from the config; every seat's model and
    settings with seats: :func:`.seats.seat_manifest`)."""
    models, notes = seat_manifest(cfg)
    return RunManifest(
        run_id=run_id, environment="economy", condition=cfg.condition_label(),
        condition_settings=cfg.condition_settings(), config=cfg.model_dump(mode="json"),
        models={"agents": cfg.model, **models}, seed=cfg.seed, package_version=package_version(),
        notes={"economy": cfg.economy_config().model_dump(), **notes},
    )


def run_economy(
    cfg: EconomyRunConfig,
    out_dir: Path,
    *,
    client=None,
    llm_kwargs: dict | None = None,
    items: list[QAItem] | None = None,
    run_id: str | None = None,
    resume: bool = False,
    replay=None,
) -> Path:
    """Train (``cfg.episodes``) then evaluate frozen (``cfg.eval_episodes``); record it.

    Returns the run directory ``out_dir/<run_id>``. The model/policy and the task
    (e.g. the JSONL file) are checked before anything is written. A complete run is
    returned as it is; an unfinished one continues from its last committed episode
    when ``resume`` (:func:`scarce_lab.runtime.open_run`: one rule for every
    environment), and is an error otherwise. A config whose ``fork`` is set plays its
    parent's prefix from ``replay`` (:mod:`.fork`).

    Raises:
        ValueError: unknown scripted policy, LLM model on Blocks World, bad JSONL task.
        FileNotFoundError: the JSONL task file does not exist.
        FileExistsError: an unfinished run is there and ``resume`` is false.
        RunMismatchError: the folder holds a run with other settings.
        RunInProgressError: another live process is writing the same run.
        RuntimeError: frozen evaluation moved money (a bug; never expected).
        ForkError / ForkDivergedError: a fork that cannot be played, or whose prefix is
            not the parent's (:mod:`.fork`).
    """
    from scarce_lab.llm.scope import run_scope

    run_id = run_id or cfg.run_id
    with run_scope(run_id=run_id):  # every model call names the run (llm/scope.py)
        return _run_economy(cfg, out_dir, client=client, llm_kwargs=llm_kwargs, items=items, run_id=run_id,
                            resume=resume, replay=replay)


def _run_economy(cfg: EconomyRunConfig, out_dir: Path, *, client, llm_kwargs: dict | None,
                 items: list[QAItem] | None, run_id: str, resume: bool, replay=None) -> Path:
    fork = None
    if cfg.fork is not None:
        from .fork import EconomyFork

        fork = EconomyFork(cfg, replay)
        client = fork.wrap(client)
    tasks = _Tasks(cfg, items)
    recorder: list = []
    tap = CallTap()

    def record_calls(calls: list) -> None:
        recorder[0].record_calls(calls)
        tap.add(calls)

    def layers_of(c: EconomyRunConfig):
        policy = make_policy(c, client=client, record_calls=record_calls, llm_kwargs=llm_kwargs)
        if c.seats is not None or c.newcomer is not None:  # one agent layer per seat
            policy = make_seated_policy(c, policy, make_policy, client=client, record_calls=record_calls,
                                        llm_kwargs=llm_kwargs)
        return policy

    policy = layers_of(cfg)
    if fork is not None:
        fork.remake = layers_of
    manifest = manifest_for(cfg, run_id)
    if fork is not None:
        manifest.notes["fork"] = fork.notes()
    handle = open_run(Path(out_dir) / run_id, manifest, resume=resume)
    if handle.skipped:
        return handle.run_dir
    rec = handle.recorder
    recorder.append(rec)
    try:
        _play(cfg, rec, policy, tasks, handle.state, tap=tap, fork=fork)
    except BaseException as exc:
        record_calls_of(rec, exc)
        rec.finish(RunStatus.failed, error=f"{type(exc).__name__}: {exc}")
        raise
    if fork is not None:
        rec.manifest.notes["fork"] = fork.notes()
    rec.finish()
    return rec.run_dir


def _founders(cfg: EconomyRunConfig, rec, policy) -> Economy:
    economy = Economy(cfg.economy_config())
    if isinstance(policy, SeatedPolicy):
        return seated_founders(cfg, economy, rec, policy)
    frng = random.Random(f"{cfg.seed}:founders")
    for genome in policy.founders(cfg.agents, frng):
        bid = frng.randint(cfg.founder_bid_min, cfg.founder_bid_max)
        emit_birth(rec, birth_record(*economy.add_agent(genome, episode=0, origin="founder", bid=bid)),
                   policy.genome_json(genome), 0)
    return economy


def _play(cfg: EconomyRunConfig, rec, policy, tasks: _Tasks, state: dict | None, *,
          tap: CallTap | None = None, fork=None) -> None:
    """Play every episode not yet committed; checkpoint after each (round = episode); a
    fork (:class:`.fork.EconomyFork`) switches at its episode."""
    if cfg.preset != "default":
        from .reference import play

        return play(cfg, rec, policy, tasks, state, tap=tap)
    if state is None:
        economy = _founders(cfg, rec, policy)
        state = {"economy": economy, "tasks": tasks.state(), "order": [a.agent_id for a in economy.living()],
                 "eval_balances": None, "next_round": 0}
    economy: Economy = state["economy"]
    tasks.load_state(state["tasks"])
    of, layers, seated = layer_of(policy)  # the agent layer of an agent record (its seat's)
    if seated is not None:  # the record gate compares each agent's calls with its seat's recorded settings
        rec.seat_of = lambda a: (economy.agents[a].seat or "*") if a in economy.agents else None

    if fork is not None and state["next_round"] > fork.at:  # resumed past the fork episode
        policy = fork.start(rec, economy, policy, check=False)
        of, layers, seated = layer_of(policy)

    def rng(rnd: int, key: str) -> random.Random:
        return random.Random(key) if fork is None else fork.rng(rnd, key)

    for ep in episodes_to_play(cfg, state):
        phase, e, rnd = ep
        if fork is not None and rnd == fork.at:
            policy = fork.start(rec, economy, policy)
            of, layers, seated = layer_of(policy)
        training = phase == "train" and cfg.baseline == "none"
        for p in layers:
            if hasattr(p, "episode"):
                p.episode = rnd
        if cfg.newcomer is not None and phase == "train" and e == cfg.newcomer.episode and not state.get("joined"):
            state["joined"] = join_newcomer(cfg, economy, rec, seated, rnd)
        env, info = start_episode(cfg, rec, tasks, ep)
        summary = EpisodeSummary()
        emit = summary.emitter(cfg, rec, ep, tap)
        act = counted_act(of, rnd, [])
        res = run_episode(economy, env, trigger=lambda a, obs, of=of: of(a).trigger(a.genome, obs), act=act,
                          training=training,
                          rng=rng(rnd, f"{cfg.seed}:auction:{phase}:{e}"), emit=emit,
                          action_to_json=action_payload,
                          order=state["order"] if cfg.baseline == "round-robin" else None)
        if phase == "train":
            tasks.record(res.solved)
        end_episode(cfg, rec, ep, info, summary, solved=res.solved, steps=res.steps, reward=res.reward, end=res.end)
        if training:
            _evolve(cfg, economy, policy, rec, rnd, e, rng(rnd, f"{cfg.seed}:evo:{e}"))
        close_episode(cfg, economy, rec, tasks, state, ep)


def _evolve(cfg, economy: Economy, policy, rec, rnd: int, e: int, rng: random.Random) -> None:
    of, _, seated = layer_of(policy)  # offspring inherit their parent's seat; exploration newcomers run '*'
    policy = policy if seated is None else seated.of(None)
    end = economy.end_episode(e, rng, policy.mutate, policy.newcomer,
                              repair=getattr(policy, "repair", None), ops_for=seated and seated.ops_for)
    record_changes(rec, economy, end, rnd, lambda a: of(a).genome_json(a.genome))

