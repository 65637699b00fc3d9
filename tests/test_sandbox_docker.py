"""Docker sandbox backend: container settings always; behaviour only where an engine runs."""

from __future__ import annotations

import pytest

from scarce_lab.sandbox import ResourceLimits, SandboxError, SlotNotActiveError, make_sandbox
from scarce_lab.sandbox.docker import DockerSandbox, docker_available

HAVE_DOCKER = docker_available()
needs_docker = pytest.mark.skipif(
    not HAVE_DOCKER, reason="no Docker engine answers here (docker.from_env().ping() failed)"
)


def test_container_settings_without_engine():
    """The settings the container would start with: no network, limits, non-root."""
    sb = DockerSandbox.__new__(DockerSandbox)  # no engine needed to inspect the settings
    sb.image, sb.cpus, sb.memory_bytes, sb.pids_limit = "img", 1.5, 1 << 30, 100
    from pathlib import Path

    sb.root = Path("/tmp/x")
    kw = sb.container_kwargs()
    assert kw["network_disabled"] is True
    assert kw["nano_cpus"] == 1_500_000_000 and kw["mem_limit"] == 1 << 30
    assert kw["memswap_limit"] == 1 << 30 and kw["pids_limit"] == 100
    assert kw["user"] == "65534:65534" and kw["cap_drop"] == ["ALL"]
    assert "no-new-privileges" in kw["security_opt"]


@pytest.mark.skipif(HAVE_DOCKER, reason="an engine answers: the refusal path cannot be shown")
def test_docker_kind_refused_without_engine():
    with pytest.raises(SandboxError, match="Docker engine"):
        make_sandbox("docker")


@pytest.mark.docker
@needs_docker
def test_docker_sandbox_end_to_end():
    with DockerSandbox(limits=ResourceLimits(wall_seconds=10)) as sb:
        with pytest.raises(SlotNotActiveError):
            sb.run("w0", "true")
        sb.open_slot("w0", 60)
        r = sb.run("w0", "id -u; pwd")
        assert r.exit_code == 0 and r.stdout.split()[0] != "0"
        r = sb.run("w0", "sleep 10", ResourceLimits(wall_seconds=0.5))
        assert r.timed_out
        r = sb.run("w0", "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\"")
        assert r.exit_code != 0
        sb.open_slot("w1", 60)
        r = sb.run("w1", "echo x > /work/w0/f")
        assert r.exit_code != 0
