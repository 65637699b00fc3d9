"""Checks before any run starts: every model of every config can be used, and a run
that failed is an error where the user is.

The front doors (``sl.run``, ``scarce-lab run sovsim|scarce|economy``, ``scarce-lab demo``)
call :func:`check_configs` before any run folder is created, and ``sl.run`` calls
:func:`check_finished` on the folders it returns:

- a scripted policy the environment does not have (``scripted/greeedy``) is refused
  with the environment's own list of policies (its spec's ``check_policy``,
  :class:`scarce_lab.registry.EnvironmentSpec`);
- an ``embedded/<name>`` that is not shipped is refused with the names that are;
- a litellm model whose provider needs a key that is not in the environment (or is set
  to an empty or blank value) is refused with the variable's name (``OPENAI_API_KEY``),
  as litellm's ``validate_environment`` reports it, instead of failing each call after
  retries;
- a model name litellm cannot route to a provider (``get_llm_provider`` raises:
  ``nosuchprovider/x``, or ``Scripted/greedy`` and ``OpenAI/gpt-4o``, since names are
  case-sensitive) is refused, with the lower-case spelling as a hint;
- a person's seat (``human/<name>``) with no front end bound
  (:func:`scarce_lab.llm.human.use_desk`: ``sl.run(..., human=desk)``, the CLI's
  ``--human terminal``) is refused naming the seat;
- a run whose manifest says anything other than ``complete`` is a
  :class:`RunFailedError` carrying the manifest's ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class ModelUnavailableError(ValueError):
    """A model named in a config cannot be used (unknown policy or embedded model, a
    missing API key); the message names the config field, the model and the reason."""


class RunFailedError(RuntimeError):
    """A run ended without completing; ``run_dir``, ``status`` and the manifest's
    ``reason`` are attributes, and the message holds all three."""

    def __init__(self, run_dir: Path, status: str, reason: str | None):
        self.run_dir, self.status, self.reason = Path(run_dir), status, reason
        super().__init__(f"run {self.run_dir.name} {status}: {reason or '(no reason recorded)'} "
                         f"(manifest: {self.run_dir / 'manifest.json'})")


def check_model(model: str, llm: Any = None, *, field: str = "model") -> None:
    """Refuse a model that cannot answer: an unknown ``embedded/<name>``, or a litellm
    model whose provider's key is missing from the environment. Scripted models pass
    (their policy is the environment's business: :func:`check_configs`).

    Args:
        model: the model string of the config.
        llm: the config's ``LLMSettings`` (``api_base`` goes to litellm's check).
        field: the config field, for the message.

    Raises:
        ModelUnavailableError: the message names ``field``, ``model`` and, for a key,
            the environment variable(s) litellm looks for.
    """
    from ..llm.models import resolve_model

    try:
        ref = resolve_model(model)
    except ValueError as exc:
        raise ModelUnavailableError(f"{field}: {exc}") from None
    if ref.kind == "scripted":
        return
    if ref.kind == "human":
        from ..llm.human import current_desk

        if current_desk() is None:
            raise ModelUnavailableError(
                f"{field} {model!r}: a person plays this seat and no human front end is bound: pass human=... to "
                "sl.run (scarce_lab.agents.human.TerminalDesk() or the notebook widget), or --human terminal on "
                "the command line")
        return
    if ref.kind == "embedded":
        from ..llm.embedded import MODELS

        name = model.removeprefix("embedded/")
        if name not in MODELS:
            raise ModelUnavailableError(f"{field} {model!r}: no embedded model {name!r}; "
                                        f"available: {', '.join('embedded/' + m for m in MODELS)}")
        return
    import os

    from ..llm.transport import load_litellm

    litellm = load_litellm()
    api_base = getattr(llm, "api_base", None)
    try:
        # a name litellm cannot route (``nosuchprovider/x``, ``Scripted/greedy``,
        # ``OpenAI/gpt-4o``: provider names are lower-case) would fail every call
        litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception as exc:  # noqa: BLE001 - litellm raises BadRequestError and others
        low = model.split("/", 1)[0].lower()
        hint = (f"; model names are case-sensitive: did you mean {low + '/' + model.split('/', 1)[1]!r}?"
                if "/" in model and low != model.split("/", 1)[0] else "")
        raise ModelUnavailableError(f"{field} {model!r}: litellm cannot route it to a provider{hint} "
                                    f"({str(exc).splitlines()[0][:160]})") from None
    # a credential set to an empty or blank value counts as missing: litellm only checks
    # that the variable exists, and every call would then fail authentication
    blank = {k: v for k, v in os.environ.items()
             if not v.strip() and any(w in k for w in ("KEY", "TOKEN", "SECRET"))}
    for k in blank:
        del os.environ[k]
    try:
        env = litellm.validate_environment(model=model, api_base=api_base)
    except Exception as exc:  # noqa: BLE001 - litellm could not route the name at all
        raise ModelUnavailableError(f"{field} {model!r}: litellm cannot use it ({type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0][:200]})") from None
    finally:
        os.environ.update(blank)
    # only credentials: a missing *_API_BASE has a default (ollama) or comes from llm.api_base
    missing = [k for k in env.get("missing_keys") or [] if k and any(w in k for w in ("KEY", "TOKEN", "SECRET"))]
    if missing and not env.get("keys_in_environment"):
        how = " or ".join(f"{k} is set but empty" if k in blank else f"{k} is not set" for k in missing)
        hint = (f"; for a server of your own at {api_base} that checks no key, any value works, e.g. "
                f"{missing[0]}=none") if api_base else ""
        raise ModelUnavailableError(
            f"{field} {model!r}: {how} in the environment "
            f"(litellm needs it for this provider; keys never go into configs){hint}")


def check_configs(configs: Iterable[Any]) -> None:
    """Every model of every config is usable (see the module docstring), before
    anything is written. Each distinct (environment, model, api_base) is checked once.

    Raises:
        ModelUnavailableError: the first model that is not (field, model and reason named).
    """
    from ..registry import for_config

    seen: set[tuple] = set()
    for cfg in configs:
        check_policy = for_config(cfg).check_policy
        for field, model in cfg.played_models():
            llm = getattr(cfg, "llm", None)  # an environment without a model client has none
            key = (type(cfg).__name__, field, model, getattr(llm, "api_base", None), getattr(cfg, "task", None))
            if key in seen:
                continue
            seen.add(key)
            check_model(model, llm, field=field)
            try:
                if check_policy is not None:
                    check_policy(cfg, model)
            except ValueError as exc:
                raise ModelUnavailableError(f"{field}: {exc}") from None


def check_finished(run_dirs: Iterable[str | Path]) -> None:
    """Every run folder's manifest says ``complete``.

    Raises:
        RunFailedError: the first run that did not complete, with its manifest's error.
    """
    for d in run_dirs:
        d = Path(d)
        try:
            man = json.loads((d / "manifest.json").read_text(encoding="utf-8-sig"))
        except (OSError, ValueError) as exc:
            raise RunFailedError(d, "unreadable", f"manifest.json: {exc}") from None
        status = str(man.get("status"))
        if status != "complete":
            raise RunFailedError(d, status, man.get("error"))
