"""The judge reads and writes its files with the package's durable JSONL functions
(:mod:`scarce_lab.data.jsonl`, shared with the run recorders)."""

from ..data.jsonl import (
    BOM,
    TornLineWarning,
    append_jsonl_durable,
    read_json,
    read_jsonl,
    read_text,
    repair_torn_tail,
    write_json_atomic,
)

__all__ = [
    "BOM", "TornLineWarning", "append_jsonl_durable", "read_json", "read_jsonl", "read_text", "repair_torn_tail",
    "write_json_atomic",
]
