"""A local OpenAI-compatible chat server that answers after a fixed latency.

For benchmarks and tests only: it listens on 127.0.0.1, answers
``POST /v1/chat/completions`` after ``latency_s`` seconds with a JSON object that
satisfies the request's ``response_format`` JSON schema (enum values are picked by a
hash of the request, so games vary but stay reproducible), and counts requests and
the peak number in flight. Use it as ``openai/<anything>`` with
``api_base=server.url``.

    with FakeOpenAIServer(latency_s=0.2) as server:
        client = LLMClient(LLMSettings(api_base=server.url, cache=False))
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
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


class FakeOpenAIServer:
    """aiohttp server in a child process (so it never competes with the measured
    client for the GIL). Context manager. ``requests`` and ``peak_in_flight`` are read
    from the server's ``GET /stats``."""

    def __init__(self, latency_s: float = 0.2, host: str = "127.0.0.1", port: int = 0):
        self.latency_s = latency_s
        self.host = host
        self.port = port
        self.requests = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._proc = None

    @property
    def url(self) -> str:
        """Base URL for litellm's ``api_base`` (``http://127.0.0.1:<port>/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    async def _handle(self, request):
        from aiohttp import web

        body = await request.json()
        self.requests += 1
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        rf = body.get("response_format") or {}
        schema = (rf.get("json_schema") or {}).get("schema") or {"type": "object", "properties": {}}
        digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
        content = json.dumps(instance_for_schema(schema, key=digest[0]))
        return web.json_response(
            {
                "id": f"fake-{self.requests}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
        )

    async def _stats(self, request):
        from aiohttp import web

        return web.json_response({"requests": self.requests, "peak_in_flight": self.peak_in_flight})

    def serve_forever(self, ready=None) -> None:
        """Serve in this process until killed (``ready`` receives the bound port)."""
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
        if ready is not None:
            ready.put(port)
        loop.run_forever()

    def start(self) -> FakeOpenAIServer:
        """Start the child process and wait (up to 20 s) until it listens."""
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        ready = ctx.Queue()
        self._proc = ctx.Process(target=self.serve_forever, args=(ready,), daemon=True)
        self._proc.start()
        self.port = ready.get(timeout=20)
        return self

    def stats(self) -> dict[str, int]:
        """``{"requests": n, "peak_in_flight": k}`` from the running server."""
        import urllib.request

        with urllib.request.urlopen(f"http://{self.host}:{self.port}/stats", timeout=5) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if getattr(self, "_proc", None) is not None:
            self._proc.terminate()
            self._proc.join(10)
            self._proc = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
