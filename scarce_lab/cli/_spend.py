"""``--max-cost-usd``, ``--dry-run`` and ``--check`` for the run commands (docs/models.md,
"Know before you spend" and "Dollar caps").

- ``--max-cost-usd X``: the sweep's dollar cap (:mod:`scarce_lab.runners.sweep`: one
  ledger ``OUT/.spend.sqlite`` for every process and Ray task; the call that would pass
  the cap is not sent). A model without a known price is refused before anything runs.
- ``--dry-run``: print the plan (:func:`scarce_lab.runners.preview.preview`) and exit.
- ``--check``: send one tiny request per model and api base and report key, endpoint
  and structured-output mode (:func:`scarce_lab.runners.preview.check`), then exit.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer


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
    """:func:`scarce_lab.runners.sweep.with_sweep_cap` with a CLI error.

    Raises:
        typer.BadParameter: a capped model without a known price, or a cap for an
            environment whose config has no model settings.
    """
    from ..runners.sweep import with_sweep_cap

    try:
        return with_sweep_cap(configs, out, cap)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--max-cost-usd") from None


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
