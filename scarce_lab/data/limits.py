"""The one table of size limits: what a server, an agent or a file may hand us.

Every byte that enters from outside (a model's answer, a line of a run file, a run
file, a Parquet file of an export) is bounded by a field of :data:`LIMITS`, checked
where the data enters. Nothing else in the package states a size limit; the gates read
this table at call time (``from scarce_lab.data import limits`` then
``limits.LIMITS.response_bytes``, so that a test's smaller table reaches them) and name the
field in their error, so a message says which limit was passed and by how much.

============================  ==============  =================================================
field                         value           checked by
============================  ==============  =================================================
``response_bytes``            8 MiB           the transport stops reading a model server's response
                                              (:mod:`scarce_lab.llm.transport`; outcome ``too_large``)
``parse_chars``               2,000,000       the answer parser (:func:`scarce_lab.llm.parsing.parse_reply`;
                                              a longer answer is an ``invalid`` parse)
``parse_candidates``          1,000           JSON objects the parser searches in one answer
``parse_in_thread_chars``     16,384          answers longer are parsed off the event loop
``program_message_bytes``     8 MiB           one call or answer between a verifier and the program
                                              it scores (:mod:`scarce_lab.tasks.program_proxy`)
``line_bytes``                16 MiB          every JSONL line read (:func:`.jsonl.iter_lines`)
``events_file_bytes``         2 GiB           ``events.jsonl`` of one run
``llm_calls_file_bytes``      4 GiB           ``llm_calls.jsonl`` of one run
``manifest_bytes``            16 MiB          ``manifest.json``, an export's marker, any JSON file
``jsonl_file_bytes``          4 GiB           any other JSON Lines file (judge store, units)
``parquet_file_bytes``        16 GiB          one Parquet file of an export or a cache, a sweep's seal
``csv_file_bytes``            256 MiB         one CSV file read back (a filled label sheet;
                                              :func:`scarce_lab.data.csvsafe.read_csv_cells`)
``events_per_run``            2,000,000       lines of one run's ``events.jsonl``
============================  ==============  =================================================

How the values were chosen: far above what real runs reach, so that only a hostile or
broken input meets them, and low enough that the memory a loader needs at the limit
(about 10x a line to parse it into Python objects) fits a laptop.

- Answers: the longest completion any served model offers is about 128k tokens
  (~4 bytes each in UTF-8, ~0.5 MB); a response body (answer, tool calls, logprobs,
  envelope) of ``response_bytes`` is 16x that. The shipped data's longest answer is
  2,130 characters.
- Lines: a call record holds the prompt and the answer, and a repair call the answer a
  second time: 2 answers (8 MiB) plus a 2M-token prompt (8 MiB) is 16 MiB. The shipped
  data's longest line is 8,406 bytes (a call record), its longest events line 4,728.
- Files: the shipped data's largest ``events.jsonl`` is 0.46 MB (1,045 events), its
  largest ``llm_calls.jsonl`` 0.67 MB and its largest manifest 4.8 KB. A run of 2 million
  events (``events_per_run``, 2,000x the largest shipped) at ~1 KB each is 2 GiB;
  ``llm_calls_file_bytes`` allows 256 call records at the line limit. A manifest holds a
  config and notes: 16 MiB is 3,000x the largest.
- CSV: a label sheet row holds a unit's text and its context (the shipped SCARCE units:
  at most ~2 KB together); 256 MiB is over 100,000 such rows, far more than a person codes,
  and read whole it fits a laptop.
- Parse: the parser is linear; 2M characters take well under a second, in a worker
  thread (above ``parse_in_thread_chars``, ~10 ms of parsing) so other games' calls go
  on. Real answers hold a handful of JSON objects; each candidate costs a validation.

Change a value for one analysis with ``dataclasses.replace``; tests monkeypatch
``scarce_lab.data.limits.LIMITS`` with a small table to reach a limit fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["LIMITS", "Limits", "LimitError", "file_kind", "file_limit", "record_limit"]

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Size limits of everything read from outside (see the module docstring's table).

    Attributes:
        response_bytes: bytes of one HTTP response body from a model server (decoded).
        parse_chars: characters of an answer the parser reads.
        parse_candidates: top-level JSON objects the parser searches in one answer.
        parse_in_thread_chars: answers longer than this are parsed in a worker thread.
        program_message_bytes: bytes of one request or answer line between a verifier
            and the program under test.
        line_bytes: bytes of one JSON Lines record, without its newline.
        events_file_bytes: bytes of one run's ``events.jsonl``.
        llm_calls_file_bytes: bytes of one run's ``llm_calls.jsonl``.
        manifest_bytes: bytes of a ``manifest.json`` (and of any whole JSON file read).
        jsonl_file_bytes: bytes of any other JSON Lines file (judge store, units,
            an export's ``manifests.jsonl``).
        parquet_file_bytes: bytes of one Parquet file.
        csv_file_bytes: bytes of one CSV file read back (a filled label sheet).
        published_file_bytes: bytes of one file of a published layout read whole (the
            SovSim release's ``rationales.json``, a GovSim ``log_env.json``).
        events_per_run: events (lines) in one run's ``events.jsonl``.
    """

    response_bytes: int = 8 * MiB
    parse_chars: int = 2_000_000
    parse_candidates: int = 1_000
    parse_in_thread_chars: int = 16_384
    program_message_bytes: int = 8 * MiB
    line_bytes: int = 16 * MiB
    events_file_bytes: int = 2 * GiB
    llm_calls_file_bytes: int = 4 * GiB
    manifest_bytes: int = 16 * MiB
    jsonl_file_bytes: int = 4 * GiB
    parquet_file_bytes: int = 16 * GiB
    csv_file_bytes: int = 256 * MiB
    published_file_bytes: int = 4 * GiB
    events_per_run: int = 2_000_000


