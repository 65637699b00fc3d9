#!/usr/bin/env python3
"""Write the shipped replication reports (``data/reports/``) and print their counts.

For every declared study (:func:`scarce_lab.studies.studies`) and every profile of it
whose ``out`` folder is in the checkout: :func:`scarce_lab.studies.report.report` on that
folder (with the judge labels shipped for it: ``<out>/labels/labels.parquet``, else
``data/<env>/labels/<folder name>/labels.parquet``), saved as
``data/reports/<study>--<profile>/`` (CSV, Markdown, LaTeX, the convention, the
departures). Then, where ``../shared/data`` is beside the checkout, the SovSim studies on
its SovSim format sample (made up by hand: the report says it is a format sample, never a
result) and on its GovSim fishing logs. ``data/reports/README.md`` lists every report
with its counts (cells inside / outside / not comparable / no data / statement).

Usage::

    .venv/bin/python scripts/replication_reports.py [--out data/reports] [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"  # the default of --shared
SAMPLE_NOTE = ("The data are the SovSim format sample (../shared/data/sovsim_format_sample): made up by hand "
               "to show the released layout, not model behaviour. Every verdict here checks the pipeline only.")
GOVSIM_NOTE = ("The data are third-party GovSim fishing logs (../shared/data/govsim_fishing_v7), read with "
               "GovSim's rules: a check of the reader and the metrics on real logs, not SovSim's numbers.")


def _labels_for(out: Path, environment: str) -> Path | None:
    for p in (out / "labels" / "labels.parquet", ROOT / "data" / environment / "labels" / out.name / "labels.parquet"):
        if p.is_file():
            return p
    return None


def _jobs(shared: Path) -> list[tuple[str, object, Path, Path | None, str, str | None]]:
    """(report folder name, study, data path, labels, note, profile) for every report
    to write: a profile's runs are only those with its settings."""
    from scarce_lab.studies import studies
    from scarce_lab.studies.report import _numbers_known

    jobs = []
    for st in studies():
        if not _numbers_known(st):
            continue
        for name, prof in st.profiles.items():
            out = ROOT / prof.out if prof.out else None
            if out is not None and out.exists():
                jobs.append((f"{st.name}--{name}", st, out, _labels_for(out, st.environment), prof.note, name))
        if st.environment == "sovsim" and st.replicates and shared.is_dir():
            sample = shared / "sovsim_format_sample"
            if sample.is_dir():
                jobs.append((f"{st.name}--format-sample", st, sample, None, SAMPLE_NOTE, None))
            govsim = shared / "govsim_fishing_v7"
            if govsim.is_dir():  # GovSim's own published numbers, not SovSim's
                gov = st.model_copy(update={"source": "GovSim", "replicates": ["Survival"]})
                jobs.append((f"{st.name}--govsim-logs", gov, govsim, None, GOVSIM_NOTE, None))
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "data" / "reports"))
    ap.add_argument("--shared", default=str(SHARED), help="the shared data folder (../shared/data)")
    args = ap.parse_args()
    import warnings

    from scarce_lab.studies.report import VERDICTS, counts, report

    warnings.simplefilter("ignore")
    dest = Path(args.out)
    lines = ["# Replication reports of the shipped data", "",
             "Written by `scripts/replication_reports.py` (docs/studies.md). Each folder: the study's report on "
             "one shipped dataset (`<study>_replication.*`) and the settings where its runs depart from the paper "
             "(`<study>_replication_departures.*`). The shipped runs use scripted or embedded models, so every "
             "comparison with a paper's number checks the pipeline, not the paper.", "",
             "| report | data | " + " | ".join(VERDICTS) + " |", "|---|---|" + "---|" * len(VERDICTS)]
    from scarce_lab.studies import studies
    from scarce_lab.studies.report import _numbers_known

    none = [st.name for st in studies() if not _numbers_known(st)]
    failed = 0
    shared = Path(args.shared)
    for folder, st, data, labels, note, profile in _jobs(shared):
        target = dest / folder
        try:
            found = report(st, data, labels=labels, profile=profile)
        except Exception as exc:  # a study this data cannot report: said, not hidden
            failed += 1
            print(f"{folder}: no report ({type(exc).__name__}: {exc})")
            lines.append(f"| {folder} | {_rel(data, shared)} | no report: {type(exc).__name__}: {str(exc)[:120]} |")
            continue
        found = found.with_(reading=f"{found.reading} {note}".strip())
        if target.exists():
            shutil.rmtree(target)
        found.save(target)
        (target / "README.md").write_text(f"# {folder}\n\nData: `{_rel(data, shared)}`"
                                          + (f"; labels: `{_rel(labels)}`" if labels else "; no judge labels")
                                          + f".\n\n{found.reading}\n\n{found.markdown()}\n", encoding="utf-8")
        c = counts(found)
        print(f"{folder}: " + ", ".join(f"{v} {c[v]}" for v in VERDICTS))
        lines.append(f"| {folder} | {_rel(data, shared)} | " + " | ".join(str(c[v]) for v in VERDICTS) + " |")
    if none:
        lines += ["", f"Studies that replicate no published number (no report): {', '.join(none)}."]
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 1 if failed else 0


def _rel(p: Path | None, shared: Path = SHARED) -> str:
    """``p`` relative to the checkout (``../shared/data/...`` for the shared data)."""
    if p is None:
        return ""
    if Path(p).is_relative_to(shared):
        return f"../shared/data/{Path(p).relative_to(shared)}"
    return os.path.relpath(p, ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
