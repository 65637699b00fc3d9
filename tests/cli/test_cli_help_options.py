"""Every option that a command's ``--help`` lists is accepted.

``scarce-lab run economy --help`` listed ``--economy-ablation`` (generated from
``EconomyConfig.ablation``), which the config always refused. This walks the whole
command tree:

- the run commands (``run sovsim|scarce|economy``, options generated from the config
  models) are invoked with each listed option, one at a time, with every choice of a
  choice option and a valid value otherwise, the runners replaced by recorders: the
  command must exit 0 and the config it would run must hold the value at the option's
  setting;
- every other command is parsed with each listed option (click's own parsing and type
  checks), which must not be a usage error.
"""

from __future__ import annotations

import enum
import types
import typing
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scarce_lab.cli import app

runner = CliRunner()
ROOT = typer.main.get_command(app)


def _walk(cmd, path: tuple[str, ...] = ()):
    if hasattr(cmd, "commands"):  # a group (typer's own click, typer._click)
        for name, sub in sorted(cmd.commands.items()):
            yield from _walk(sub, (*path, name))
    else:
        yield path, cmd


COMMANDS = list(_walk(ROOT))
RUN_COMMANDS = {("run", "sovsim"), ("run", "scarce"), ("run", "economy")}


def _ann(opt):
    """The option's value type: Optional and list unwrapped."""
    ann = opt.type_descriptor.annotation
    for _ in range(2):
        if typing.get_origin(ann) in (typing.Union, types.UnionType):
            ann = next(a for a in typing.get_args(ann) if a is not type(None))
        if typing.get_origin(ann) is list:
            ann = typing.get_args(ann)[0]
    return ann


def _choices(opt) -> list[str] | None:
    ann = _ann(opt)
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        return [str(m.value) for m in ann]
    return None


def _listed(path: tuple[str, ...], cmd) -> list:
    """The options ``--help`` lists (each checked to appear in the help text)."""
    res = runner.invoke(app, [*path, "--help"], terminal_width=400, env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert res.exit_code == 0, res.output
    opts = [p for p in cmd.params if p.param_type_name == "option" and not p.hidden and p.name != "help"]
    for p in opts:
        assert p.opts[0] in res.output, f"{' '.join(path)} --help does not list {p.opts[0]}"
    return opts


def test_the_walk_covers_every_command():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"run sovsim", "run scarce", "run economy", "table sovsim", "table scarce", "table economy",
            "report", "demo"} <= names, names


# -- run commands: invoked, runners recorded ----------------------------------------------
#: values for settings without a default (or whose default cannot be passed back as text)
SAMPLES = {
    "negotiator_model": "scripted/fifo", "api_base": "http://127.0.0.1:9/v1", "tasks": "rev",
    "reasoning_effort": "high", "stop": "END", "task": "blocksworld", "cache_dir": "/tmp/scarce-lab-help-cache",
    "rich_worker_budget": "1500", "max_tokens": "300", "worker_budgets": None, "sandbox_image": "python:3.11-slim",
    "role": "compute",
}


def _leaves(path):
    from scarce_lab import registry
    from scarce_lab.cli.environment import _leaves as leaves_of

    return {leaf.param: leaf for leaf in leaves_of(registry.get(path[1]))}


def _value_texts(opt, leaf, cls) -> list[tuple[list[str], object]]:
    """(arguments, the value the config should hold) pairs for one option."""
    if opt.is_flag:
        out = [([opt.opts[0]], True)]
        out += [([o], False) for o in opt.secondary_opts]
        return out
    if _choices(opt) is not None:
        return [([opt.opts[0], c], [c] if leaf.multiple and leaf.path not in getattr(cls, "SWEEP_FIELDS", ()) else c)
                for c in _choices(opt) if c != "all"]
    name = leaf.path.rsplit(".", 1)[-1]
    if name in SAMPLES and SAMPLES[name] is not None:
        v = SAMPLES[name]
        return [([opt.opts[0], v], [v] if leaf.multiple and name != "seed" else v)]
    field = _field(cls, leaf.path)
    default = field.get_default(call_default_factory=True)
    if isinstance(default, list):
        default = default[0] if default else None
    if default is None:
        raise AssertionError(f"no sample value for {opt.opts[0]} ({leaf.path}): add one to SAMPLES")
    if isinstance(default, enum.Enum):
        default = default.value
    expected = [default] if leaf.multiple and leaf.path not in getattr(cls, "SWEEP_FIELDS", ()) else default
    return [([opt.opts[0], str(default)], expected)]


def _field(cls, dotted: str):
    from scarce_lab.cli._options import _unwrap_optional

    model = cls
    parts = dotted.split(".")
    for p in parts[:-1]:
        model = _unwrap_optional(model.model_fields[p].annotation)
    return model.model_fields[parts[-1]]


def _get(cfg, dotted: str):
    v = cfg
    for p in dotted.split("."):
        v = getattr(v, p)
    return v.value if isinstance(v, enum.Enum) else v