#: The limits in force (replace it, or monkeypatch it in a test, to change one).
LIMITS = Limits()


class LimitError(ValueError):
    """Something read from outside passed a limit of :data:`LIMITS`; the message names
    what (file and line, or the call), the field and its value."""


#: Run files by name (the recorder's names) -> the field bounding their size.
_FILE_FIELDS = {"events.jsonl": "events_file_bytes", "llm_calls.jsonl": "llm_calls_file_bytes",
                "manifest.json": "manifest_bytes", "rationales.json": "published_file_bytes",
                "log_env.json": "published_file_bytes", ".scarce_lab_seal": "parquet_file_bytes"}


def _name(path: str | Path) -> str:
    # a Path's own name without building a new Path (hot: once per file of a scan)
    return path.name if isinstance(path, Path) else Path(path).name


def file_kind(path: str | Path) -> str:
    """The :class:`Limits` field that bounds the size of the file at ``path``: by its
    name for a run file (``events.jsonl``, ``llm_calls.jsonl``, ``manifest.json``) or a
    published layout's (``rationales.json``, ``log_env.json``), else
    by its extension (``.parquet``, ``.jsonl``, ``.csv``; any other file is read as one JSON
    document: ``manifest_bytes``)."""
    name = _name(path)
    if name in _FILE_FIELDS:
        return _FILE_FIELDS[name]
    if name.endswith(".parquet"):
        return "parquet_file_bytes"
    if name.endswith(".jsonl"):
        return "jsonl_file_bytes"
    if name.endswith(".csv"):
        return "csv_file_bytes"
    return "manifest_bytes"


def file_limit(path: str | Path) -> tuple[str, int]:
    """``(field name, bytes)``: the size limit of the file at ``path`` (:func:`file_kind`),
    read from the :data:`LIMITS` in force at the call."""
    field = file_kind(path)
    return field, getattr(LIMITS, field)


def record_limit(path: str | Path) -> tuple[str, int] | None:
    """``(field name, lines)``: the most records the JSON Lines file at ``path`` may hold
    (``events_per_run`` for a run's ``events.jsonl``), or ``None`` when only its size is
    bounded."""
    return ("events_per_run", LIMITS.events_per_run) if _name(path) == "events.jsonl" else None
