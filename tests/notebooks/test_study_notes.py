"""What a notebook tells its reader about its study, and how it runs one.

- every notebook 01-09 names a declared study whose ``notebook`` is that notebook, and
  has the study parameters (``STUDY``, ``RUN``, ``MODEL``, ``RUN_DIR``, ``SEEDS``,
  ``OVERRIDES``) with ``RUN = False`` so nbmake stays offline;
- :func:`scarce_lab.studies.notebook.data_note` computes models, runs per arm and the
  settings that depart from the paper from the runs' manifests (nothing hand-written);
- SCARCE's label-free memory section reads any negotiator model, not only the scripted one;
- the first chart in a Jupyter kernel switches to the offline renderer by itself, and
  ``import scarce_lab`` still does not import altair.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import scarce_lab as sl
from scarce_lab.data.schema import RunManifest
from scarce_lab.reporting import notebook_parameters, read_notebook
from scarce_lab.studies import read_studies
from scarce_lab.studies.notebook import data_note, study_labels

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("0[1-9]*.ipynb"))

#: A study of this test's own (bid mechanism arms; the paper: 4 workers, 25-minute deadlines).
MECHANISM = """
[[study]]
name = "mechanism-check"
title = "a test study"
notebook = "05_revisable_bids_reasoning.ipynb"
source = "SCARCE"
replicates = ["Table 10"]
seeds = 2
model_roles = ["model", "negotiator_model"]
arms = [{ name = "fixed", settings = { mechanism = "fixed" } },
        { name = "revisable", settings = { mechanism = "revisable" } }]
[study.paper]
workers = 4
deadline_min = 25
budget = 1000
"""


def _study():
    return read_studies(MECHANISM, "test", "scarce")[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_names_its_declared_study(path):
    params = {p.name: p for p in notebook_parameters(read_notebook(path))}
    assert {"STUDY", "RUN", "MODEL", "RUN_DIR", "SEEDS", "OVERRIDES"} <= set(params), path.name
    assert params["RUN"].default == "False" and params["MODEL"].default == "None"
    name = json.loads(params["STUDY"].default)
    assert json.loads(params["RUN_DIR"].default) == f"runs/{name}"
    assert sl.study(name).notebook == path.name, f"{path.name} names study {name!r}, declared for another notebook"


def test_note_counts_runs_per_arm_and_computes_departures_from_the_manifests():
    ds = sl.load("data/scarce/scripted/revisable")
    note = data_note(_study(), ds, run_dir="runs/mech")
    text = str(note)
    assert not note.shows_paper_finding
    # three negotiator policies, two seeds each, all revisable: per model set "fixed 0, revisable 2"
    assert text.count("runs per arm: fixed 0, revisable 2") == 3
    assert "deadline_min 15.0 (paper 25)" in text
    assert "workers" not in text.split("depart from the paper's:")[1].split("\n")[0]  # 4 = the paper's 4
    assert "scripted policies" in text and "fewer than 2 runs" in text
    assert "`scarce-lab study run mechanism-check --model MODEL --out runs/mech`" in text
    assert note.why().lines == note.lines[-2:]


def _manifest(i: int, mechanism: str, model: str, **config) -> RunManifest:
    cfg = {"workers": 4, "deadline_min": 25.0, "budget": 1000, "mechanism": mechanism, **config}
    return RunManifest(run_id=f"r{i}", environment="scarce", condition=mechanism, config=cfg,
                       models={"solver": model, "negotiator": model}, seed=i, package_version="0")


def test_note_says_the_data_can_show_the_finding_when_it_can():
    runs = [_manifest(i, m, "openai/some-model") for i, m in enumerate(["fixed", "fixed", "revisable", "revisable"])]
    other = RunManifest(run_id="x", environment="sovsim", condition="cpr", models={"a0": "scripted/greedy"}, seed=0,
                        package_version="0")  # another environment's run: not counted
    note = data_note(_study(), SimpleNamespace(manifests=[*runs, other]))
    assert note.shows_paper_finding, str(note)
    assert "runs per arm: fixed 2, revisable 2" in str(note)
    assert "every paper setting the study declares is the paper's" in str(note)
    # one run at 3 workers: that setting now departs, and the note says the data cannot show it
    bent = data_note(_study(), SimpleNamespace(manifests=[*runs, _manifest(9, "fixed", "openai/some-model", workers=3)]))
    assert not bent.shows_paper_finding and "workers 3 (paper 4)" in str(bent)


def test_note_says_when_an_arms_runs_are_of_several_games():
    """Runs of one arm that differ in another setting are different games (the tables keep
    them apart): the note says so beside the arm's count, naming what differs."""
    runs = [_manifest(0, "fixed", "openai/m"), _manifest(1, "fixed", "openai/m")]
    bent = RunManifest(run_id="r2", environment="scarce", condition="fixed,workers=3",
                       config={"workers": 3, "deadline_min": 25.0, "budget": 1000, "mechanism": "fixed"},
                       models={"solver": "openai/m", "negotiator": "openai/m"}, seed=2, package_version="0")
    text = str(data_note(_study(), SimpleNamespace(manifests=[*runs, bent])))
    assert "runs per arm: fixed 3 (in 2 games: they differ in workers), revisable 0" in text
    assert "model `openai/m` (every role)" in text  # one model: not "models"
    assert "(in " not in str(data_note(_study(), SimpleNamespace(manifests=runs)))
    assert ": 1 run; runs per arm" in str(data_note(_study(), SimpleNamespace(manifests=runs[:1])))