@pytest.fixture()
def recorded(monkeypatch, tmp_path):
    """Replace the runners by recorders of the configs they are given."""
    import scarce_lab.environments.sovsim.runner.play as rv
    import scarce_lab.runners.executors as ex

    seen: list = []

    def sweep(configs, out, **kw):
        seen.extend(configs)
        from scarce_lab.environments.sovsim.runner.play import GameResult

        return [GameResult(c.run_id, "complete") for c in configs]

    def task(environment):  # one run after another: what the executors' task of each run returns
        def one(cfg, out, resume):
            seen.append(cfg)
            return ex.RunOutcome(cfg.run_id, "complete")

        return one

    def on_ray(env, configs, out, **kw):
        seen.extend(configs)
        from types import SimpleNamespace

        return [SimpleNamespace(run_id=c.run_id, status="complete", error=None) for c in configs]

    monkeypatch.setattr(rv, "run_sweep", sweep)
    monkeypatch.setattr(ex, "run_task", task)
    monkeypatch.setattr(ex, "run_configs", on_ray)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the preflight's key check is tested elsewhere
    return seen


def _invoke(path, args, tmp_path):
    base = [*path, "--out", str(tmp_path / "out")]
    if path[1] == "sovsim":
        base += ["--no-progress", "--condition", "kcpr", "--simulations", "1"]
    return runner.invoke(app, [*base, *args])


@pytest.mark.parametrize("path", sorted(RUN_COMMANDS), ids=lambda p: " ".join(p))
@pytest.mark.slow
def test_every_listed_run_option_is_accepted(path, recorded, tmp_path):
    cmd = dict((p, c) for p, c in COMMANDS)[path]
    leaves = _leaves(path)
    cls = next(iter(leaves.values())) and {"sovsim": "SovSimConfig", "scarce": "ScarceConfig",
                                            "economy": "EconomyRunConfig"}[path[1]]
    import scarce_lab.config as C

    cls = getattr(C, cls)
    checked = 0
    for opt in _listed(path, cmd):
        if opt.name in leaves:
            for args, expected in _value_texts(opt, leaves[opt.name], cls):
                if leaves[opt.name].path.startswith("reference."):  # reference.* needs its preset
                    args = ["--preset", "eom-reference", *args]
                if path[1] == "economy" and leaves[opt.name].path in ("sandbox", "verifier_timeout", "sandbox_image"):
                    tiny = Path(__file__).parents[1] / "taskdirs" / "tiny-target"  # these apply to task directories
                    args = ["--preset", "eom-reference", "--task", f"dir:{tiny}", "--model", "scripted/partial", *args]
                    if leaves[opt.name].path == "sandbox_image":  # an image is for the docker sandbox
                        args = [*args, "--sandbox", "docker"]
                if path[1] == "economy" and leaves[opt.name].path.startswith("newcomer."):
                    # a newcomer's settings need its episode; a role needs a question-answer task
                    args = ["-S", "newcomer.episode=1", "--task", "arithmetic", "--model", "scripted/partial", *args]
                recorded.clear()
                res = _invoke(path, args, tmp_path)
                assert res.exit_code == 0, f"{' '.join(path)} {' '.join(args)} refused: {res.output[-800:]}"
                assert recorded, f"{' '.join(path)} {' '.join(args)}: nothing would run"
                got = _get(recorded[-1], leaves[opt.name].path)
                if leaves[opt.name].path in getattr(cls, "SWEEP_FIELDS", ()) and not isinstance(expected, list):
                    assert got == type(got)(expected), (args, got)
                else:
                    assert got == expected or [got] == expected or got == type(got)(expected), (args, got, expected)
                checked += 1
            continue
        # options of the command itself (not config settings)
        extra = {
            "--out": [], "--resume": ["--resume"], "--no-progress": ["--no-progress"], "--progress": ["--progress"],
            "--simulations": ["--simulations", "2"], "--processes": ["--processes", "1"],
            "--executor": ["--executor", "local"], "--address": ["--executor", "ray", "--address", "auto"],
            "--set": ["-S", "seed=3"], "--max-cost-usd": ["--max-cost-usd", "5"],
        }
        if opt.opts[0] in ("--dry-run", "--check"):  # they run nothing: a plan, or one tiny request per model
            recorded.clear()
            a = [opt.opts[0], "--model", "scripted/greedy" if path[1] == "sovsim" else "scripted/random"]
            if path[1] == "economy":
                a = [opt.opts[0]]
            res = _invoke(path, a, tmp_path)
            assert res.exit_code == 0, f"{' '.join(path)} {' '.join(a)} refused: {res.output[-800:]}"
            assert not recorded, f"{' '.join(path)} {opt.opts[0]}: a run started"
            checked += 1
            continue
        if opt.opts[0] == "--seat":  # -S seats.KEY=MODEL for configs that have seats (config.seats)
            recorded.clear()
            # a seat model other than the default (seats that change nothing are dropped: the run without them)
            other = {"sovsim": "scripted/greedy", "scarce": "scripted/random", "economy": "scripted/expert"}[path[1]]
            res = _invoke(path, ["--seat", f"*={other}"], tmp_path)
            if "seats" in cls.model_fields:
                assert res.exit_code == 0, f"{' '.join(path)} --seat refused: {res.output[-800:]}"
                assert recorded and "*" in recorded[-1].seats and recorded[-1].seats["*"].model == other
            else:  # a config without seats names the field
                assert res.exit_code != 0 and "seats" in res.output, res.output[-800:]
            checked += 1
            continue
        if opt.opts[0] in ("--population", "--background", "--focal-seats", "--seat-part"):  # a cross-play grid
            member = {"sovsim": "scripted/greedy", "scarce": "scripted/fifo", "economy": "scripted/random-rules"}[path[1]]
            a = ["--population", member, "--background", member, "--focal-seats", "1"]
            if path[1] == "scarce":
                a += ["--seat-part", "negotiator"]
            recorded.clear()
            res = _invoke(path, a, tmp_path)
            assert res.exit_code == 0, f"{' '.join(path)} {' '.join(a)} refused: {res.output[-800:]}"
            assert recorded, f"{' '.join(path)} {' '.join(a)}: nothing would run"
            checked += 1
            continue
        if opt.opts[0] == "--human":  # the person's front end: a human seat, one game (nothing asks here: recorded)
            seat = {"sovsim": "a0=human/tester", "scarce": "w0.negotiator=human/tester"}[path[1]]
            a = ["--seat", seat, "--human", "terminal"] + (["--seed", "1"] if path[1] == "scarce" else [])
            recorded.clear()
            res = _invoke(path, a, tmp_path)
            assert res.exit_code == 0, f"{' '.join(path)} {' '.join(a)} refused: {res.output[-800:]}"
            assert recorded and recorded[-1].human_seats(), f"{' '.join(path)} {' '.join(a)}: no human seat"
            checked += 1
            continue
        if opt.opts[0] == "--config":
            cfg = tmp_path / "c.yaml"
            cfg.write_text("seed: 4\n")
            args = ["--config", str(cfg)]
        else:
            assert opt.opts[0] in extra, f"{' '.join(path)}: no test value for {opt.opts[0]}"
            args = extra[opt.opts[0]]
        for a in ([args] if opt.opts[0] != "--executor" else [["--executor", c] for c in _choices(opt)]):
            recorded.clear()
            res = _invoke(path, a, tmp_path)
            assert res.exit_code == 0, f"{' '.join(path)} {' '.join(a)} refused: {res.output[-800:]}"
            assert recorded
        checked += 1
    assert checked >= 10


