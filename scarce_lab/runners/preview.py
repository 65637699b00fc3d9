"""Know before you spend: a run plan's model calls, tokens and
cost range (:func:`preview`), and one tiny request per model and api base
(:func:`check`).

Calls per run (decisions; each may take a second call: a repair or a resend, so the
high end is twice the decisions) are counted by each environment's spec
(:class:`scarce_lab.registry.EnvironmentSpec` ``plan_calls``, whose docstring says how).

Tokens: the prompts the agents actually build for the first step, captured by
running the first step with a client that records the request and sends nothing
(:class:`_Capture`), counted with litellm's counter for the model name (a local
server's own tokenizer may count more: SmolLM2 behind llama.cpp's server counted 353
where the preview said 283); each later call is assumed to be that size (prompts that
carry history grow: SovSim's round-2 prompts were 395; SCARCE's solver prompt grows
with the transcript), so the token figure is a floor. Cost: low =
calls x prompt tokens at the input price; high = twice the calls, plus the bound of the
calls per unit of play (``EnvironmentSpec.plan_unit_calls``), x (prompt + ``max_tokens``)
at the model's prices (:func:`scarce_lab.llm.costs.price_of`).

A person's seat (``human/<name>``) makes no model call: it is counted at 0 calls and
$0, and the plan says so in a note (its time is the config's ``human_time_limit_s``
per decision at most); the preview never asks the person.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class _PreviewStop(Exception):
    """Raised by :class:`_Capture` at the first model call."""


class _Capture:
    """A model client that records the first request it gets and sends nothing."""

    def __init__(self, settings: Any):
        from ..llm import LLMSettings

        # as make_client builds them: an unset value (SCARCE's max_tokens) takes the default
        self.settings = LLMSettings(**{k: v for k, v in settings.model_dump(exclude_none=True).items()
                                       if k in LLMSettings.model_fields})
        self.requests: list[dict[str, Any]] = []

    def _take(self, model: str, messages: list[dict[str, Any]], *, max_tokens: int | None = None,
              context: Any = None, **_: Any) -> None:
        self.requests.append({"model": model, "messages": messages, "purpose": getattr(context, "purpose", ""),
                              "max_tokens": max_tokens or self.settings.max_tokens})
        raise _PreviewStop

    decide = complete = _take

    async def acomplete(self, *args: Any, **kw: Any) -> None:
        self._take(*args, **kw)

    async def adecide(self, *args: Any, **kw: Any) -> None:
        self._take(*args, **kw)

    def structured_mode(self, model, api_base=None):
        return self.settings.structured_output


@dataclass
class ModelPlan:
    """One model's share of a plan. Tokens per call; USD for the whole plan;
    ``per_unit`` calls per ``unit`` of play besides (``EnvironmentSpec.plan_unit``), of
    which the runs make at most ``unit_calls_high`` (``EnvironmentSpec.plan_unit_calls``;
    ``None``: no bound known, so the cost range leaves them out and says so)."""

    model: str
    api_base: str | None
    calls_low: int = 0
    calls_high: int = 0
    per_unit: int = 0
    unit: str = ""
    prompt_tokens: int | None = None
    max_tokens: int = 0
    price: tuple[float, float] | None = None
    purpose: str = ""
    unit_calls_high: int | None = None

    @property
    def bounded(self) -> bool:
        """Every call this plan may make is in ``calls_high`` and ``unit_calls_high``."""
        return not self.per_unit or self.unit_calls_high is not None

    @property
    def cost_range(self) -> tuple[float, float] | None:
        """``(low, high)`` USD: low = ``calls_low`` x prompt tokens at the input price;
        high = (``calls_high`` + ``unit_calls_high``) x (prompt + ``max_tokens``) at the
        model's prices. ``None`` when the price or the prompt size is unknown."""
        if self.price is None or self.prompt_tokens is None:
            return None
        low = self.calls_low * self.prompt_tokens * self.price[0]
        calls = self.calls_high + (self.unit_calls_high or 0)
        high = calls * (self.prompt_tokens * self.price[0] + self.max_tokens * self.price[1])
        return low, high


