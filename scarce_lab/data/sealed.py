"""Checkpoints are bound to the machine (the user) that wrote them: the one gate to
pickle.

A checkpoint is a pickle, and unpickling runs whatever code the bytes name. So every
checkpoint is sealed when written (:func:`seal`): a header line carrying an
HMAC-SHA256 of a context (the run's id and what the bytes are) and the pickle, under
a secret key of this user on this machine (:func:`checkpoint_key`). :func:`unseal` is
the only place in the package that unpickles a checkpoint (a test greps the package
for any other ``pickle.load``); it verifies the MAC first and refuses, with
:class:`CheckpointRefusedError`, bytes whose MAC does not verify: a run folder copied
from someone else, a checkpoint moved from another run, an altered byte, or an
unsigned checkpoint of a version before this rule. Resume then stops (no silent
restart from scratch); the message says how to restart.

The key: 32 random bytes in ``checkpoint.key`` in the user's data folder
(``platformdirs.user_data_dir("scarce_lab")``, else ``~/.local/share/scarce_lab``),
created with mode 0600 on first use; ``$SCARCE_LAB_CHECKPOINT_KEY`` names another
key file (tests; several machines of one cluster sharing one key file on purpose).
A key file that is a link, not a regular file, not the user's own or readable by
others is refused.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import pickle
import secrets
import stat
from pathlib import Path
from typing import Any

__all__ = ["KEY_ENV", "CheckpointRefusedError", "checkpoint_key", "key_path", "seal", "sign", "signed_payload",
           "unseal"]

#: The environment variable naming the key file to use instead of the default.
KEY_ENV = "SCARCE_LAB_CHECKPOINT_KEY"
_MAGIC = b"scarce_lab-checkpoint v1 hmac-sha256 "
_KEY_BYTES = 32


#: key path -> key, read once per process
_KEYS: dict[Path, bytes] = {}


class CheckpointRefusedError(ValueError):
    """A checkpoint whose MAC does not verify under this machine's key; the message
    names the file and what to do."""


def key_path() -> Path:
    """Where this user's checkpoint key lives (see the module docstring)."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV]).expanduser()
    try:
        from platformdirs import user_data_dir

        return Path(user_data_dir("scarce_lab")) / "checkpoint.key"
    except ImportError:
        return Path.home() / ".local" / "share" / "scarce_lab" / "checkpoint.key"


def checkpoint_key() -> bytes:
    """This user's checkpoint key, created (mode 0600, written whole then linked into
    place, so a concurrent first use reads the same key) when missing; read once per
    process and key file.

    Raises:
        PermissionError: the key file is a link, not a regular file, not owned by this
            user, readable or writable by others, or not 32 bytes (path named).
    """
    path = key_path()
    if path in _KEYS:
        return _KEYS[path]
    try:
        return _KEYS.setdefault(path, _read_key(path))
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, secrets.token_bytes(_KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if another process made it first: theirs is used
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return _KEYS.setdefault(path, _read_key(path))


def _read_key(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise PermissionError(f"checkpoint key {path} is a link (never followed); replace it by the key file "
                              "itself") from None
    try:
        st = os.fstat(fd)
        why = ("is not a regular file" if not stat.S_ISREG(st.st_mode) else
               "is not owned by this user" if st.st_uid != os.getuid() else
               f"is open to others (mode {stat.S_IMODE(st.st_mode):o}; it must be 600)" if st.st_mode & 0o077 else
               None)
        key = os.read(fd, _KEY_BYTES + 1) if why is None else b""
    finally:
        os.close(fd)
    if why is None and len(key) != _KEY_BYTES:
        why = f"holds {len(key)} bytes, not {_KEY_BYTES}"
    if why is not None:
        raise PermissionError(f"checkpoint key {path} {why}; remove it (a new key is made, and checkpoints "
                              "written under the old one can no longer be resumed)")
    return key


def _mac(key: bytes, context: str, payload: bytes) -> bytes:
    return hmac.new(key, context.encode("utf-8") + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def sign(payload: bytes, context: str, magic: bytes = _MAGIC) -> bytes:
    """``payload`` behind a header line (``magic`` + its MAC over ``context`` under this
    user's key): what :func:`signed_payload` verifies. Checkpoints (:func:`seal`) and
    sweep seals (:mod:`.sweep_seal`) are signed so."""
    return magic + _mac(checkpoint_key(), context, payload) + b"\n" + payload


def signed_payload(blob: bytes, context: str, magic: bytes = _MAGIC) -> bytes | None:
    """The payload :func:`sign` signed with ``context`` and ``magic``, or ``None`` when
    ``blob`` has no such header or its MAC does not verify under this user's key."""
    head, nl, payload = blob.partition(b"\n")
    mac = head.removeprefix(magic) if head.startswith(magic) and nl else None
    if mac is None or not hmac.compare_digest(mac, _mac(checkpoint_key(), context, payload)):
        return None
    return payload


def seal(value: Any, context: str) -> bytes:
    """``value`` pickled, behind a header line with its MAC over ``context`` (e.g.
    ``run:<run id>``: a checkpoint moved to another run does not verify there)."""
    return sign(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), context)


def unseal(blob: bytes, context: str, where: str | Path) -> Any:
    """The value :func:`seal` sealed with ``context``, unpickled only once its MAC
    verifies under this machine's key. The one unpickling of a checkpoint.

    Raises:
        CheckpointRefusedError: no header (unsigned or not a checkpoint), or a MAC
            that does not verify; the message names ``where``.
    """
    payload = signed_payload(blob, context)
    if payload is None:
        what = "is unsigned (written before checkpoints were signed, or not a checkpoint)" if not (
            blob.startswith(_MAGIC) and b"\n" in blob) else "does not verify"
        raise CheckpointRefusedError(
            f"{where}: the checkpoint {what}: written on another machine or altered: resume refuses to load it "
            f"(loading a pickle runs whatever code it holds). To run it again here, delete {Path(where).name} "
            f"and resume (the run restarts from its start under the same manifest), or delete the run folder; "
            f"a checkpoint written here under the key {key_path()} always resumes")
    return pickle.loads(payload)  # noqa: S301 - verified: this user wrote these bytes on this machine