def test_economy_help_lists_ablation_once():
    """``--economy-ablation`` (always refused) is gone; ``--ablation``/``-a`` is the one way."""
    res = runner.invoke(app, ["run", "economy", "--help"], terminal_width=400, env={"COLUMNS": "400"})
    assert "--economy-ablation" not in res.output and "--ablation" in res.output
    res = runner.invoke(app, ["run", "economy", "--economy-ablation", "no-auction"])
    assert res.exit_code == 2 and "No such option" in res.output


# -- every other command: parsed ------------------------------------------------------------
def _sample(opt, tmp_path: Path) -> list[list[str]]:
    if opt.is_flag:
        return [[opt.opts[0]], *([[o] for o in opt.secondary_opts])]
    choices = _choices(opt)
    if choices is not None:
        return [[opt.opts[0], c] for c in choices]
    ann = _ann(opt)
    if ann is int:
        return [[opt.opts[0], str(opt.min if opt.min is not None else 1)]]
    if ann is float:
        return [[opt.opts[0], str(opt.min if opt.min is not None else 0.5)]]
    if ann is Path:
        f = tmp_path / "f.txt"
        f.write_text("x")
        return [[opt.opts[0], str(f)]]
    if opt.name == "param":
        return [[opt.opts[0], "SEED=1"]]
    return [[opt.opts[0], "x"]]


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS if p not in RUN_COMMANDS], ids=lambda p: " ".join(p))
def test_every_listed_option_of_other_commands_parses(path, tmp_path):
    cmd = dict(COMMANDS)[path]
    positional = [str(tmp_path) if a.type_descriptor.annotation is Path else "x"
                  for a in cmd.params if a.param_type_name == "argument" and a.required]
    listed = _listed(path, cmd)
    required = {o.name: _sample(o, tmp_path)[0] for o in listed if o.required}
    for opt in listed:
        for args in _sample(opt, tmp_path):
            others = [a for name, sample in required.items() if name != opt.name for a in sample]
            try:
                with cmd.make_context(" ".join(path), [*positional, *others, *args]) as ctx:
                    value = ctx.params[opt.name]
            except Exception as exc:  # typer's click: BadParameter, NoSuchOption, ...
                if not hasattr(exc, "format_message"):
                    raise
                raise AssertionError(f"{' '.join(path)} {' '.join(args)}: {exc.format_message()}") from None
            assert value is not None, (path, args)
