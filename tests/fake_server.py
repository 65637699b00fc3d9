"""A local OpenAI-compatible chat server that answers after a fixed latency.

For the tests and benchmarks (it is no part of the package): it listens on 127.0.0.1, answers
``POST /v1/chat/completions`` after ``latency_s`` seconds with a JSON object that
satisfies the request's ``response_format`` JSON schema (enum values are picked by a
hash of the request, so games vary but stay reproducible), and counts requests and
the peak number in flight. Use it as ``openai/<anything>`` with
``api_base=server.url``.

    with FakeOpenAIServer(latency_s=0.2) as server:
        client = LLMClient(LLMSettings(api_base=server.url, cache=False))

**429 mode** (``rpm_limit``): at most ``rpm_limit`` requests are answered in any
``window_s`` seconds (sliding window, like a provider's per-minute limit); the others
get HTTP 429 at once, with the wait until a slot frees as a hint: ``Retry-After``
(whole seconds, rounded up) and ``retry-after-ms`` headers (``hint="header"``), an
OpenAI-style "Please try again in 1.234s." in the error text (``"text"``), both, or
none. ``state_limit=True`` also names the limit in the text and announces it in
``x-ratelimit-limit-requests`` headers. ``GET /stats`` counts the 429s and gives their
times (``rate_limited_at``, seconds after the first request) and every request body
received (``bodies``).

**Refusals of a form** (``refuse``): requests whose ``response_format`` type (or
``tools``) is listed get HTTP 500 naming it, as llama-cpp-python's server refuses
``json_schema``. ``json_object`` requests are answered under their ``schema``, tool
requests with a call of the first tool, requests without either under the schema a
``prompt``-mode instruction states.

**Usage and model claims**: each answer reports usage estimated from the request
(prompt: characters / 4 of the messages, tools and response format; completion:
characters / 4 of the answer, at most ``max_tokens``) and names the requested model.
``usage`` (any JSON value, or ``"absent"`` for no usage object) and ``served_model``
replace them for every answer; a request body's ``fake_usage``/``fake_model`` (sent
through ``extra_body``) replace them for that answer (adversarial servers in tests).
**Huge answers** (``pad_bytes``): the answer's text carries that many extra bytes and is
sent chunked (no ``Content-Length``) in 64 KiB pieces, as a broken or hostile server
would stream it; the transport must stop reading at its limit.

The server runs in a child Python process started with ``python -m`` (so it never
competes with the measured client for the GIL, and callers need no
``if __name__ == "__main__"`` guard).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def instance_for_schema(schema: dict[str, Any], key: int = 0, defs: dict | None = None) -> Any:
    """A value valid under a (pydantic-style) JSON schema; ``key`` picks among enum values."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return instance_for_schema(defs[schema["$ref"].split("/")[-1]], key, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][key % len(schema["enum"])]
    for combo in ("anyOf", "oneOf", "allOf"):
        if combo in schema:
            return instance_for_schema(schema[combo][0], key, defs)
    t = schema.get("type")
    if t == "object":
        props = schema.get("properties", {})
        return {
            name: instance_for_schema(sub, key + i, defs) for i, (name, sub) in enumerate(props.items())
        }
    if t == "array":
        n = schema.get("minItems", 0)
        return [instance_for_schema(schema.get("items", {}), key + i, defs) for i in range(n)]
    if t == "string":
        return "ok"[: schema.get("maxLength", 2)] or ""
    if t == "integer":
        return int(schema.get("minimum", 0))
    if t == "number":
        return float(schema.get("minimum", 0))
    if t == "boolean":
        return False
    return None


