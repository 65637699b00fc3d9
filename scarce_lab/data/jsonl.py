"""Durable JSON Lines and JSON files: fsynced appends, torn-tail repair, strict reading.

One implementation for every file the product appends to or reads: run recorders
(``events.jsonl``, ``llm_calls.jsonl``), the judge's store, units and CaSiNo files.
Small functions with no knowledge of what the lines hold.

Rules:

- A *complete line* ends with ``\\n`` and holds one JSON object. A UTF-8 byte order
  mark at the start of a file and CRLF line ends are accepted when reading; blank
  lines are skipped.
- A *torn tail* is a last line without ``\\n`` that is not a complete JSON object:
  what a writer killed in the middle of a line leaves. (A proper prefix of a JSON
  object's text is never a complete object, so a complete last line that only lacks
  its ``\\n`` is told apart safely: it is kept.)
- :func:`read_jsonl` yields ``(line number, object)``; it skips a torn tail with a
  :class:`TornLineWarning` naming the file and line; any other line that is not a
  JSON object (bad JSON, invalid UTF-8, a list or a number) is a ``ValueError``
  naming the file and line.
- :func:`append_jsonl_durable` (appends, durable when it returns; a torn tail is
  repaired first) and :func:`write_jsonl_atomic` (whole files) are the only JSONL
  writers; each line goes through :func:`jsonl_line` (a newline inside refused; the
  line breaks other readers split on, U+2028, U+2029 and U+0085, ``\\u``-escaped).
- :func:`write_json_atomic` replaces a JSON file (:func:`write_atomic`);
  :func:`read_json` / :func:`read_text` accept a BOM.
- Every read goes through :func:`open_regular`: only a regular file (a link to one is
  followed) within its size limit (:mod:`.limits`) is opened; a FIFO, a device, a
  socket or a directory is refused unopened. Lines are read one at a time, at most
  ``LIMITS.line_bytes`` each: a longer line is a :class:`FileLimitError` naming the
  file, the line and the limit, whatever the file holds (a run's ``events.jsonl`` also
  holds at most ``LIMITS.events_per_run`` lines). Every write opens without following
  a link at the file's name (:func:`open_for_append`).

Size: ~540 lines, the read gate and the durable writers of every JSON file the project
reads or appends to, so that the rules above (regular files, limits, torn tails, no
NaN literals, one write loop) are stated and enforced in one place.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import stat
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from . import limits
from .limits import LimitError

BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 16


class TornLineWarning(UserWarning):
    """A torn last line (a killed writer's partial line) was skipped or dropped."""


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open folders; the file itself is synced
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _is_object(raw: bytes) -> bool:
    """True when ``raw`` (one line, without its ``\\n``) is a complete JSON object."""
    try:
        value = json.loads(raw.removeprefix(BOM).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(value, dict)


def repair_fd(fd: int, path: str | Path) -> int:
    """Truncate the file open on ``fd`` (read-write) to its last complete line; return
    the bytes dropped (the rule of :func:`repair_torn_tail`; ``path`` names it in the
    warning). The one torn-tail repair: :func:`append_jsonl_durable` and the harness's
    run-folder writer (:class:`.safeio.RunFolder`) call it on descriptors they opened
    without following links."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    start, pos = 0, size
    while pos > 0:  # the byte after the last newline, reading backwards
        step = min(_CHUNK, pos)
        pos -= step
        k = os.pread(fd, step, pos).rfind(b"\n")
        if k != -1:
            start = pos + k + 1
            break
    if _is_object(os.pread(fd, size - start, start)):
        os.pwrite(fd, b"\n", size)
        os.fsync(fd)
        return 0
    line_no = 1 + sum(os.pread(fd, min(_CHUNK, start - i), i).count(b"\n") for i in range(0, start, _CHUNK))
    os.ftruncate(fd, start)
    os.fsync(fd)
    warnings.warn(f"{path}:{line_no}: dropped a torn last line ({size - start} bytes, no newline, not a "
                  "complete JSON object: a writer was killed mid-line)", TornLineWarning, stacklevel=3)
    return size - start


def write_all(fd: int, chunks: Iterable[bytes]) -> None:
    """Write every chunk to ``fd`` (each ``os.write`` retried until complete), then
    ``fsync``: the one write loop of the durable writers."""
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
    os.fsync(fd)


def open_for_append(path: str | Path) -> int:
    """A read-write ``O_APPEND`` descriptor on ``path`` (created 0644 when missing), never
    through a symbolic link at its last component and only on a regular file (a link,
    FIFO, device or folder planted there is refused, never written through).

    Raises:
        FileLimitError: ``path`` is a link, FIFO, device, socket or folder.
    """
    path = Path(path)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EWOULDBLOCK):
            raise FileLimitError(path, None, "is not a regular file (a link, FIFO or folder): not written") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileLimitError(path, None, "is not a regular file: not written")
    os.set_blocking(fd, True)
    return fd


def repair_torn_tail(path: str | Path) -> int:
    """Truncate ``path`` to its last complete line; return the number of bytes dropped.

    A last line without ``\\n`` that is a complete JSON object is kept and gets its
    ``\\n`` (0 bytes dropped). A missing or empty file, or one ending in ``\\n``, is left
    alone (0). A dropped tail emits a :class:`TornLineWarning` naming file and line.
    The repair is fsynced; the file is opened as :func:`open_for_append` opens it.
    """
    path = Path(path)
    if not os.path.lexists(path):
        return 0
    fd = open_for_append(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # never the tail another appender is writing (append_jsonl_durable)
        return repair_fd(fd, path)
    finally:
        os.close(fd)

# Unicode line breaks that JSON allows raw inside strings (RFC 8259 sec. 7 only requires
# escaping U+0000-U+001F, which json.dumps and pydantic already do): written escaped.
_UNICODE_BREAKS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"), (b"\xc2\x85", b"\\u0085"))


def jsonl_line(line: str | bytes, path: str | Path = "", index: int = 0) -> bytes:
    """One JSONL line (a JSON text, without its ``\\n``) as the bytes to write, with its
    ``\\n``: U+2028, U+2029 and U+0085 written as ``\\u`` escapes (a raw one is only
    allowed inside a JSON string, where the escape decodes to the same character), so
    that readers splitting on Unicode line breaks (``str.splitlines``) see one record.

    Raises:
        ValueError: the line contains ``\\n`` or ``\\r`` (it would become two lines); the
            message names ``path`` and the line's ``index``.
        UnicodeEncodeError: a line holds a lone surrogate (not writable as UTF-8).
    """
    raw = line if isinstance(line, bytes) else line.encode("utf-8")
    if b"\n" in raw or b"\r" in raw:
        raise ValueError(f"{path}: line {index} to write contains a newline: {raw[:80]!r}")
    for char, escaped in _UNICODE_BREAKS:
        if char in raw:
            raw = raw.replace(char, escaped)
    return raw + b"\n"


def write_jsonl_atomic(path: str | Path, lines: Iterable[str | bytes]) -> None:
    """Replace ``path`` with ``lines`` (JSON texts, one object each, without ``\\n``),
    atomically and durably, each written by :func:`jsonl_line`.

    Raises:
        ValueError: a line contains a newline; nothing is written then.
    """
    write_atomic(path, b"".join(jsonl_line(line, path, i) for i, line in enumerate(lines)))


def append_jsonl_durable(path: str | Path, lines: Iterable[str | bytes]) -> int:
    """Append ``lines`` (JSON texts, one object each, without ``\\n``) durably, each
    written by :func:`jsonl_line` (Unicode line breaks escaped).

    Takes an exclusive ``flock`` on the file (appenders in other processes wait: a line
    another appender is still writing is never mistaken for a torn tail), repairs a torn
    tail, writes every line in one ``write`` call (retried until complete) on an
    ``O_APPEND`` descriptor, then ``fsync``. Returns the bytes written.

    Raises:
        ValueError: a line contains a newline (it would become two lines); nothing is
            written then.
        UnicodeEncodeError: a line holds a lone surrogate (not writable as UTF-8).
    """
    path = Path(path)
    data = [jsonl_line(line, path, i) for i, line in enumerate(lines)]
    if not data:
        return 0
    blob = b"".join(data)
    created = not os.path.lexists(path)
    fd = open_for_append(path)
    try:
        # one appender at a time, across processes (released when fd closes): another
        # appender's line in the middle of its write would look torn and be cut off
        fcntl.flock(fd, fcntl.LOCK_EX)
        repair_fd(fd, path)
        write_all(fd, [blob])
    finally:
        os.close(fd)
    if created:
        _fsync_dir(path.parent)
    return len(blob)


class NotJSONError(ValueError):
    """Text Python's ``json`` reads but JSON (RFC 8259) does not hold: ``NaN``,
    ``Infinity`` (they would enter every sum and mean silently), or, in a whole JSON
    file, a key twice in one object (readers disagree on which value counts)."""


def _refuse_constant(name: str) -> float:
    raise NotJSONError(f"{name} is not a JSON number (RFC 8259); a number in a run's files is finite")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: a literal past the largest float reads as inf
        raise NotJSONError(f"{text[:40]} is past the largest float (it would be read as {value})")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise NotJSONError(f"key {dup!r} appears twice in one object (readers disagree on which value counts)")
    return obj


def loads(text: str | bytes, *, unique_keys: bool = False) -> Any:
    """The read gate's JSON parse: :func:`json.loads` refusing ``NaN``/``Infinity``
    literals, numbers past the largest float (``1e999``) and, with ``unique_keys``, a key repeated in one object.

    Raises:
        NotJSONError: one of those (a ``ValueError``).
        json.JSONDecodeError, UnicodeDecodeError, RecursionError: as :func:`json.loads`.
    """
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite, object_pairs_hook=_unique_keys if unique_keys else None)


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for every line of a JSON Lines file.

    Line numbers start at 1 and count every line (blank ones too), as an editor does.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a line other than a torn tail is not one JSON object (the message
            names file and line).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    for no, body in iter_lines(path):
        try:
            value = loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ValueError(f"{path}:{no}: not a JSON line: {exc}") from exc
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{no}: expected a JSON object, got {type(value).__name__}")
        yield no, value


def read_text(path: str | Path) -> str:
    """A UTF-8 text file without its byte order mark (CRLF left to the parser).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the file is not UTF-8 (the message names file and byte offset).
        FileLimitError: not a regular file, or over its size limit (:func:`read_bounded`).
    """
    path = Path(path)
    try:
        return read_bounded(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text at byte {exc.start}: {exc.reason}") from exc


def read_json(path: str | Path) -> Any:
    """Parse a JSON file (a BOM is accepted).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: not UTF-8 or not JSON (the message names file, line and column).
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from exc


def write_json_atomic(path: str | Path, value: Any) -> None:
    """Replace ``path`` with ``value`` as indented JSON, atomically and durably
    (:func:`write_atomic`)."""
    write_atomic(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


# -- the recorder's and loaders' names for the same mechanics ------------------------------
class TrajectoryFileError(ValueError):
    """A data file is corrupt; the message names the path and the 1-based line."""

    def __init__(self, path: Path | str, line: int | None, reason: str):
        self.path = Path(path)
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


def read_json_file(path: str | Path) -> Any:
    """Parse a whole JSON file (BOM accepted).

    Raises:
        TrajectoryFileError: not UTF-8 or not valid JSON (path and, for JSON errors,
            line in the message).
        FileLimitError: not a regular file, or over its size limit (:func:`read_bounded`).
    """
    path = Path(path)
    try:
        text = read_bounded(path).removeprefix(BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrajectoryFileError(path, None, f"not UTF-8 text ({exc})") from None
    try:
        return loads(text, unique_keys=True)
    except json.JSONDecodeError as exc:
        raise TrajectoryFileError(path, exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})") from None
    except NotJSONError as exc:
        raise TrajectoryFileError(path, None, str(exc)) from None
    except RecursionError:
        raise TrajectoryFileError(path, None, "JSON nested too deeply") from None


def iter_lines(path: str | Path, *, allow_torn_tail: bool = True) -> Iterator[tuple[int, bytes]]:
    """Yield ``(1-based line number, raw line bytes)`` for each non-blank line (without
    its newline or a CR before it; a BOM on the first line removed).

    A torn tail (see the module docstring) is skipped with a :class:`TornLineWarning`
    when ``allow_torn_tail`` (the default), else yielded like any line; a complete last
    line without its newline is yielded. A missing file yields nothing. Memory: one
    line at a time, at most ``LIMITS.line_bytes`` (:mod:`.limits`).

    Raises:
        FileLimitError: not a regular file, the file is over its size limit, a line is
            longer than ``LIMITS.line_bytes`` (a torn one too: it is never parsed), or a
            run's ``events.jsonl`` holds more than ``LIMITS.events_per_run`` lines; the
            message names the file, the line and the limit.
    """
    path = Path(path)
    if not path.exists():
        return
    line_limit = limits.LIMITS.line_bytes
    max_records = limits.record_limit(path)
    with open_regular(path) as fh:
        no = records = 0
        while raw := fh.readline(line_limit + 2):  # + 2: the CR LF a line of the limit ends with
            no += 1
            complete = raw.endswith(b"\n")
            body = raw.rstrip(b"\r\n")
            if no == 1:
                body = body.removeprefix(BOM)
            if len(body) > line_limit or (not complete and len(raw) == line_limit + 2):
                raise FileLimitError(path, no, f"line longer than the limit of {line_limit} bytes "
                                     "(LIMITS.line_bytes); not read further")
            if not body.strip():
                continue
            if not complete and allow_torn_tail and not _is_object(body):
                warnings.warn(
                    f"{path}:{no}: skipped a torn last line ({len(raw)} bytes, no newline, not a complete "
                    "JSON object: a writer stopped mid-line)",
                    TornLineWarning,
                    stacklevel=2,
                )
                return
            records += 1
            if max_records is not None and records > max_records[1]:
                raise FileLimitError(path, no, f"more than {max_records[1]} records (LIMITS.{max_records[0]})")
            yield no, body


def iter_json_objects(path: str | Path, *, allow_torn_tail: bool = True) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each line of a JSONL file.

    Raises:
        TrajectoryFileError: a complete line is not a JSON object (path and line named).
    """
    for i, raw in iter_lines(path, allow_torn_tail=allow_torn_tail):
        try:
            obj = loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, NotJSONError) as exc:
            raise TrajectoryFileError(path, i, f"not valid JSON ({exc})") from None
        except RecursionError:
            raise TrajectoryFileError(path, i, "JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise TrajectoryFileError(path, i, f"expected a JSON object, got {type(obj).__name__}")
        yield i, obj


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (temporary file, fsync,
    rename, fsync of the folder)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    blob = data if isinstance(data, bytes) else data.encode("utf-8")
    with tmp.open("wb") as fh:
        fh.write(blob)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def read_validated(path: str | Path, model: Any, error: type[Exception], what: str) -> tuple[Any, Any] | None:
    """The small state file a command keeps in its output folder (a study's ``study.json``,
    a selection chain's ``selection.json``): ``(its JSON, model.model_validate of it)``, or
    ``None`` when it does not exist. Read through the read gate (:func:`read_json_file`: a
    regular file, within ``LIMITS.manifest_bytes``, no ``NaN`` literal, no key twice).

    Raises:
        error: not readable as ``what`` (a FIFO, device or folder, over its limit, not
            JSON), or a field of the wrong kind or value (up to five named, each with what
            was there).
    """
    from pydantic import ValidationError

    path = Path(path)
    try:
        raw = read_json_file(path)
    except FileNotFoundError:
        return None
    except (OSError, TrajectoryFileError) as exc:
        raise error(f"{path}: not readable as {what} ({exc})") from None
    try:
        return raw, model.model_validate(raw)
    except ValidationError as exc:
        bad = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(file)'}: {e['msg']} (got {str(e.get('input'))[:80]!r})"
                        for e in exc.errors()[:5])
        raise error(f"{path}: {what} with a field of the wrong kind or value: {bad}") from None


# -- the read gate: regular files within their limits --------------------------------------
class FileLimitError(TrajectoryFileError, LimitError):
    """A file that is not a regular file, or passes a limit of :data:`.limits.LIMITS`
    (size, line length, records); the message names the file, the line where one
    applies, and the limit."""


def describe(mode: int, target: str | None = None) -> str:
    """What an ``lstat``/``stat`` mode is, in words (``a symbolic link to '/etc/passwd'``,
    ``a FIFO (named pipe)``): the one wording of the read gate and the harness's writer."""
    if stat.S_ISLNK(mode):
        return f"a symbolic link to {target!r}" if target is not None else "a symbolic link"
    for test, word in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISREG, "a regular file")):
        if test(mode):
            return word
    return f"a file of type {stat.S_IFMT(mode):o}"


def _check_stat(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        what = describe(st.st_mode)
        link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise FileLimitError(path, None, f"is {what}{link}, not a regular file: refused unread")
    field, limit = limits.file_limit(path)
    if st.st_size > limit:
        raise FileLimitError(path, None, f"{st.st_size} bytes, over the limit of {limit} bytes (LIMITS.{field})")


def _as_path(path: str | Path) -> Path:
    # ``Path(path)`` re-parses a Path it is given; the gates run once per file of a scan
    return path if isinstance(path, Path) else Path(path)


def check_regular(path: str | Path) -> None:
    """Refuse ``path`` unless it is a regular file (a link to one is followed) within its
    size limit (:func:`.limits.file_limit`), for a reader that opens the file itself
    (polars' Parquet scans); readers in this package open through :func:`open_regular`.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        FileLimitError: as :func:`open_regular`.
    """
    _check_stat(_as_path(path), os.stat(path))


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading (binary), only if it is a regular file within its size
    limit (:func:`.limits.file_limit`). A symbolic link to a regular file is followed (a
    git-annex or DataLad data set is made of such links); the file is checked before it
    is opened (a device is never opened: opening one can act) and the descriptor again
    after (the same file, still regular), opened non-blocking so a FIFO swapped in
    cannot hang the open. The one way run files, manifests, exports and stores are
    opened for reading.

    Raises:
        FileNotFoundError: ``path`` does not exist (or is a dangling link).
        FileLimitError: ``path`` is a directory, FIFO, device or socket (or a link to
            one), or larger than its limit; the message names it.
    """
    path = _as_path(path)
    st = os.stat(path)
    _check_stat(path, st)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise FileLimitError(path, None, "was replaced while being opened: refused")
        _check_stat(path, now)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | Path) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), never more than its
    size limit (a file that grows while read is refused, not cut).

    Raises:
        FileNotFoundError, FileLimitError: as :func:`open_regular`.
    """
    path = _as_path(path)
    field, limit = limits.file_limit(path)
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileLimitError(path, None, f"grew past the limit of {limit} bytes (LIMITS.{field}) while read")
    return data


def read_lines_bounded(path: str | Path) -> bytes:
    """The bytes of the JSON Lines file ``path`` (:func:`read_bounded`; ``b""`` when it
    is missing), with every line within ``LIMITS.line_bytes`` and, for a run's
    ``events.jsonl``, at most ``LIMITS.events_per_run`` lines: for a reader that parses
    a whole file at once (the loaders' fast path) what :func:`iter_lines` checks per line.

    Raises:
        FileLimitError: as :func:`iter_lines` (file, line and limit named).
    """
    path = _as_path(path)
    if not path.exists():
        return b""
    data = read_bounded(path)
    max_records = limits.record_limit(path)
    if max_records is not None and data.count(b"\n") > max_records[1]:
        raise FileLimitError(path, max_records[1] + 1, f"more than {max_records[1]} records (LIMITS.{max_records[0]})")
    line_limit = limits.LIMITS.line_bytes
    if len(data) > line_limit:  # else no line can be longer
        import numpy as np

        raw = np.frombuffer(data, dtype=np.uint8)
        ends = np.append(np.flatnonzero(raw == 10), len(data))
        lengths = np.diff(ends, prepend=-1) - 1 - (raw[np.maximum(ends - 1, 0)] == 13)  # a CR before LF is not counted
        if lengths.max() > line_limit:
            raise FileLimitError(path, int(np.argmax(lengths > line_limit)) + 1,
                                 f"line longer than the limit of {line_limit} bytes (LIMITS.line_bytes)")
    return data
