"""Execution sandboxes for SCARCE: one per run, shared by all workers (local, docker).

Public API::

    from scarce_lab.sandbox import make_sandbox, ResourceLimits, SlotNotActiveError
    sb = make_sandbox("local")            # or "docker" (raises SandboxError if no engine)
    sb = make_sandbox("auto")             # docker when an engine answers, else local
    sb.open_slot("w0", 120); r = sb.run("w0", "ls"); sb.close_slot("w0"); sb.close()

See :mod:`.base` (interface), :mod:`.local` (default) and :mod:`.docker`.
"""

from __future__ import annotations

from .base import ExecResult, ResourceLimits, Sandbox, SandboxError, SlotNotActiveError

__all__ = [
    "ExecResult",
    "ResourceLimits",
    "Sandbox",
    "SandboxError",
    "SlotNotActiveError",
    "make_sandbox",
]


def make_sandbox(kind: str = "local", **kwargs) -> Sandbox:
    """Create a sandbox backend.

    Args:
        kind: ``"local"`` (:class:`.local.LocalSandbox`), ``"docker"``
            (:class:`.docker.DockerSandbox`) or ``"auto"`` (docker if an engine
            answers, else local).
        **kwargs: passed to the backend constructor (e.g. ``limits=``, ``root=``,
            ``output_limit=``; docker: ``image=``).

    Raises:
        ValueError: unknown ``kind``.
        SandboxError: ``kind="docker"`` and no Docker engine answers.
    """
    if kind == "auto":
        from .docker import docker_available

        kind = "docker" if docker_available() else "local"
    if kind == "local":
        from .local import LocalSandbox

        return LocalSandbox(**kwargs)
    if kind == "docker":
        from .docker import DockerSandbox

        return DockerSandbox(**kwargs)
    raise ValueError(f"sandbox kind must be 'local', 'docker' or 'auto', got {kind!r}")
