"""Regenerate the golden run folders and the pinned contract schema under tests/golden/.

Run after a deliberate change of the trajectory format (and a SCHEMA_VERSION bump with
a migration): ``.venv/bin/python scripts/make_golden.py``. The contract tests compare
fresh runs with these files, so an unplanned format change fails them.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scarce_lab.data.schema import SCHEMA_VERSION, contract_json_schema  # noqa: E402
from tests.golden_runs import GOLDEN, make_golden_runs  # noqa: E402


def main() -> None:
    out = ROOT / "tests" / "golden" / f"v{SCHEMA_VERSION}"
    shutil.rmtree(out, ignore_errors=True)
    make_golden_runs(out)
    schema = ROOT / "tests" / "golden" / f"schema_v{SCHEMA_VERSION}.json"
    schema.write_text(json.dumps(contract_json_schema(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(GOLDEN)} golden runs to {out} and {schema}")


if __name__ == "__main__":
    main()
