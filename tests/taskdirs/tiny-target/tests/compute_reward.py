"""Verifier of the tiny test task: writes OUT/reward.json with score in [0, 1]."""

import argparse
import importlib.util
import json
from pathlib import Path

TARGET = 7


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app-dir", required=True)
    ap.add_argument("--output-dir", required=True)
    args = ap.parse_args()
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        spec = importlib.util.spec_from_file_location("program", Path(args.app_dir) / "program.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        v = float(mod.value())
        score = max(0.0, 1.0 - abs(v - TARGET) / TARGET)
        reason = f"value() = {v}"
    except Exception as exc:  # noqa: BLE001
        score, reason = 0.0, f"program failed: {type(exc).__name__}: {exc}"
    (out / "reward.json").write_text(json.dumps({"score": score, "reason": reason}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
