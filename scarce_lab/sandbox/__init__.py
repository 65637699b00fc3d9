"""Execution sandboxes for SCARCE: one per run, shared by all workers (local, docker).

Public API::

    from scarce_lab.sandbox import make_sandbox, ResourceLimits, SlotNotActiveError
    sb = make_sandbox("local")            # bubblewrap (SandboxError with the reason if it cannot isolate)
    sb = make_sandbox("docker")           # starts an engine / builds the task image if needed
    sb = make_sandbox("auto")             # docker when an engine answers now, else local
    prepare_worker(task, sb, "w0"); sb.open_slot("w0", 120); r = sb.run("w0", "ls")
    sb.list_files("w0"); sb.read_file("w0", "x.c"); sb.write_file("w0", "x.c", b"...")
    sb.close_slot("w0"); grade(task, sb.workdir("w0"), sandbox=sb); sb.close()
    # prepare_worker and grade are scarce_lab.tasks': the sandbox knows no task

Modules: :mod:`.base` (interface), :mod:`.local` (bubblewrap backend) built from
:mod:`.bwrap` (namespaces), :mod:`.zygote` (the box per slot that forks each
command), :mod:`.cgroups` (totals, teardown), :mod:`.process` (one command, watchdog), :mod:`.uids`, :mod:`.hostroot` (folders), :mod:`.fileio`
(link-safe host I/O); :mod:`.docker` with :mod:`.docker_image` (engine, offline
image); ProgramBench grading is :mod:`scarce_lab.tasks.programbench_grade`.
"""

from __future__ import annotations

from .base import ExecResult, ResourceLimits, Sandbox, SandboxError, SlotNotActiveError

__all__ = ["ExecResult", "ResourceLimits", "Sandbox", "SandboxError", "SlotNotActiveError", "make_sandbox"]


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
        SandboxError: the backend cannot run here (the message says why: not root,
            bubblewrap missing, no engine and none can be started, image build failed).
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
