"""Records under hostile text: a run always closes.

Before: a failed run whose error message quoted a non-UTF-8 file name (Python's
``surrogateescape`` gives ``'out\\udcff.txt'``) or held a lone surrogate from a model's
answer made :meth:`RunRecorder.finish` raise ``PydanticSerializationError``; the
manifest stayed ``running`` and the run could not be told from a live one. The same at
``create`` for a config value with a lone surrogate. One gate: the manifest writer.
"""

from __future__ import annotations

import scarce_lab
from scarce_lab.data.loaders import load_dataset
from scarce_lab.data.recorder import RunRecorder, read_manifest
from scarce_lab.data.schema import RunManifest, RunStatus


def _manifest(**kw) -> RunManifest:
    return RunManifest(run_id="r1", environment="sovsim", condition="cpr", seed=1, package_version=scarce_lab.__version__,
                       models={"a0": "scripted/greedy"}, **kw)


def test_a_failed_run_with_a_surrogate_in_its_error_is_closed(tmp_path):
    rec = RunRecorder.create(tmp_path / "r1", _manifest(config={"rounds": 1}))
    rec.finish(RunStatus.failed, error="SchemaError: error extracting str 'out\udcff.txt'")
    m = read_manifest(tmp_path / "r1")
    assert m.status == RunStatus.failed
    assert m.error == "SchemaError: error extracting str 'out\ufffd.txt'"
    assert load_dataset(tmp_path, include_incomplete=True).runs.collect()["status"].to_list() == ["failed"]


def test_a_config_value_with_a_surrogate_is_written(tmp_path):
    rec = RunRecorder.create(tmp_path / "r1", _manifest(config={"task": "a\ud800b"}, notes={"n": "\udcff"}))
    rec.finish()
    m = read_manifest(tmp_path / "r1")
    assert (m.config["task"], m.notes["n"], m.status) == ("a\ufffdb", "\ufffd", RunStatus.complete)


def test_a_file_name_that_is_not_utf8_is_counted_not_offered_to_the_agents(tmp_path):
    """Case records/c02: a worker's command made ``b'out\\xff.txt'``; Python lists it as
    ``'out\\udcff.txt'``, which the action schema (an enum of file names), the prompt and
    the record cannot encode: the solver's step became a missing decision and the run
    stopped. The agents' listing goes through the read gate
    (``agents.scarce.tools.listing`` -> ``sandbox.gate.listing``): such a name is never
    offered as a path, it is counted in the listing's note, and the schemas build."""
    import os

    from scarce_lab.environments.scarce.agents.masks import solver_choice_schema, tool_specs_for
    from scarce_lab.environments.scarce.agents.tools import list_files, listing
    from scarce_lab.environments.scarce.world.actions import legal_actions

    (tmp_path / "compile.sh").write_text("true\n")
    with open(os.path.join(os.fsencode(tmp_path), b"out\xff.txt"), "wb") as fh:
        fh.write(b"x")
    files = list_files(tmp_path)
    assert files == ["compile.sh"]
    shown = listing(tmp_path)
    assert shown.bad_names == 1 and "not UTF-8" in shown.tail()
    legal = legal_actions("w0", in_slot=False, files=files, slot_cap_s=120)
    schema = solver_choice_schema(legal, compact=True)
    schema.model_json_schema()
    assert tool_specs_for(legal, compact=False)
