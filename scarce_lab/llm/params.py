"""What a request sends: the parameters litellm sends after its own mapping, and the
settings a provider ignores.

litellm maps the OpenAI-style arguments per provider and model before sending them:
with ``litellm.drop_params`` (which the client sets, reasoning models need it) it
drops what a model does not take (``temperature`` for ``openai/o3-mini`` and
``openai/gpt-5-mini``), renames others (``max_tokens`` becomes
``max_completion_tokens`` for OpenAI's reasoning models), and may drop
``response_format``, ``seed``, ``reasoning_effort`` or ``stop``. The record, the cache
key and the condition must hold what was sent, not what was asked for:

- :func:`planned_params`: before a call, litellm's own mapping
  (``litellm.get_optional_params``, the function ``litellm.completion`` calls) of the
  call's parameters: ``(sent, dropped)``. The cache is keyed on ``sent``.
- :class:`WireCapture`: passed to litellm as ``logger_fn``, it keeps the request body
  litellm hands to the HTTP client (``complete_input_dict`` of litellm's pre-call
  log); :func:`wire_params` turns it into the recorded parameters. Where litellm does
  not build a body (a mocked answer, a custom provider) the planned mapping is
  recorded.
- :func:`ignored_settings`: the condition settings (``temperature``, ``max_tokens``,
  ``reasoning_effort``) a model would not receive; configs refuse them unless
  ``llm.allow_ignored_settings`` (then the condition records "not sent").
"""

from __future__ import annotations

import functools
import json
from typing import Any

from .models import via_provider

#: Request-body keys that are not parameters (the prompt, the model, streaming).
_NOT_PARAMS = frozenset({"messages", "model", "stream", "stream_options"})
#: OpenAI-style arguments that litellm maps per provider (``get_optional_params``).
MAPPED = (
    "temperature", "top_p", "n", "stop", "max_tokens", "max_completion_tokens", "presence_penalty",
    "frequency_penalty", "logit_bias", "response_format", "seed", "tools", "tool_choice",
    "logprobs", "top_logprobs", "parallel_tool_calls", "reasoning_effort",
)
#: Renames litellm may apply: a requested key is not "dropped" when its new name is sent.
RENAMES = {"max_tokens": ("max_completion_tokens", "max_output_tokens", "num_predict", "max_new_tokens")}
#: The sampling settings that are part of a condition (``llm.<name>``).
CONDITION_PARAMS = ("temperature", "max_tokens", "reasoning_effort")
#: What a condition records for a setting the provider ignores (``allow_ignored_settings``).
NOT_SENT = "not sent"


def _provider(model: str) -> tuple[str, str] | None:
    """``(model name for the provider, provider)`` as litellm routes ``model``."""
    from .transport import load_litellm

    try:
        name, provider, _, _ = load_litellm().get_llm_provider(model)
    except Exception:  # noqa: BLE001 - litellm cannot route it: no mapping known
        return None
    return name, provider


