"""Docker sandbox backend: container settings always; behaviour where an engine runs
(started here when none answers and the machine allows it; the task image is built
offline once, cached by the hash of its recipe). The attack suite in tests/security/
also runs against this backend."""

from __future__ import annotations

import pytest

from scarce_lab.sandbox import ResourceLimits, SandboxError, SlotNotActiveError
from scarce_lab.sandbox.docker import DockerSandbox
from scarce_lab.sandbox.docker_image import ImageRecipe, image_tag
from tests.security.conftest import backend_problem


def test_image_tag_is_a_hash_of_the_recipe():
    a, b = image_tag(ImageRecipe()), image_tag(ImageRecipe(packages=("bash",)))
    assert a.startswith("scarce-lab/task:") and len(a.split(":")[1]) == 12 and a != b
    assert image_tag(ImageRecipe(mirror="http://example/debian")) == a  # the mirror is not content


def test_container_settings():
    """The settings a worker's container starts with: no network, read-only root,
    limits, no capabilities, its own uid, the folder bound at the same path."""
    from pathlib import Path

    from scarce_lab.sandbox.docker import _DWorker

    sb = DockerSandbox.__new__(DockerSandbox)  # no engine needed to inspect the settings
    sb.image, sb.cpus, sb.limits, sb.tmp_bytes, sb._id = "img", 1.5, ResourceLimits(), 1 << 20, "x"
    sb._lock, sb._closed = __import__("threading").RLock(), False
    sb.host = __import__("types").SimpleNamespace(proc_masks={})  # the masked /proc files (none here)
    w = _DWorker("w0", Path("/run/x/w0"), 1000007, None, Path("/run/x/io/w0"),
                 exec_only={"/usr/bin/rev": "/run/x/programs/0/rev"})
    sb._workers = {"w0": w}
    kw = sb.container_kwargs("w0")
    assert kw["network_disabled"] is True and kw["read_only"] is True and kw["init"] is True
    assert kw["nano_cpus"] == 1_500_000_000 and kw["mem_limit"] == 1 << 30 == kw["memswap_limit"]
    assert kw["pids_limit"] == 64 and kw["cap_drop"] == ["ALL"] and "cap_add" not in kw
    assert kw["user"] == "1000007:1000007" and "no-new-privileges" in kw["security_opt"]
    profile = next(o for o in kw["security_opt"] if o.startswith("seccomp="))  # ours, not Docker's default
    assert '"ptrace"' in profile and "SCMP_ACT_ERRNO" in profile
    assert kw["volumes"]["/run/x/w0"] == {"bind": "/run/x/w0", "mode": "rw"}
    assert [(m["Target"], m["Source"], m["ReadOnly"]) for m in kw["mounts"]] == \
        [("/usr/bin/rev", "/run/x/programs/0/rev", True)]


@pytest.mark.docker
def test_docker_sandbox_end_to_end():
    why = backend_problem("docker")
    if why:
        pytest.skip(f"docker sandbox unavailable here: {why}")
    with DockerSandbox(limits=ResourceLimits(wall_seconds=10)) as sb:
        with pytest.raises(SlotNotActiveError):
            sb.run("w0", "true")
        sb.open_slot("w0", 60)
        r = sb.run("w0", "id -u; pwd")
        assert r.exit_code == 0 and r.stdout.split() == [str(sb.uid_of("w0")), str(sb.workdir("w0"))]
        r = sb.run("w0", "sleep 10", ResourceLimits(wall_seconds=0.5))
        assert r.timed_out and r.exit_code is None
        r = sb.run("w0", "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\"")
        assert r.exit_code != 0
        r = sb.run("w0", "echo x > /etc/x")
        assert r.exit_code != 0 and "Read-only" in r.stderr
        sb.open_slot("w1", 60)
        r = sb.run("w1", f"echo x > {sb.workdir('w0')}/f")
        assert r.exit_code != 0
        assert sb.run("w0", "tr a-z A-Z", stdin="abc\n").stdout == "ABC\n"


def test_docker_refused_without_root_or_engine(monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(SandboxError, match="root"):
        DockerSandbox(image="x")
