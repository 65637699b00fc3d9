"""Reading and appending JSON Lines files durably (runs, LLM calls, judgements).

Rules every file the product appends to follows:

- An append writes whole lines, flushes and fsyncs before returning.
- A *torn tail* (bytes after the last newline: a writer killed mid-line) is cut off
  before the next append (:func:`repair_torn_tail`), and skipped on load with a
  :class:`TornLineWarning` naming the file and line.
- A UTF-8 byte-order mark at the start of a file and CRLF line ends are accepted.
- A corrupt complete line is a :class:`TrajectoryFileError` naming the file and the
  1-based line.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BOM = b"\xef\xbb\xbf"


class TrajectoryFileError(ValueError):
    """A data file is corrupt; the message names the path and the 1-based line."""

    def __init__(self, path: Path | str, line: int | None, reason: str):
        self.path = Path(path)
        self.line = line
        self.reason = reason
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


class TornLineWarning(UserWarning):
    """A torn last line (a killed writer's partial line) was skipped on load."""


def read_bytes_no_bom(path: Path) -> bytes:
    """The file's bytes without a leading UTF-8 byte-order mark."""
    data = Path(path).read_bytes()
    return data[len(BOM):] if data.startswith(BOM) else data


def read_json_file(path: Path | str) -> Any:
    """Parse a whole JSON file (BOM accepted).

    Raises:
        TrajectoryFileError: not UTF-8 or not valid JSON (message names the path and,
            for JSON errors, the line).
    """
    path = Path(path)
    try:
        text = read_bytes_no_bom(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrajectoryFileError(path, None, f"not UTF-8 text ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrajectoryFileError(path, exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})") from None


def iter_lines(path: Path | str, *, allow_torn_tail: bool = True) -> Iterator[tuple[int, bytes]]:
    """Yield ``(1-based line number, raw line bytes)`` for each non-blank line.

    The line bytes exclude the newline (and a CR before it). A torn tail is skipped
    with a :class:`TornLineWarning` when ``allow_torn_tail`` (the default), else it is
    yielded like any line. A missing file yields nothing.
    """
    path = Path(path)
    if not path.exists():
        return
    data = read_bytes_no_bom(path)
    if not data:
        return
    lines = data.split(b"\n")
    torn = not data.endswith(b"\n")
    last = len(lines)
    for i, raw in enumerate(lines, start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        if i == last and torn and allow_torn_tail:
            warnings.warn(
                f"{path}:{i}: skipped a torn last line ({len(raw)} bytes without a newline: "
                "a writer stopped mid-line)",
                TornLineWarning,
                stacklevel=2,
            )
            return
        yield i, raw


def iter_json_objects(path: Path | str, *, allow_torn_tail: bool = True) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each line of a JSONL file.

    Raises:
        TrajectoryFileError: a complete line is not a JSON object.
    """
    for i, raw in iter_lines(path, allow_torn_tail=allow_torn_tail):
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TrajectoryFileError(path, i, f"not valid JSON ({exc})") from None
        except RecursionError:
            raise TrajectoryFileError(path, i, "JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise TrajectoryFileError(path, i, f"expected a JSON object, got {type(obj).__name__}")
        yield i, obj


def repair_torn_tail(path: Path | str) -> int:
    """Cut a torn tail (bytes after the last newline) off ``path``; return the number
    of bytes dropped (0 when the file ends with a newline, is empty or missing)."""
    path = Path(path)
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        # scan backwards for the last newline
        block = 65536
        pos = size
        keep = 0
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            idx = chunk.rfind(b"\n")
            if idx != -1:
                keep = start + idx + 1
                break
            pos = start
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return size - keep


def append_lines(path: Path | str, lines: list[str]) -> None:
    """Append whole lines durably: repair a torn tail first, write, flush, fsync."""
    if not lines:
        return
    path = Path(path)
    repair_torn_tail(path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
        fh.flush()
        os.fsync(fh.fileno())


def write_atomic(path: Path | str, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` atomically (write a temporary file, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    mode = "wb" if isinstance(data, bytes) else "w"
    with tmp.open(mode, **({} if isinstance(data, bytes) else {"encoding": "utf-8"})) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
