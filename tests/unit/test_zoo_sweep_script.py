"""scripts/zoo_sweep.py: an interrupted sweep is written from its kept chunks, the rest carried over and named."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from conftest import script
from xlaport.reference import data_text
from xlaport.zoo import SweepResult

zoo_sweep = script("zoo_sweep")


def test_collect_writes_fresh_chunks_and_names_the_rows_it_carried_over(tmp_path: Path) -> None:
    recorded = json.loads(data_text("zoo-sweep.json"))
    full = SweepResult.from_dict(recorded)
    parts = tmp_path / "parts"
    parts.mkdir()
    # one kept chunk: tpu llama, measured "again" with a different wall time
    (row,) = [r for r in full.results if (r.model, r.target) == ("llama", "tpu")]
    row.wall_s = 12.5
    chunk = SweepResult(full.config.__class__(models=("llama",), targets=("tpu",)), [row], 13.0, {"torch": "x"})
    (parts / "tpu-llama.json").write_text(json.dumps(chunk.as_dict()))
    out = tmp_path / "zoo-sweep.json"
    out.write_text(json.dumps(recorded))
    args = argparse.Namespace(machine="test machine", why="interrupted")
    assert zoo_sweep.collect(["tpu", "neuron"], parts, out, args) == 0
    data = json.loads(out.read_text())
    written = SweepResult.from_dict(data)
    assert [(r.model, r.target) for r in written.results] == [(r.model, r.target) for r in full.results]
    carried = data["recorded"]["carried_over"]
    assert "tpu llama" not in carried["rows"] and len(carried["rows"]) == len(full.results) - 1
    assert carried["why"] == "interrupted" and data["recorded"]["chunk_wall_s"] == [13.0]
    assert written.wall_s == 13.0 + sum(r.wall_s for r in full.results if (r.model, r.target) != ("llama", "tpu"))
    assert written.summary() == full.summary()  # the same rows, so the same pass counts


def test_collect_without_chunks_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "zoo-sweep.json"
    out.write_text(data_text("zoo-sweep.json"))
    args = argparse.Namespace(machine="m", why="")
    assert zoo_sweep.collect(["tpu"], tmp_path, out, args) == 2
