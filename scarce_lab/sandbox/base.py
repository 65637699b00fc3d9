"""The sandbox interface shared by the local and docker backends.

One sandbox per SCARCE run, shared by all workers. Each worker has its own work
folder. Commands run only inside an *active slot* (granted by the scheduler); a
command outside one is refused with :class:`SlotNotActiveError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path


class SandboxError(RuntimeError):
    """Base class of sandbox errors."""


class SlotNotActiveError(SandboxError):
    """A worker ran a command outside its granted execution slot."""


@dataclass(frozen=True)
class ResourceLimits:
    """Per-command limits. Units: seconds, bytes, count."""

    wall_seconds: float = 60.0
    cpu_seconds: int = 60
    memory_bytes: int = 1 << 30
    file_size_bytes: int = 64 << 20
    max_processes: int = 64
    network: bool = False


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one command: exit code (``None`` if killed), outputs truncated to
    ``output_limit`` characters, wall duration in seconds, and whether it timed out."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    notes: dict = field(default_factory=dict)


class Sandbox(ABC):
    """Abstract sandbox: per-worker folders, slot gating, limits, kill on slot end."""

    @abstractmethod
    def workdir(self, worker: str) -> Path:
        """Host path of ``worker``'s work folder (created on first use)."""

    @abstractmethod
    def open_slot(self, worker: str, duration_s: float) -> None:
        """Grant ``worker`` an execution window of ``duration_s`` seconds."""

    @abstractmethod
    def close_slot(self, worker: str) -> None:
        """End ``worker``'s window and kill everything it still runs."""

    @abstractmethod
    def run(self, worker: str, command: str, limits: ResourceLimits | None = None) -> ExecResult:
        """Run a shell command in ``worker``'s folder.

        Raises:
            SlotNotActiveError: ``worker`` has no active slot.
        """

    @abstractmethod
    def close(self) -> None:
        """Release every resource (processes, containers)."""

    # -- optional helpers (added for SCARCE; backends override them) -----------------
    network_isolated: bool = False
    """True when commands run without network access."""

    def slot_remaining(self, worker: str) -> float | None:
        """Seconds left in ``worker``'s window, or ``None`` without an open slot."""
        return None

    def chown_tree(self, worker: str) -> None:
        """Hand the files the host wrote into ``worker``'s folder (e.g. the task's docs
        and executable) to the worker's uid. Call after host-side writes; no-op where
        workers share the host uid."""
        return None
