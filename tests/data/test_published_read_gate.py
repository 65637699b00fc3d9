"""The published layouts' readers (SovSim release, SovSim runs, GovSim logs) open their
files through the read gate: a FIFO or a file over its limit is refused by name."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from scarce_lab.data import limits
from scarce_lab.data.jsonl import FileLimitError
from scarce_lab.datasets import load

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "sovsim_format_sample"
GOVSIM = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "govsim_fishing_v7"


def _table(path: Path):
    import scarce_lab as sl

    return sl.table(load(path), "sovsim")


@pytest.mark.skipif(not SAMPLE.exists(), reason="../shared/data is not beside this checkout")
def test_a_release_file_over_its_limit_is_refused_by_name(tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(SAMPLE, tmp_path / "rel")
    size = (tmp_path / "rel" / "example-model" / "cpr" / "rationales.json").stat().st_size
    monkeypatch.setattr(limits, "LIMITS", replace(limits.LIMITS, published_file_bytes=size - 1))
    with pytest.raises((FileLimitError, ValueError), match=r"rationales\.json.*published_file_bytes"):
        _table(tmp_path / "rel")


@pytest.mark.skipif(not SAMPLE.exists(), reason="../shared/data is not beside this checkout")
def test_a_release_file_that_is_a_fifo_is_refused_unread(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "rel")
    target = tmp_path / "rel" / "example-model" / "kcpr_m" / "rationales.json"
    target.unlink()
    os.mkfifo(target)  # opening it for reading would block forever
    with pytest.raises((FileLimitError, ValueError), match="not a regular file"):
        _table(tmp_path / "rel")


@pytest.mark.skipif(not GOVSIM.exists(), reason="../shared/data is not beside this checkout")
def test_a_govsim_log_over_its_limit_is_refused_by_name(tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(GOVSIM / "Llama-3-8B", tmp_path / "logs" / "Llama-3-8B")
    monkeypatch.setattr(limits, "LIMITS", replace(limits.LIMITS, published_file_bytes=100))
    with pytest.raises((FileLimitError, ValueError), match=r"log_env\.json.*published_file_bytes"):
        _table(tmp_path / "logs")


@pytest.mark.skipif(not GOVSIM.exists(), reason="../shared/data is not beside this checkout")
def test_a_govsim_config_with_a_python_tag_is_refused_not_run(tmp_path: Path) -> None:
    from scarce_lab.environments.sovsim.published.govsim_log import GovSimConfigError

    shutil.copytree(GOVSIM / "Llama-3-8B", tmp_path / "logs" / "Llama-3-8B")
    cfg = sorted((tmp_path / "logs").rglob("config.yaml"))[0]
    marker = tmp_path / "ran"
    cfg.write_text(f'x: !!python/object/apply:os.system ["touch {marker}"]\n' + cfg.read_text())
    with pytest.raises(GovSimConfigError, match=r"config\.yaml: not valid YAML"):
        _table(tmp_path / "logs")
    assert not marker.exists()
