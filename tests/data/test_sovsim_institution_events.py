"""Hostile SovSim institution events (``quota``, ``election``, ``sanction``, ``sanctions``)
in a run's events.jsonl: a value no game can write (negative points, a quota that is not
the lower median, an election the tally does not elect, accounts that do not balance) is
refused by ``sl.load`` naming the file, line and field, never read into a finding."""

from __future__ import annotations

import json
import shutil

import pytest

from scarce_lab.data.jsonl import TrajectoryFileError


@pytest.fixture(scope="module")
def institution_run(tmp_path_factory):
    import scarce_lab as sl
    from scarce_lab.config import SovSimConfig

    cfg = SovSimConfig(condition="bcpr", model="scripted/conditional", seed=8, game={"rounds": 3}, sanctions=True,
                       quota="all", elections=1)
    (run,) = sl.run(cfg, tmp_path_factory.mktemp("inst"))
    return run


def _edited(run, tmp_path, kind, edit):
    out = tmp_path / "runs"
    shutil.copytree(run, out / run.name)
    path = out / run.name / "events.jsonl"
    events = [json.loads(x) for x in path.read_text().splitlines()]
    hit = next(e for e in events if e["kind"] == kind)
    edit(hit["payload"])
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return out


def test_the_recorded_institution_events_load(institution_run):
    import scarce_lab as sl

    ds = sl.load(institution_run.parent)
    assert ds.payloads("sanctions", "sovsim").collect().height == 3


@pytest.mark.parametrize(("kind", "edit", "says"), [
    ("sanctions", lambda p: p.update(received=[-40, *p["received"][1:]]), "received.0 is -40"),
    ("sanctions", lambda p: p.update(net=[55.0, *p["net"][1:]]), "not -(spent"),
    ("sanctions", lambda p: p.update(sent=[*p["sent"][:-1], p["sent"][-1] + 3]), "points sent but"),
    ("sanctions", lambda p: p.update(agents=p["agents"][:-1]), "lists of different lengths"),
    ("sanction", lambda p: p.update(points=[-2, *p["points"][1:]]), "points.0 is -2"),
    ("quota", lambda p: p.update(quota=10**9), "not the lower median"),
    ("quota", lambda p: p.update(scope="everyone"), "scope"),
    ("election", lambda p: p.update(votes=[v + 1 for v in p["votes"]]), "votes from"),
    ("election", lambda p: p.update(moved=not p["moved"]), "moved="),
])
def test_an_institution_event_no_game_writes_is_refused_by_name(institution_run, tmp_path, kind, edit, says):
    import scarce_lab as sl

    with pytest.raises(TrajectoryFileError, match=rf"events.jsonl:\d+: invalid event: .*{kind}.*"):
        try:
            sl.load(_edited(institution_run, tmp_path, kind, edit))
        except TrajectoryFileError as exc:
            assert says in str(exc), str(exc)
            raise
