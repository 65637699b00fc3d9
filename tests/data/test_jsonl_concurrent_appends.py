"""Two appenders of one JSONL file (two `judge import-sheet` or `judge label` into one
folder): a line the other is still writing is not a torn tail and is never cut off
(scarce_lab/data/jsonl.py append_jsonl_durable)."""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import polars as pl
import pytest

from scarce_lab.data.jsonl import TornLineWarning, append_jsonl_durable, open_for_append, read_jsonl

REPO = Path(__file__).resolve().parents[2]


def test_an_append_waits_for_the_line_another_appender_is_writing(tmp_path):
    """Before: the second appender's torn-tail repair cut the first one's half-written
    line; the first then wrote its end ('}' alone): one label lost, one corrupt line."""
    path = tmp_path / "human_labels.jsonl"
    append_jsonl_durable(path, ['{"n": 0}'])
    fd = open_for_append(path)  # the first appender, in the middle of its write
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b'{"n": 1, "text": "half')
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)
        second = threading.Thread(target=append_jsonl_durable, args=(path, ['{"n": 2}']))
        second.start()
        time.sleep(0.3)
        assert second.is_alive()  # it waits; it did not repair the first one's line
        os.write(fd, b' written"}\n')
        os.close(fd)
        second.join(5)
    assert [obj["n"] for _, obj in read_jsonl(path)] == [0, 1, 2]


@pytest.mark.slow
def test_concurrent_imports_of_six_coders_keep_every_label(tmp_path):
    """The repro: six `import-sheet` processes into one folder; before, one coder kept
    260 of 300 labels with exit status 0 (a TornLineWarning the only trace)."""
    from scarce_lab.judge.sheets import export_sheet, human_labels
    from scarce_lab.judge.taxonomy import load_taxonomy
    from scarce_lab.judge.units import units_from_frame

    rows = [{"run_id": "g", "contention": i, "agent": f"w{i % 2}", "public_reasoning": "x" * 1100 + str(i),
             "private_messages": json.dumps([{"to": "w9", "text": "y" * 1100}] * 5), "context": "c" * 1100}
            for i in range(300)]
    blank = export_sheet(units_from_frame(pl.DataFrame(rows)), load_taxonomy("scarce"), tmp_path / "s.csv")
    table = list(csv.reader(io.StringIO(blank.csv.read_text(), newline="")))
    code = ("import sys; from pathlib import Path; from scarce_lab.judge.sheets import import_sheet; "
            "import_sheet(Path(sys.argv[1]), Path(sys.argv[2]))")
    procs = []
    for k in range(6):
        buf = io.StringIO()
        csv.writer(buf).writerows([table[0]] + [[*r[:6], "none", f"coder{k}", ""] for r in table[1:]])
        sheet = tmp_path / f"c{k}.csv"
        sheet.write_text(buf.getvalue())
        shutil.copy(blank.manifest, sheet.with_suffix(".manifest.json"))
        procs.append(subprocess.Popen([sys.executable, "-W", "error::UserWarning", "-c", code, str(sheet),
                                       str(tmp_path / "store")], env=os.environ | {"PYTHONPATH": str(REPO)}))
    assert [p.wait(120) for p in procs] == [0] * 6
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)
        assert {c: len(v) for c, v in human_labels(tmp_path / "store").items()} == {f"coder{k}": 300 for k in range(6)}