@dataclass
class Preview:
    """The plan of a sweep: runs, and per model the calls, tokens and cost range."""

    environment: str
    runs: list[str] = field(default_factory=list)
    models: dict[str, ModelPlan] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _first_request(environment: str, cfg: Any) -> dict[str, Any] | None:
    """The first request an agent of ``cfg`` builds (nothing is sent), or ``None``."""
    from ..llm.human import use_desk
    from ..registry import get

    client = _Capture(cfg.llm)
    with tempfile.TemporaryDirectory(prefix="scarce_lab_preview_") as tmp, use_desk(_NoPerson()):
        try:
            get(environment).run(cfg, Path(tmp), client=client)
        except Exception:  # noqa: BLE001 - _PreviewStop, the runner's wrapping of it, or a first step that needs more than a prompt
            pass
    return client.requests[0] if client.requests else None


class _NoPerson:
    """The desk of a preview: a person is never asked (the first step stops there)."""

    async def ask(self, turn: Any) -> Any:
        raise _PreviewStop


def _seat_max_tokens(cfg: Any, model: str) -> int | None:
    """The largest per-seat answer budget of the seats of ``cfg`` that run ``model``
    (``None``: the config has no seats)."""
    resolved = getattr(cfg, "resolved_seats", None)
    seats = resolved().values() if callable(resolved) else ()
    tokens = [s.max_tokens for s in seats if s.model == model and s.max_tokens]
    return max(tokens, default=None)


def preview(environment: str, configs: list[Any]) -> Preview:
    """The plan of running ``configs`` (see the module docstring); nothing is sent."""
    from ..llm.costs import price_of
    from ..registry import get

    spec = get(environment)
    if spec.plan_calls is None and any(c.llm_models() for c in configs):
        raise ValueError(f"environment {environment!r} gives no estimate of its model calls "
                         "(EnvironmentSpec.plan_calls): a dry run cannot plan them")
    out = Preview(environment, runs=[c.run_id for c in configs])
    first: dict[tuple[str, str | None], dict[str, Any] | None] = {}
    seats_of: dict[str, int] = {}  # mixed seats (config.seats): composition -> runs
    for cfg in configs:
        for model in cfg.llm_models():
            key = (model, cfg.llm.api_base)
            plan = out.models.setdefault(model, ModelPlan(model, cfg.llm.api_base,
                                                          price=price_of(model, cfg.llm.api_base, cfg.llm.prices)))
            low, high, per_unit = spec.plan_calls(cfg, model)
            if per_unit and not spec.plan_unit:
                raise ValueError(f"environment {environment!r} plans {per_unit} calls per unit of play for {model} "
                                 "but names no unit (EnvironmentSpec.plan_unit)")
            plan.calls_low += low
            plan.calls_high += high
            plan.per_unit = max(plan.per_unit, per_unit)  # per unit of play: the most of any run
            plan.unit = spec.plan_unit
            if per_unit and spec.plan_unit_calls is not None:
                plan.unit_calls_high = (plan.unit_calls_high or 0) + int(spec.plan_unit_calls(cfg, model))
            if key not in first:
                first[key] = _first_request(environment, cfg)
            req = first[key]
            if req is not None and req["model"] == model and plan.prompt_tokens is None:
                plan.prompt_tokens = _count(model, req["messages"])
                plan.max_tokens = int(req["max_tokens"])
                plan.purpose = req["purpose"]
            elif plan.max_tokens == 0:
                plan.max_tokens = int(_seat_max_tokens(cfg, model) or cfg.llm.max_tokens or 256)
        composition = getattr(cfg, "composition", None)
        if callable(composition) and getattr(cfg, "is_mixed", lambda: False)():
            seats_of[composition()] = seats_of.get(composition(), 0) + 1
    for label, n in seats_of.items():
        out.notes.append(f"seats {label}: {n} run{'s' if n != 1 else ''}")
    people: dict[str, dict[str, float]] = {}
    for cfg in configs:
        for seat, person in cfg.human_seats().items():
            people.setdefault(person, {})[seat] = cfg.human_time_limit_s
    for person, seats in people.items():
        out.notes.append(f"{person} (seat {', '.join(seats)}): a person, 0 model calls, $0 (never priced); each "
                         f"decision waits at most {max(seats.values()):g} s (human_time_limit_s)")
    probing = sorted({(m, c.llm.api_base) for c in configs for m in c.llm_models()
                      if c.llm.structured_output == "auto" and c.llm.api_base and not m.startswith("embedded/")})
    for m, base in probing:
        out.notes.append(f"{m} at {base}: structured output 'auto' may add refused first requests (at most 3 "
                         "forms, once per call in flight before the first refusal comes back; not charged)")
    if spec.plan_note:
        out.notes.append(spec.plan_note)
    return out


