"""What a submission earns: its behaviour on the hidden tests, measured without any
sandbox (plain build and runs in a scratch folder, for honest test code only)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from scarce_lab.sandbox import ResourceLimits
from scarce_lab.sandbox.local import run_limited


def earned(task, files: dict[str, str | bytes]) -> set[str]:
    """Ids of the scored tests a plain build of ``files`` passes."""
    d = Path(tempfile.mkdtemp(prefix="scarce-earned-"))
    try:
        for name, text in files.items():
            p = d / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(text if isinstance(text, bytes) else text.encode())
        b = run_limited(["bash", "compile.sh"], d, ResourceLimits(wall_seconds=120, cpu_seconds=120))
        if b.exit_code != 0 or not (d / "executable").is_file():
            return set()
        ok = set()
        for t in task.scored_tests():
            r = run_limited(["./executable", *t.args], d, ResourceLimits(wall_seconds=t.timeout_s),
                            stdin=t.stdin, output_limit=max(65536, 2 * len(t.expected_stdout) + 1024))
            if (not r.timed_out and r.exit_code == t.expected_exit_code and r.stdout == t.expected_stdout
                    and (not t.compare_stderr or r.stderr == (t.expected_stderr or ""))):
                ok.add(t.id)
        return ok
    finally:
        shutil.rmtree(d, ignore_errors=True)


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return folder
