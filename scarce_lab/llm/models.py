"""Model-name conventions shared by every environment.

- ``embedded/<name>``: the offline model run in-process (default ``embedded/smollm2``).
- ``scripted/<policy>[:<arg>]``: a scripted policy; never reaches the LLM client.
- anything else: a litellm model string (``openai/gpt-4o-mini``, ``anthropic/...``,
  ``ollama/llama3``, ``hosted_vllm/...`` with ``api_base``).
"""

from __future__ import annotations

EMBEDDED_MODEL = "embedded/smollm2"


def is_embedded(model: str) -> bool:
    """True for ``embedded/...`` model strings."""
    return model.startswith("embedded/")


def scripted_policy(model: str) -> tuple[str, str | None] | None:
    """Split ``scripted/<policy>[:<arg>]`` into ``(policy, arg)``; ``None`` for other models.

    Raises:
        ValueError: ``model`` is ``scripted/`` with an empty policy name.
    """
    if not model.startswith("scripted/"):
        return None
    rest = model.removeprefix("scripted/")
    policy, _, arg = rest.partition(":")
    if not policy:
        raise ValueError(f"model {model!r}: 'scripted/' needs a policy name, e.g. scripted/greedy")
    return policy, (arg or None)


def model_slug(model: str) -> str:
    """A file-name-safe slug of a model string (``openai/gpt-4o`` -> ``openai-gpt-4o``)."""
    out = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in model)
    return out.strip("-") or "model"
