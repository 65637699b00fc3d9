"""A study run with ``executor="ray"``: the same runs complete as locally, and a second
run finds them complete and sends nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scarce_lab.studies import get
from scarce_lab.studies.run import read_state, run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # Ray's start-up dominates


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'scarce-lab[ray]')")
    try:
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    except Exception as exc:  # no shared memory, no free ports, a sandboxed CI
        pytest.skip(f"Ray cannot start on this machine: {type(exc).__name__}: {exc}")
    yield ray
    ray.shutdown()


def test_a_scripted_study_on_ray_completes_the_runs_local_completes(ray_cluster, tmp_path):
    st = get("memory-horizon")
    models = {"model": "scripted/fifo", "negotiator_model": "scripted/reciprocal"}
    kw = dict(seeds=[1], arms=["none", "subrun"], overrides={"workers": 2, "subruns": 1}, progress=False,
              say=lambda *_: None)
    local = run(st, models, out=tmp_path / "local", **kw)
    on_ray = run(st, models, out=tmp_path / "ray", executor="ray", **kw)
    assert {a: s.done for a, s in on_ray.arms.items()} == {a: s.done for a, s in local.arms.items()} == \
        {"none": 1, "subrun": 1}
    names = sorted(p.name for p in (tmp_path / "local").glob("scarce_*"))
    assert names == sorted(p.name for p in (tmp_path / "ray").glob("scarce_*")) and len(names) == 2
    for name in names:
        assert json.loads((tmp_path / "ray" / name / "manifest.json").read_text())["status"] == "complete"
    again = run(st, models, out=tmp_path / "ray", executor="ray", **kw)  # all complete: skipped
    assert sum(s.done for s in again.arms.values()) == 2
    assert [a["status"] for a in read_state(tmp_path / "ray")["attempts"][names[0]]] == ["complete"]
