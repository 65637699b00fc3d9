"""``--max-cost-usd``, ``--dry-run`` and ``--check`` for the run commands (docs/models.md,
"Know before you spend" and "Dollar caps").

- ``--max-cost-usd X``: the sweep's dollar cap. Every config gets
  ``llm.sweep_max_cost_usd = X`` and ``llm.spend_ledger = OUT/.spend.sqlite``, so every
  process and Ray task of the sweep reserves each call's worst case in one ledger
  (:mod:`scarce_lab.llm.costs`); a call that would pass the cap is not sent, its run
  stops as a missing decision ("cost cap"), and no further run is started once the
  cap is spent. A model without a known price is refused before anything runs.
- ``--dry-run``: print the plan (:func:`scarce_lab.runners.preview.preview`) and exit.
- ``--check``: send one tiny request per model and api base and report key, endpoint
  and structured-output mode (:func:`scarce_lab.runners.preview.check`), then exit.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

#: The sweep's ledger file inside the output folder.
LEDGER = ".spend.sqlite"


def spend_parameters() -> list[inspect.Parameter]:
    """The three options, for generated run commands."""
    return [
        inspect.Parameter("max_cost_usd", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            float | None, typer.Option("--max-cost-usd", min=0.0, help=(
                "dollar cap of the whole sweep (all runs, processes and Ray tasks): each call's worst case "
                "(the most any usage the server may claim can cost: scarce_lab.llm.costs.worst_case_usd) is "
                "reserved before it is sent; the call "
                "that would pass the cap is not sent and its run stops as a missing decision (resumable). "
                "Per run: -S llm.max_cost_usd=X. Prices: litellm's list or -S llm.prices=..."))]),
        inspect.Parameter("dry_run", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
            bool, typer.Option("--dry-run", help=(
                "print the planned runs, model calls, tokens (from the prompts built for the first step) and a "
                "cost range per model, then exit without calling any model"))]),
        inspect.Parameter("check", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
            bool, typer.Option("--check", help=(
                "send one tiny request per model and api base; report the key, the endpoint and the structured-"
                "output mode the server takes; then exit"))]),
    ]


def pop_spend(kwargs: dict[str, Any]) -> tuple[float | None, bool, bool]:
    """Take ``max_cost_usd``, ``dry_run`` and ``check`` out of a command's kwargs."""
    return kwargs.pop("max_cost_usd", None), bool(kwargs.pop("dry_run", False)), bool(kwargs.pop("check", False))


def apply_sweep_cap(configs: list[Any], out: Path, cap: float | None) -> list[Any]:
    """``configs`` with the sweep's cap and ledger set (unchanged when ``cap`` is
    ``None``); a per-run cap (``llm.max_cost_usd``) without a sweep cap gets the
    ledger too, so a resumed run counts what it spent before.

    Raises:
        typer.BadParameter: a capped model without a known price, or a cap for an
            environment whose config has no model settings.
    """
    out = Path(out)
    done = []
    for cfg in configs:
        no_llm = getattr(cfg, "llm", None) is None  # an environment without a model client
        if no_llm and cap is not None:
            raise typer.BadParameter(f"{type(cfg).__name__} has no model settings (llm): nothing to cap",
                                     param_hint="--max-cost-usd")
        if no_llm or (cap is None and cfg.llm.max_cost_usd is None):
            done.append(cfg)
            continue
        update = {"spend_ledger": out.resolve() / LEDGER}  # absolute: Ray tasks and processes share it
        if cap is not None:
            update["sweep_max_cost_usd"] = cap
        try:  # the llm block revalidated, then the config's own check of what reaches the models
            # (a dump and re-validation of the whole config fails on derived fields: the
            # economy's ablation lives in two places once validated)
            llm = type(cfg.llm).model_validate({**cfg.llm.model_dump(), **update})
            new = cfg.model_copy(update={"llm": llm})
            new._settings_reach_the_models()
            done.append(new)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--max-cost-usd") from None
    return done


def sweep_spent(out: Path, cap: float | None) -> bool:
    """True when the sweep's cap is spent (no further run should start)."""
    if cap is None:
        return False
    from ..llm.costs import ledger_at

    ledger = ledger_at(Path(out).resolve() / LEDGER)
    return ledger.spent("sweep") >= cap or ledger.refused("sweep", cap)


def preview_or_check(environment: str, configs: list[Any], dry_run: bool, check: bool) -> bool:
    """Print the preview and/or the check; True when the command should stop there.

    Raises:
        typer.Exit: code 1 when a checked endpoint does not answer.
    """
    if not (dry_run or check):
        return False
    from ..runners.preview import check as run_check
    from ..runners.preview import format_preview, preview

    if dry_run:
        typer.echo(format_preview(preview(environment, configs)))
    if check:
        rows = run_check(configs)
        for r in rows:
            typer.echo(r.line())
        if any(not r.ok for r in rows):
            raise typer.Exit(code=1)
    return True