def planned_params(model: str, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """litellm's mapping of ``params`` for ``model``: ``(sent, dropped)``.

    ``params`` are the OpenAI-style arguments of one call (``temperature``,
    ``max_tokens``, ``seed``, ``response_format``, ``tools``...; other keys such as
    ``api_base`` or ``extra_body`` are kept as they are). ``sent`` is what litellm's
    ``get_optional_params`` returns for them (renamed, dropped, provider-specific
    shapes) plus the unmapped keys; ``dropped`` maps each requested key that is
    not sent under any name to its requested value. For ``embedded/`` models and
    models litellm cannot route, ``sent`` is ``params`` and nothing is dropped.
    """
    from .models import is_embedded

    plain = {k: v for k, v in params.items() if v is not None}
    routed = None if is_embedded(model) else _provider(model)
    if routed is None:
        return plain, {}
    name, provider = routed
    mapped = {k: v for k, v in plain.items() if k in MAPPED}
    rest = {k: v for k, v in plain.items() if k not in MAPPED}
    sent = _mapped(name, provider, mapped)
    if sent is None:  # litellm refuses the combination: it sends nothing else
        return plain, {}
    dropped = {}
    for k, v in mapped.items():
        if k in sent or any(r in sent for r in RENAMES.get(k, ())):
            continue  # sent as it is or renamed (max_tokens -> max_completion_tokens)
        # sent in the provider's own shape (stop -> stop_sequences, response_format ->
        # format) exactly when leaving it out changes the mapping
        if _mapped(name, provider, {x: y for x, y in mapped.items() if x != k}) == sent:
            dropped[k] = v
    return {**sent, **rest}, dropped


#: The seed stands in the cache key of :func:`_mapped` as this value (no other parameter
#: takes it), and the real seed is put back where it comes out: litellm's mapping is the
#: same for every seed, and computing it per call was ~10% of a call's client CPU.
_SEED_MARK = -987_654_321


def _mapped(name: str, provider: str, mapped: dict[str, Any]) -> dict[str, Any] | None:
    """litellm's ``get_optional_params`` of ``mapped`` (``None`` when it refuses them),
    computed once per model and parameters (the seed's value aside)."""
    seed = mapped.get("seed")
    marked = {**mapped, "seed": _SEED_MARK} if isinstance(seed, int) and not isinstance(seed, bool) else mapped
    try:
        key = json.dumps(marked)  # in order: a schema's property order is sent as it is
    except (TypeError, ValueError):  # not JSON (a caller's object): not cached
        return _mapped_now(name, provider, json.dumps(None), mapped)
    out = _mapped_cached(name, provider, key)
    if out is None or marked is mapped:
        return None if out is None else json.loads(json.dumps(out))
    return _put_seed(json.loads(json.dumps(out)), seed)


def _put_seed(value: Any, seed: int) -> Any:
    if isinstance(value, dict):
        return {k: _put_seed(v, seed) for k, v in value.items()}
    if isinstance(value, list):
        return [_put_seed(v, seed) for v in value]
    return seed if value == _SEED_MARK and not isinstance(value, bool) else value


@functools.lru_cache(maxsize=1024)
def _mapped_cached(name: str, provider: str, key: str) -> dict[str, Any] | None:
    return _mapped_now(name, provider, key, json.loads(key))


def _mapped_now(name: str, provider: str, _key: str, mapped: dict[str, Any]) -> dict[str, Any] | None:
    from .transport import load_litellm

    try:
        out = load_litellm().get_optional_params(
            model=name, custom_llm_provider=provider, drop_params=True, **mapped)
    except Exception:  # noqa: BLE001 - refused by litellm
        return None
    return {k: v for k, v in dict(out).items() if v is not None and v != {} and k not in _NOT_PARAMS}


def wire_params(body: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a request body as litellm sent it: every key but the prompt,
    the model and streaming flags (credentials never appear in a body litellm builds,
    and are removed if they do), as JSON data."""
    from .cache import _jsonable, is_secret_param

    out = {}
    for k, v in body.items():
        if k in _NOT_PARAMS or is_secret_param(str(k)) or v is None:
            continue
        if k == "extra_body" and isinstance(v, dict):  # litellm merges it into the body
            out.update({ek: _jsonable(ev) for ek, ev in v.items() if not is_secret_param(str(ek))})
            continue
        out[str(k)] = _jsonable(v)
    return out


class WireCapture:
    """A litellm ``logger_fn``: keeps the request body of the last pre-call log
    (``model_call_details["additional_args"]["complete_input_dict"]``).

    Attributes:
        body: the request body litellm sent (a dict), or ``None`` if litellm built
            none (mocked answers, custom providers).
    """

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None

    def __call__(self, details: dict[str, Any]) -> None:
        try:
            args = details.get("additional_args") or {}
            body = args.get("complete_input_dict")
        except AttributeError:
            return
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except ValueError:
                return
        if isinstance(body, dict) and "messages" in body:
            self.body = body


def ignored_settings(model: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings among ``settings`` (``temperature``, ``max_tokens``,
    ``reasoning_effort``: name -> value, ``None`` values skipped) that litellm would
    not send to ``model``: name -> requested value. Empty for ``embedded/`` and
    ``scripted/`` models (every setting reaches them) and for models litellm cannot route.
    """
    if not via_provider(model):
        return {}
    return dict(_ignored(model, json.dumps({k: v for k, v in settings.items() if v is not None}, sort_keys=True)))


@functools.lru_cache(maxsize=256)
def _ignored(model: str, settings_json: str) -> tuple[tuple[str, Any], ...]:
    settings = json.loads(settings_json)
    _, dropped = planned_params(model, settings)
    return tuple(sorted(dropped.items()))