def test_dollar_amounts_display_as_written_not_as_tex():
    """JupyterLab reads "$0.04 to $0.22" as TeX (an italic "0.04to0.22"): every Markdown
    the project displays writes ``$`` outside code spans as MathJax's escape, a note's planned cost too."""
    from scarce_lab.analysis.labels import displayed_markdown

    assert displayed_markdown("costs $1.50 to $3 (`echo $HOME`)") == r"costs \\\$1.50 to \\\$3 (`echo $HOME`)"
    runs = [_manifest(i, "fixed", "scripted/greedy") for i in range(2)]
    md = data_note(_study(), SimpleNamespace(manifests=runs), model="openai/gpt-4o-mini")._repr_markdown_()
    assert "planned for openai/gpt-4o-mini" in md and r"\\\$" in md
    assert "$" not in "".join(md.split("`")[::2]).replace(r"\\\$", "")  # no bare $ outside code spans


def test_note_counts_the_labels_of_these_runs_only(tmp_path):
    import polars as pl

    ds = sl.load("data/scarce/scripted/revisable")
    ids = [m.run_id for m in ds.manifests]
    pl.DataFrame({"run_id": [ids[0], ids[0], ids[1], "elsewhere"]}).write_parquet(tmp_path / "labels.parquet")
    text = str(data_note(_study(), ds, labels=tmp_path / "labels.parquet"))
    assert "judge labels: 3 labelled units from 2 of these 6 runs" in text


def test_study_labels_finds_what_a_study_run_wrote(tmp_path):
    with pytest.raises(FileNotFoundError, match="wrote nothing"):
        study_labels(tmp_path / "absent")
    assert study_labels(tmp_path) is None
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "labels.parquet").write_bytes(b"")
    assert study_labels(tmp_path) == str(tmp_path / "labels" / "labels.parquet")


def test_label_free_memory_section_reads_any_negotiator_model():
    """Before: hard-coded to ``scripted/strategic``; the embedded model's runs showed nothing."""
    ds = sl.load(["data/scarce/embedded", "data/scarce/scripted/memory"])
    f = sl.scarce.memory_unlabelled(ds)
    assert set(f.frame["model"]) >= {"embedded/smollm2", "scripted/strategic"}
    only = sl.scarce.memory_unlabelled(ds, models=["embedded/smollm2"])
    assert set(only.frame["model"]) == {"embedded/smollm2"}


OFFLINE = """
import sys, types
import scarce_lab as sl
assert "altair" not in sys.modules, "import scarce_lab imported altair"
{kernel}
import polars as pl, altair as alt
from scarce_lab.analysis import figures as F
F.titled(alt.Chart(pl.DataFrame({{"x": [1, 2], "y": [3, 4]}})).mark_point().encode(x="x", y="y"), "t")
print(alt.renderers.active, F.colour_book().active)
"""


@pytest.mark.parametrize(("kernel", "expected"), [
    ("sys.modules['ipykernel'] = types.ModuleType('ipykernel')", "scarce_lab True"),  # a notebook's kernel
    ("", "default False"),                                                             # a script: unchanged
    ("sys.modules['ipykernel'] = types.ModuleType('ipykernel')\nimport altair\naltair.renderers.enable('html')",
     "html True"),                                                                     # the user's choice stands
])
def test_first_chart_in_a_kernel_renders_offline_without_a_setup_call(kernel, expected):
    out = subprocess.run([sys.executable, "-c", OFFLINE.format(kernel=kernel)], capture_output=True, text=True,
                         cwd=REPO, timeout=60, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected


def test_a_kernels_first_chart_takes_its_colours_from_the_book():
    """Before: the book started in ``titled``, after the first chart's single-series colour
    was drawn from the palette, so that colour meant two things in notebook 01."""
    code = ("import sys, types\nsys.modules['ipykernel'] = types.ModuleType('ipykernel')\n"
            "from scarce_lab.analysis import figures as F\nc = F.series_colour()\n"
            "print(F.colour_book().active, F.colour_book().colours.get(F.ONE_SERIES) == c)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True"]
