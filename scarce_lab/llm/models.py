"""Model-name conventions shared by every environment.

- ``embedded/<name>``: the offline model run in-process (default ``embedded/smollm2``).
- ``scripted/<policy>[:<arg>]``: a scripted policy; never reaches the LLM client.
- ``human/<name>``: a person at a front end (:mod:`scarce_lab.llm.human`); never
  reaches the LLM client, never priced.
- anything else: a litellm model string (``openai/gpt-4o-mini``, ``anthropic/...``,
  ``ollama/llama3``, ``hosted_vllm/...`` with ``api_base``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..data.schema import SCRIPTED_PREFIX, calls_no_model, is_human, is_scripted

EMBEDDED_MODEL = "embedded/smollm2"


@dataclass(frozen=True)
class ModelRef:
    """What a model string names.

    Attributes:
        name: the string as given.
        kind: ``scripted`` (a policy, no model), ``human`` (a person, no model),
            ``embedded`` (the offline model) or ``litellm`` (anything litellm routes:
            hosted APIs, local servers).
        policy, arg: for ``scripted/<policy>[:<arg>]``; ``None`` otherwise.
        person: for ``human/<person>``; ``None`` otherwise.
    """

    name: str
    kind: Literal["scripted", "human", "embedded", "litellm"]
    policy: str | None = None
    arg: str | None = None
    person: str | None = None


def resolve_model(name: str) -> ModelRef:
    """The one registry of model names (every environment's agents use it).

    Raises:
        ValueError: an empty name, surrounding spaces, ``scripted/`` without a policy,
            or ``human/`` without a well-formed person name.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"model must be a model name (litellm, embedded/... or scripted/<policy>), got {name!r}")
    if name != name.strip():
        raise ValueError(f"model {name!r} has surrounding spaces")
    sp = scripted_policy(name)
    if sp is not None:
        return ModelRef(name, "scripted", sp[0], sp[1])
    if is_human(name):
        return ModelRef(name, "human", person=person_of(name))
    return ModelRef(name, "embedded" if is_embedded(name) else "litellm")


def needs_client(model: str) -> bool:
    """True unless ``model`` is a scripted policy or a person (it then needs a model
    client)."""
    return not calls_no_model(model)


def via_provider(model: str) -> bool:
    """True when litellm routes ``model`` to a provider (hosted API or local server):
    neither a scripted policy, a person nor the embedded model, which take every
    setting and cost nothing."""
    return not calls_no_model(model) and not is_embedded(model)


def is_embedded(model: str) -> bool:
    """True for ``embedded/...`` model strings."""
    return model.startswith("embedded/")


def scripted_policy(model: str) -> tuple[str, str | None] | None:
    """Split ``scripted/<policy>[:<arg>]`` into ``(policy, arg)``; ``None`` for other models.

    Raises:
        ValueError: ``model`` is ``scripted/`` with an empty policy name.
    """
    if not is_scripted(model):
        return None
    rest = model.removeprefix(SCRIPTED_PREFIX)
    policy, _, arg = rest.partition(":")
    if not policy:
        raise ValueError(f"model {model!r}: 'scripted/' needs a policy name, e.g. scripted/greedy")
    return policy, (arg or None)


def model_slug(model: str) -> str:
    """A file-name-safe slug of a model string (``openai/gpt-4o`` -> ``openai-gpt-4o``)."""
    out = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in model)
    return out.strip("-") or "model"


_PERSON = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def person_of(name: str) -> str:
    """The person of ``human/<person>``: letters, digits, ``_``, ``.``, ``-`` (1..64,
    starting with a letter or digit).

    Raises:
        ValueError: not ``human/<person>`` or an ill-formed person name.
    """
    if not name.startswith("human/"):
        raise ValueError(f"model {name!r} is not a human/<name> seat")
    person = name.removeprefix("human/")
    if not _PERSON.fullmatch(person):
        raise ValueError(f"model {name!r}: a person's name after 'human/' is 1 to 64 letters, digits, '_', '.' or "
                         "'-', starting with a letter or digit (e.g. human/alice)")
    return person
