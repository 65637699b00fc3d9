"""A model that answers from a script: the whole client (parsing, validation, repair,
outcomes, records) runs, only the provider is replaced, through litellm's own
``mock_response`` path (no network, no key, no cache by default).

Use in tests, examples and notebooks::

    from scarce_lab.llm.mock import MockModel
    lm = MockModel(['{"reasoning": "share", "extraction": 15}'])
    agent = make_agent("mock/any", lm)              # any agent takes any client
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

from .client import LLMClient, LLMSettings


class MockModel(LLMClient):
    """An :class:`~scarce_lab.llm.client.LLMClient` whose answers come from ``answers``:
    a list (used in order; the last one repeats), or a callable ``messages -> text``.

    Attributes:
        seen: the messages of every call made, in order.
    """

    def __init__(self, answers: Iterable[str] | Callable[[list[dict[str, Any]]], str],
                 settings: LLMSettings | None = None):
        super().__init__(settings or LLMSettings(cache=False, max_retries=0))
        self.seen: list[list[dict[str, Any]]] = []
        if callable(answers):
            self._next = answers
        else:
            items = list(answers)
            if not items:
                raise ValueError("MockModel needs at least one answer")
            it = itertools.chain(items, itertools.repeat(items[-1]))
            self._next = lambda messages: next(it)

    async def acomplete(self, model: str, messages: list[dict[str, Any]], *, seed: int, **kwargs: Any):
        self.seen.append(messages)
        kwargs.setdefault("mock_response", self._next(messages))
        if "/" not in model or model.split("/", 1)[0] not in _known_providers():
            kwargs.setdefault("custom_llm_provider", "openai")  # litellm needs a provider to mock
        return await super().acomplete(model, messages, seed=seed, **kwargs)


def _known_providers() -> set[str]:
    from .transport import load_litellm

    return {str(p) for p in load_litellm().provider_list}