def _count(model: str, messages: list[dict[str, Any]]) -> int | None:
    from ..llm.client import load_litellm
    from ..llm.context import count_prompt_tokens
    from ..llm.models import is_embedded
    from ..llm.ratelimit import estimate_tokens

    n = count_prompt_tokens(model, messages, None if is_embedded(model) else load_litellm())
    return n if n is not None else estimate_tokens(messages, 0)


def format_preview(p: Preview) -> str:
    """The plan as text (one line per model)."""
    lines = [f"dry run: {len(p.runs)} {p.environment} run(s), nothing sent"]
    lines += [f"  {r}" for r in p.runs[:20]] + ([f"  ... and {len(p.runs) - 20} more"] if len(p.runs) > 20 else [])
    for m in p.models.values():
        calls = f"{m.calls_low}-{m.calls_high} calls"
        if m.per_unit:
            calls += f" + {m.per_unit} {m.unit}" + (
                f" (at most {m.unit_calls_high} in all)" if m.unit_calls_high is not None else "")
        tok = "prompt tokens unknown" if m.prompt_tokens is None else (
            f"{m.prompt_tokens} prompt tokens/call (first {m.purpose or 'step'} prompt) + up to {m.max_tokens} out")
        cr = m.cost_range
        if m.price is None:
            cost = "price unknown (set llm.prices)"
        elif cr is None:
            cost = "cost unknown"
        elif m.price == (0.0, 0.0):
            cost = "$0 (free: local endpoint or embedded model)"
        else:
            cost = f"${cr[0]:.4f} - ${cr[1]:.4f}" + ("" if m.bounded else f" + the {m.unit}")
        where = f" at {m.api_base}" if m.api_base else ""
        lines.append(f"{m.model}{where}: {calls}; {tok}; {cost}")
    lines += [f"note: {n}" for n in p.notes]
    return "\n".join(lines)


@dataclass
class CheckRow:
    """What one tiny request found."""

    model: str
    api_base: str | None
    key: str
    ok: bool
    mode: str | None
    detail: str

    def line(self) -> str:
        where = self.api_base or "provider default endpoint"
        status = "ok" if self.ok else "FAILED"
        return (f"{status}: {self.model} at {where}; key: {self.key}; structured output: {self.mode or '-'}; "
                f"{self.detail}")


def check(configs: list[Any]) -> list[CheckRow]:
    """One tiny decision per (model, api base) of ``configs`` through the real client
    (no cache): which key variable litellm needs and whether it is set, whether the
    endpoint answers, and the structured-output mode that worked (``auto`` walks the
    modes as a run would)."""
    from pydantic import BaseModel

    from ..llm import CallContext, make_client
    from ..llm.client import load_litellm

    class Ping(BaseModel):
        ok: bool

    first: dict[tuple[str, str | None], Any] = {}  # (model, api base) -> the first config naming it
    for cfg in configs:
        for model in cfg.llm_models():
            first.setdefault((model, cfg.llm.api_base), cfg)
    rows = []
    for (model, api_base), cfg in first.items():
        env = load_litellm().validate_environment(model=model, api_base=api_base) \
            if not model.startswith("embedded/") else {"keys_in_environment": True, "missing_keys": []}
        missing = env.get("missing_keys") or []
        # litellm tells missing keys, not whether a present one was needed: say only that
        keys = f"missing {', '.join(missing)}" if missing else "none missing"
        if api_base and missing:
            keys += " (a local server may need none)"
        client = make_client(cfg.llm, cache=False, max_retries=0, max_cost_usd=None, sweep_max_cost_usd=None)
        out = client.decide(model=model, messages=[{"role": "user", "content": 'Answer {"ok": true}.'}],
                            schema=Ping, fallback=Ping(ok=False), seed=0, max_tokens=16,
                            context=CallContext(purpose="check"))
        last = out.calls[-1]
        modes = [c.structured_output for c in out.calls if c.structured_output]
        ok = not out.missing
        detail = f"answer {last.outcome}" + ("" if ok else f": {(last.error or '')[:200]}")
        if len(modes) > 1:
            detail += f" (refused: {', '.join(modes[:-1])})"
        rows.append(CheckRow(model, api_base, keys, ok, modes[-1] if modes else None, detail))
    return rows
