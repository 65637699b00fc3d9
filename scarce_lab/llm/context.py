"""Context-window check before a call: count the prompt's tokens and compare
``prompt tokens + max_tokens`` with the model's window.

- Embedded model (``embedded/<name>``): the exact count, with the model's own chat
  template (from the GGUF metadata, as llama-cpp-python applies it) and tokenizer;
  the window is the loaded context size (``n_ctx``). llama-cpp-python would otherwise
  reject a prompt longer than the window with an error that reads like a connection
  failure, and silently *lower* ``max_tokens`` for a prompt near the limit.
- Hosted models: litellm's ``token_counter`` and the ``max_input_tokens`` of
  ``litellm.get_model_info``; the check is ``prompt + max_tokens <= max_input_tokens``
  (conservative where a provider counts output separately). A model litellm does not
  know (a local server, a new name) is not checked: its window is unknown, and the
  provider's own error then comes back as a ``transport_error``.

No agent in this project has a documented history truncation yet, so a prompt that does
not fit is never shortened: the call is not sent, its outcome is
``context_overflow``, and the error names agent, round, prompt tokens and window.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from .models import is_embedded

log = logging.getLogger(__name__)


class ContextWindowError(ValueError):
    """A prompt plus its requested output tokens does not fit the context window.

    Attributes: ``prompt_tokens``, ``max_tokens``, ``context_tokens`` (tokens).
    """

    def __init__(self, message: str, prompt_tokens: int, max_tokens: int, context_tokens: int):
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.context_tokens = context_tokens


@functools.lru_cache(maxsize=8)
def _embedded_formatter(name: str):
    from llama_cpp import llama_chat_format

    from .embedded import load_model

    llm = load_model(name)
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return llm, None
    eos, bos = llm.token_eos(), llm.token_bos()
    fmt = llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )
    return llm, fmt


def _embedded_name(model: str) -> str:
    return model.split("/", 1)[1] if "/" in model else model


def context_window(model: str, litellm: Any = None) -> int | None:
    """The model's context window in tokens, or ``None`` when unknown.

    ``litellm``: the module as loaded by ``scarce_lab.llm.client.load_litellm`` (needed
    for hosted models; this module does not import the client).
    """
    if is_embedded(model):
        llm, _ = _embedded_formatter(_embedded_name(model))
        return int(llm.n_ctx())
    return None if litellm is None else _hosted_window(model, litellm)


@functools.lru_cache(maxsize=256)
def _hosted_window(model: str, litellm: Any) -> int | None:
    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises for models it has not mapped
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if value else None


def count_prompt_tokens(model: str, messages: list[dict[str, Any]], litellm: Any = None) -> int | None:
    """Tokens of ``messages`` as the model will see them, or ``None`` if they cannot
    be counted (logged once per model; hosted models need ``litellm``)."""
    try:
        if is_embedded(model):
            llm, fmt = _embedded_formatter(_embedded_name(model))
            if fmt is None:
                return None
            res = fmt(messages=messages)
            return len(llm.tokenize(res.prompt.encode("utf-8", "replace"), add_bos=not res.added_special, special=True))
        if litellm is None:
            return None
        return int(litellm.token_counter(model=model, messages=messages))
    except Exception as exc:  # noqa: BLE001 - counting is best effort; never a crash
        _warn_once(model, exc)
        return None


_WARNED: set[str] = set()


def _warn_once(model: str, exc: Exception) -> None:
    if model not in _WARNED:
        _WARNED.add(model)
        log.warning("cannot count prompt tokens for %s (%s: %s); context not checked", model, type(exc).__name__, exc)


def check_context(
    model: str,
    messages: list[dict[str, Any]],
    max_tokens: int,
    *,
    agent: str | None = None,
    round: int | None = None,
    litellm: Any = None,
) -> int | None:
    """Check that the prompt plus ``max_tokens`` fits; return the prompt's token count
    (``None`` when the window or the count is unknown: not checked).

    Raises:
        ContextWindowError: it does not fit; the message names model, agent, round,
            prompt tokens, ``max_tokens`` and the window.
    """
    window = context_window(model, litellm)
    n = None if window is None else count_prompt_tokens(model, messages, litellm)
    if n is None:
        return None
    if n + max_tokens > window:
        raise ContextWindowError(
            f"prompt does not fit the context window of {model!r} (agent {agent!r}, round {round}): "
            f"{n} prompt tokens + max_tokens {max_tokens} > {window} tokens; shorten the prompt "
            f"or lower max_tokens (nothing was sent)", n, max_tokens, window)
    return n


def output_room(model: str, messages: list[dict[str, Any]], litellm: Any = None) -> int | None:
    """Tokens left for the answer after the prompt, or ``None`` when unknown."""
    window = context_window(model, litellm)
    n = None if window is None else count_prompt_tokens(model, messages, litellm)
    return None if n is None else max(0, window - n)
