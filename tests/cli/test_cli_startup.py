"""The CLI's start-up imports only what its help needs (docs/benchmarks.md: ``scarce-lab --help``
took 5-6 s, altair's import alone most of it).

One fresh interpreter imports ``scarce_lab``, then asks the root, a ``run`` and a
``table`` command for their help through the console script's ``main``; none of the
modules that only drawing, statistics or model calls need may be imported by then
(asserted on ``sys.modules``, not on time: timings are in benchmarks/speed.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Imported by the commands that draw (altair), compute intervals (scipy) or call a
#: model (litellm, the openai SDK), never by start-up or help.
HEAVY = ("altair", "scipy", "litellm", "openai")

_PROBE = """
import json, sys
import scarce_lab, scarce_lab.llm
after_import = sorted(m for m in {heavy} if m in sys.modules)
from scarce_lab.cli import main
helps = []
for argv in (["--help"], ["run", "economy", "--help"], ["table", "sovsim", "--help"], ["table", "economy", "--help"]):
    sys.argv = ["scarce-lab", *argv]
    try:
        main()
    except SystemExit as exc:
        helps.append(exc.code)
print(json.dumps({{"after_import": after_import, "codes": helps,
                  "after_help": sorted(m for m in {heavy} if m in sys.modules)}}))
"""


def test_help_of_root_run_and_table_imports_no_heavy_module():
    res = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY)], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert "Usage: scarce-lab table economy" in res.stdout  # the last help was printed
    assert got == {"after_import": [], "codes": [0, 0, 0, 0], "after_help": []}, got
