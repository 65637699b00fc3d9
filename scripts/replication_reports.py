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

    .venv/bin/python scripts/replication_reports.py [--out data/reports]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SAMPLE_NOTE = ("The data are the SovSim format sample (../shared/data/sovsim_format_sample): made up by hand "
               "to show the released layout, not model behaviour. Every verdict here checks the pipeline only.")
GOVSIM_NOTE = ("The data are third-party GovSim fishing logs (../shared/data/govsim_fishing_v7), read with "
               "GovSim's rules: a check of the reader and the metrics on real logs, not SovSim's numbers.")


def _labels_for(out: Path, environment: str) -> Path | None:
    for p in (out / "labels" / "labels.parquet", ROOT / "data" / environment / "labels" / out.name / "labels.parquet"):
        if p.is_file():
            return p
    return None


def _jobs() -> list[tuple[str, object, Path, Path | None, str]]:
    """(report folder name, study, data path, labels, note) for every report to write."""
    from scarce_lab.studies import studies

    jobs = []
    for st in studies():
        for name, prof in st.profiles.items():
            out = ROOT / prof.out if prof.out else None
            if out is not None and out.exists():
                jobs.append((f"{st.name}--{name}", st, out, _labels_for(out, st.environment), prof.note))
        if st.environment == "sovsim" and st.replicates and SHARED.is_dir():
            sample = SHARED / "sovsim_format_sample"
            if sample.is_dir():
                jobs.append((f"{st.name}--format-sample", st, sample, None, SAMPLE_NOTE))
            govsim = SHARED / "govsim_fishing_v7"
            if govsim.is_dir():
                jobs.append((f"{st.name}--govsim-logs", st, govsim, None, GOVSIM_NOTE))
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "data" / "reports"))
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
    failed = 0
    for folder, st, data, labels, note in _jobs():
        target = dest / folder
        try:
            found = report(st, data, labels=labels)
        except Exception as exc:  # a study this data cannot report: said, not hidden
            failed += 1
            print(f"{folder}: no report ({type(exc).__name__}: {exc})")
            lines.append(f"| {folder} | {_rel(data)} | no report: {type(exc).__name__}: {str(exc)[:120]} |")
            continue
        found = found.with_(reading=f"{found.reading} {note}".strip())
        if target.exists():
            shutil.rmtree(target)
        found.save(target)
        (target / "README.md").write_text(f"# {folder}\n\nData: `{_rel(data)}`"
                                          + (f"; labels: `{_rel(labels)}`" if labels else "; no judge labels")
                                          + f".\n\n{found.reading}\n\n{found.markdown()}\n", encoding="utf-8")
        c = counts(found)
        print(f"{folder}: " + ", ".join(f"{v} {c[v]}" for v in VERDICTS))
        lines.append(f"| {folder} | {_rel(data)} | " + " | ".join(str(c[v]) for v in VERDICTS) + " |")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 1 if failed else 0


def _rel(p: Path | None) -> str:
    if p is None:
        return ""
    try:
        return str(Path(p).resolve().relative_to(ROOT))
    except ValueError:
        return str(Path(p).resolve().relative_to(ROOT.parent)).join(("../", ""))


if __name__ == "__main__":
    raise SystemExit(main())
