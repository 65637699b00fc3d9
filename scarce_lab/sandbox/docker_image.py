"""The Docker engine and the task image, both made here when missing (no registry needed).

Engine: when no engine answers and this process is root with ``dockerd`` installed
(Debian package ``docker.io``, from ``scripts/install.sh``), ``dockerd`` is started
in the background (``--iptables=false --ip6tables=false --bridge=none``: containers
only ever run with ``--network none``), its log in ``/run/scarce_lab/dockerd.log``.

Image: no image registry is reachable on the lab machines, so the task image is built
offline from Debian packages: ``debootstrap --variant=minbase <release>`` from the
Debian mirror (``SCARCE_LAB_DEBIAN_MIRROR``, else the machine's apt source, else
``http://deb.debian.org/debian``) with the compilers and interpreters solvers may use
(gcc, g++, make, python3, perl, gawk; a JRE with :data:`JAVA_PACKAGES`), apt caches
removed, then ``docker import``. The
tag is a content hash of the recipe, so a built image is reused (a fresh machine builds
it once: about 1 to 2 minutes on 2 cores) and a changed recipe builds a new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .base import SandboxError

__all__ = ["JAVA_PACKAGES", "ImageRecipe", "engine_client", "engine_problem", "ensure_image", "image_tag"]

STATE_DIR = Path("/run/scarce_lab")
DEFAULT_PACKAGES = (
    "bash", "coreutils", "findutils", "grep", "sed", "gawk", "diffutils", "util-linux",
    "bsdextrautils", "procps", "gcc", "g++", "libc6-dev", "make", "python3", "perl",
)
#: Add to ``ImageRecipe.packages`` for Java solvers: it doubles the build time (about
#: 2 more minutes on 2 cores) and the image size (+320 MB), so it is not in the default.
JAVA_PACKAGES = ("default-jre-headless",)


@dataclass(frozen=True)
class ImageRecipe:
    """What goes into the task image. ``mirror=None``: see the module docstring."""

    release: str = "bookworm"
    variant: str = "minbase"
    packages: tuple[str, ...] = DEFAULT_PACKAGES
    mirror: str | None = None
    version: int = 1  # bump when the build steps change


def _mirror(recipe: ImageRecipe) -> str:
    if recipe.mirror:
        return recipe.mirror
    env = os.environ.get("SCARCE_LAB_DEBIAN_MIRROR")
    if env:
        return env
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        with contextlib.suppress(OSError):
            m = re.search(r"(?m)^(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(https?://\S+/debian)/?\s", f.read_text())
            if m:
                return m.group(1)
    return "http://deb.debian.org/debian"


def image_tag(recipe: ImageRecipe = ImageRecipe()) -> str:
    """``scarce-lab/task:<first 12 hex of the sha256 of the recipe>`` (mirror excluded)."""
    d = asdict(recipe)
    d.pop("mirror")
    h = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]
    return f"scarce-lab/task:{h}"


def _ping(timeout_s: float = 3.0):
    import docker

    c = docker.from_env(timeout=max(1, int(timeout_s)))
    c.ping()
    return c


def engine_problem() -> str:
    """Why no engine can be used ('' if one answers or this process can start one)."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker Python SDK is not installed (pip install docker)"
    try:
        _ping()
        return ""
    except Exception as exc:  # noqa: BLE001 - any failure means no engine answers
        why = f"no Docker engine answers ({type(exc).__name__})"
    if os.geteuid() != 0:
        return why + "; starting one needs root"
    if shutil.which("dockerd") is None:
        return why + "; dockerd is not installed (apt-get install docker.io, or scripts/install.sh)"
    return ""


def engine_client(start: bool = True, timeout_s: float = 60.0):
    """A client of an engine that answers, starting ``dockerd`` if needed and allowed.

    Raises:
        SandboxError: no engine answers and none could be started (with the reason).
    """
    try:
        return _ping()
    except ImportError as exc:
        raise SandboxError("the docker Python SDK is not installed (pip install docker)") from exc
    except Exception as exc:  # noqa: BLE001
        first = exc
    why = engine_problem() if start else f"no Docker engine answers ({type(first).__name__}: {first})"
    if not start or why:
        raise SandboxError(why or f"no Docker engine answers ({first})")
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    log = STATE_DIR / "dockerd.log"
    with open(log, "ab") as out:
        subprocess.Popen([shutil.which("dockerd"), "--iptables=false", "--ip6tables=false", "--bridge=none"],
                         stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        time.sleep(0.5)
        with contextlib.suppress(Exception):
            return _ping()
    tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
    raise SandboxError(f"started dockerd but it did not answer within {timeout_s:.0f} s; log {log}:\n{tail}")


def ensure_image(client, recipe: ImageRecipe = ImageRecipe(), *, timeout_s: float = 1800.0) -> str:
    """The tag of the task image for ``recipe``, built (module docstring) if missing.

    Raises:
        SandboxError: debootstrap missing, not root, or the build failed (with its log tail).
    """
    import docker

    tag = image_tag(recipe)
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.get(tag)
        return tag
    if os.geteuid() != 0:
        raise SandboxError(f"task image {tag} is missing and building it needs root")
    if shutil.which("debootstrap") is None:
        raise SandboxError(f"task image {tag} is missing and debootstrap is not installed "
                           "(apt-get install debootstrap, or scripts/install.sh as root)")
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "image-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time on this machine
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.get(tag)
            return tag
        work = Path(tempfile.mkdtemp(prefix="scarce-image-", dir="/var/tmp"))
        try:
            rootfs = work / "rootfs"
            cmd = ["debootstrap", f"--variant={recipe.variant}", f"--include={','.join(recipe.packages)}",
                   recipe.release, str(rootfs), _mirror(recipe)]
            with open(work / "build.log", "wb") as out:
                r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
            if r.returncode != 0:
                tail = (work / "build.log").read_text(errors="replace")[-2000:]
                raise SandboxError(f"building task image {tag} failed: {' '.join(cmd)} exited "
                                   f"{r.returncode}:\n{tail}")
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for p in (rootfs / junk).glob("*"):
                    if p.is_file():
                        p.unlink()
            (rootfs / "work").mkdir(exist_ok=True)
            tar = work / "rootfs.tar"
            subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tar), "."], check=True,
                           timeout=timeout_s)
            repo, _, version = tag.partition(":")
            client.api.import_image_from_file(str(tar), repository=repo, tag=version)
            client.images.get(tag)
        except subprocess.SubprocessError as exc:
            raise SandboxError(f"building task image {tag} failed: {exc}") from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return tag