def _prompt_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a ``prompt``-mode instruction states (scarce_lab.llm.structured), if any."""
    marker = "follows this JSON schema: "
    for m in reversed(body.get("messages") or []):
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        if marker in text:
            try:
                return json.loads(text.split(marker, 1)[1])
            except ValueError:
                return None
    return None


class FakeOpenAIServer:
    """aiohttp server in a child process. Context manager; ``requests``,
    ``peak_in_flight`` and ``rate_limited`` are read from the server's ``GET /stats``.

    Args:
        latency_s: seconds before each answer.
        rpm_limit: answered requests allowed per ``window_s`` (None: no limit).
        window_s: the limit's sliding window in seconds (providers use 60).
        hint: where a 429 carries its wait: ``header``, ``text``, ``both`` or ``none``.
        state_limit: name the limit in 429 texts and in ``x-ratelimit-limit-requests``.
        pad_bytes: extra bytes in each answer's text, sent chunked (0: none).

    Raises:
        ValueError: unknown ``hint`` or a non-positive limit or window.
    """

    HINTS = ("header", "text", "both", "none")

    def __init__(
        self,
        latency_s: float = 0.2,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        rpm_limit: int | None = None,
        window_s: float = 60.0,
        hint: str = "header",
        state_limit: bool = False,
        refuse: tuple[str, ...] = (),
        usage: Any = None,
        served_model: str | None = None,
        pad_bytes: int = 0,
    ):
        if hint not in self.HINTS:
            raise ValueError(f"hint must be one of {self.HINTS}, got {hint!r}")
        if rpm_limit is not None and rpm_limit < 1:
            raise ValueError(f"rpm_limit must be >= 1, got {rpm_limit!r}")
        if window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {window_s!r}")
        self.latency_s = latency_s
        self.host = host
        self.port = port
        self.rpm_limit = rpm_limit
        self.window_s = window_s
        self.hint = hint
        self.state_limit = state_limit
        self.refuse = tuple(refuse)
        self.usage = usage
        self.served_model = served_model
        self.pad_bytes = pad_bytes
        self.bodies: list[dict[str, Any]] = []
        self.requests = 0
        self.rate_limited = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._accepted: collections.deque = collections.deque()
        self._first: float | None = None
        self._refused_at: list[float] = []
        self._proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """Base URL for litellm's ``api_base`` (``http://127.0.0.1:<port>/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def _limit_headers(self) -> dict[str, str]:
        if self.rpm_limit is None or not self.state_limit:
            return {}
        return {"x-ratelimit-limit-requests": str(self.rpm_limit)}

    def _too_many(self, web):
        """A 429 response when the window is full, else None (and the request counts)."""
        if self.rpm_limit is None:
            return None
        now = time.monotonic()
        if self._first is None:
            self._first = now
        while self._accepted and self._accepted[0] <= now - self.window_s:
            self._accepted.popleft()
        if len(self._accepted) < self.rpm_limit:
            self._accepted.append(now)
            return None
        self.rate_limited += 1
        self._refused_at.append(round(now - self._first, 3))
        wait = max(0.001, self._accepted[0] + self.window_s - now)
        message = "Rate limit reached for requests."
        if self.state_limit:
            message = (
                "Rate limit reached for fake-model in organization org-fake on requests per min "
                f"(RPM): Limit {self.rpm_limit}, Used {self.rpm_limit}, Requested 1."
            )
        if self.hint in ("text", "both"):
            message += f" Please try again in {wait:.3f}s."
        headers = self._limit_headers()
        if self.hint in ("header", "both"):
            headers["retry-after"] = str(math.ceil(wait))
            headers["retry-after-ms"] = str(math.ceil(wait * 1000))
        body = {"error": {"message": message, "type": "requests", "code": "rate_limit_exceeded"}}
        return web.json_response(body, status=429, headers=headers)

    async def _handle(self, request):
        from aiohttp import web

        body = await request.json()
        self.requests += 1
        self.bodies.append(body)
        limited = self._too_many(web)
        if limited is not None:
            return limited
        form = "tools" if body.get("tools") else (body.get("response_format") or {}).get("type")
        if form in self.refuse:  # as llama-cpp-python's server refuses json_schema: HTTP 500
            return web.json_response({"error": {"message": f"response_format type {form!r} is not supported "
                                                           "by this server", "type": "internal_server_error"}},
                                     status=500)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        rf = body.get("response_format") or {}
        schema = (rf.get("json_schema") or {}).get("schema") or rf.get("schema") or _prompt_schema(body) \
            or {"type": "object", "properties": {}}
        digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if body.get("tools"):
            fn = body["tools"][0]["function"]
            args = json.dumps(instance_for_schema(fn.get("parameters") or {}, key=digest[0]))
            message["tool_calls"] = [{"id": f"call-{self.requests}", "type": "function",
                                      "function": {"name": fn["name"], "arguments": args}}]
            finish = "tool_calls"
        else:
            message["content"] = json.dumps(instance_for_schema(schema, key=digest[0]))
        usage = self._usage(body, message)
        if self.pad_bytes:
            message["content"] = (message["content"] or "") + " " * self.pad_bytes
        answer = {
                "id": f"fake-{self.requests}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("fake_model", self.served_model or body.get("model", "fake")),
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish}
                ],
                **({} if usage == "absent" else {"usage": usage}),
            }
        if self.pad_bytes:
            data = json.dumps(answer).encode()
            out = web.StreamResponse(headers={"Content-Type": "application/json"})
            out.enable_chunked_encoding()
            await out.prepare(request)
            try:
                for i in range(0, len(data), 65536):
                    await out.write(data[i:i + 65536])
                await out.write_eof()
            except (ConnectionError, RuntimeError):  # the client stopped reading: expected
                pass
            return out
        return web.json_response(answer, headers=self._limit_headers())

    def _usage(self, body: dict[str, Any], message: dict[str, Any]) -> Any:
        """The usage this answer reports (see the module docstring)."""
        if "fake_usage" in body:
            return body["fake_usage"]
        if self.usage is not None:
            return self.usage
        sent = json.dumps([body.get("messages"), body.get("tools"), body.get("response_format")])
        out = len(json.dumps(message)) // 4
        cap = body.get("max_tokens") or body.get("max_completion_tokens")
        prompt, completion = len(sent) // 4, min(out, cap) if cap else out
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    async def _stats(self, request):
        from aiohttp import web

        return web.json_response(
            {
                "requests": self.requests,
                "peak_in_flight": self.peak_in_flight,
                "rate_limited": self.rate_limited,
                "rate_limited_at": self._refused_at,
                "bodies": self.bodies,
            }
        )

    def serve_forever(self, ready=None) -> None:
        """Serve in this process until killed; the bound port is printed as
        ``PORT <n>`` on stdout (and put on ``ready``, a queue, when given)."""
        from aiohttp import web

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_get("/stats", self._stats)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, self.host, self.port)
        loop.run_until_complete(site.start())
        port = site._server.sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)
        if ready is not None:
            ready.put(port)
        loop.run_forever()

    def start(self) -> FakeOpenAIServer:
        """Start the child process and wait (up to 20 s) until it listens.

        Raises:
            RuntimeError: the child exited or did not report its port in time.
        """
        args = [
            sys.executable, "-m", "tests.fake_server",
            "--latency", repr(self.latency_s), "--host", self.host, "--port", str(self.port),
            "--window", repr(self.window_s), "--hint", self.hint,
        ]  # fmt: skip
        if self.rpm_limit is not None:
            args += ["--rpm-limit", str(self.rpm_limit)]
        if self.state_limit:
            args.append("--state-limit")
        for form in self.refuse:
            args += ["--refuse", form]
        if self.usage is not None:
            args += ["--usage", json.dumps(self.usage)]
        if self.served_model is not None:
            args += ["--served-model", self.served_model]
        if self.pad_bytes:
            args += ["--pad-bytes", str(self.pad_bytes)]
        root = str(Path(__file__).resolve().parents[1])  # the checkout (tests/ and scarce_lab/)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True)
        deadline = time.monotonic() + 20
        line = ""
        while time.monotonic() < deadline:
            line = self._proc.stdout.readline()  # type: ignore[union-attr]
            if line.startswith("PORT ") or self._proc.poll() is not None:
                break
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"fake server did not start (last output {line!r})")
        self.port = int(line.split()[1])
        return self

    def stats(self) -> dict[str, Any]:
        """``requests``, ``peak_in_flight``, ``rate_limited`` (429s) and
        ``rate_limited_at`` (their times, seconds after the first request)."""
        import urllib.request

        with urllib.request.urlopen(f"http://{self.host}:{self.port}/stats", timeout=5) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        """Terminate the child process (idempotent)."""
        proc = self._proc
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
            self._proc = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """``python -m tests.fake_server``: serve until killed (prints ``PORT n``)."""
    ap = argparse.ArgumentParser(description="local OpenAI-compatible fake chat server")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds before each answer")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--rpm-limit", type=int, default=None, help="answered requests per window")
    ap.add_argument("--window", type=float, default=60.0, help="window of the limit, seconds")
    ap.add_argument("--hint", choices=FakeOpenAIServer.HINTS, default="header")
    ap.add_argument("--state-limit", action="store_true", help="name the limit in 429s")
    ap.add_argument("--refuse", action="append", default=[],
                    help="refuse this form with HTTP 500 (json_schema, json_object, tools); repeatable")
    ap.add_argument("--usage", type=json.loads, default=None, help="usage reported in every answer (JSON)")
    ap.add_argument("--served-model", default=None, help="model named in every answer")
    ap.add_argument("--pad-bytes", type=int, default=0, help="extra bytes per answer, sent chunked")
    a = ap.parse_args(argv)
    FakeOpenAIServer(
        a.latency, a.host, a.port,
        rpm_limit=a.rpm_limit, window_s=a.window, hint=a.hint, state_limit=a.state_limit, refuse=tuple(a.refuse),
        usage=a.usage, served_model=a.served_model,
        pad_bytes=a.pad_bytes,
    ).serve_forever()  # fmt: skip


if __name__ == "__main__":
    main()
