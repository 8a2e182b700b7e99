"""A learner's workspace on a temporary folder: copies without solutions, reset, reveal, progress records and the
team table, through the toolkit and through `xlaport learn`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlaport.cli import main
from xlaport.exercises import Check, curriculum, progress, workspace

ROOT = Path(__file__).resolve().parents[2]


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _src(cell: dict) -> str:
    return "".join(cell["source"])


def test_start_copies_a_session_without_solutions(tmp_path: Path) -> None:
    work = tmp_path / "work"
    written = workspace.start(2, work, "ana", root=ROOT)
    assert [p.name for p in written] == ["port_training.ipynb", "port_inference.ipynb"]
    for p in written:
        cells = _cells(p)
        text = "\n".join(_src(c) for c in cells)
        assert "solution-start" not in text and "solution-end" not in text
        assert "solution.passed" not in text, f"{p.name}: a solution cell is left, Run All would run it"
        assert all(not c.get("outputs") for c in cells if c["cell_type"] == "code")
        # the exercises preamble the book includes is in the copy as text (Jupyter shows no {include})
        assert "{include}" not in text
        assert (ROOT / "book" / "fragments" / "exercises.md").read_text().strip() in text
        notes = [c for c in cells if "Solution hidden in your copy" in _src(c)]
        assert len(notes) == len(
            workspace.exercise_labels(json.loads(workspace.chapter_path(p.stem, ROOT).read_text()))
        )
        answers = [c for c in cells if c["cell_type"] == "code" and "progress.at(" in _src(c)]
        assert [(_src(a).count("answer = None")) for a in answers] == [1] * len(notes)
    assert 'who = "ana"' in (work / ".xlaport-learn.toml").read_text()
    # the repository's own notebook is untouched and still has its solutions
    assert "solution.passed" in (ROOT / "notebooks" / "port_training.ipynb").read_text()


def test_start_refuses_a_folder_inside_the_clone_and_bad_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inside the book's clone"):
        workspace.start(1, ROOT / "notebooks" / "mine", "ana", root=ROOT)
    with pytest.raises(ValueError, match="learner's name"):
        workspace.start(1, tmp_path, "ana; rm -rf", root=ROOT)
    with pytest.raises(ValueError, match="sessions 1 to 9"):
        workspace.start(10, tmp_path, "ana", root=ROOT)


def test_start_keeps_existing_work_and_reset_keeps_the_old_copy(tmp_path: Path) -> None:
    workspace.start(1, tmp_path, "ana", root=ROOT)
    mine = tmp_path / "01_first_steps.ipynb"
    mine.write_text(mine.read_text().replace("answer = None", "answer = make_batches", 1))
    assert workspace.start(1, tmp_path, "ana", root=ROOT) == []  # nothing overwritten
    assert "answer = make_batches" in mine.read_text()
    dest, kept = workspace.reset("first_steps", tmp_path, root=ROOT)
    assert dest == mine and kept is not None and kept.parent.name == ".reset"
    assert "answer = make_batches" in kept.read_text() and "answer = make_batches" not in dest.read_text()


def test_reveal_prints_the_books_solution(capsys: pytest.CaptureFixture[str]) -> None:
    from xlaport.exercises import reveal

    reveal("port_training", 2)
    out = capsys.readouterr().out
    assert "port-training-checkpoint" in out and "def portable(model, opt):" in out and "```python" in out
    with pytest.raises(ValueError, match="exercises 1 to 2"):
        workspace.solution_text("port_training", 3)
    with pytest.raises(ValueError, match="no chapter 'nope'"):
        workspace.solution_text("nope", 1)


def test_checks_in_a_workspace_write_records_and_the_team_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "team"
    for who, results in {"ana": [False, False, True], "bo": [False, False, False, False]}.items():
        work = tmp_path / who
        workspace.start(2, work, who, progress=shared, root=ROOT)
        monkeypatch.chdir(work)
        progress.at("port_training", 1)
        for ok in results:
            assert progress.record(Check("loader", ok, "a message")) == shared / f"{who}.jsonl"
    monkeypatch.chdir(tmp_path)  # outside a workspace: nothing is recorded
    assert progress.record(Check("loader", True, "x")) is None
    lines = (shared / "bo.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    assert len(lines) == 4 and {k: rec[k] for k in ("who", "chapter", "exercise", "status")} == {
        "who": "bo", "chapter": "port_training", "exercise": 1, "status": "fail"
    }  # fmt: skip
    table = progress.team_table(shared, curriculum.session(2).chapters)
    assert "| ana | pass (3) |" in table and "| bo | fail (4) |" in table


def test_a_checker_records_through_its_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from xlaport.exercises import check_prompt_buckets

    workspace.start(2, tmp_path, "cy", root=ROOT)
    monkeypatch.chdir(tmp_path)
    progress.at("port_inference", 1)
    check_prompt_buckets(lambda p, n, b: ([8], 16))
    recs = progress.read_records(tmp_path / ".progress")
    assert [(r.who, r.chapter, r.exercise, r.check, r.status) for r in recs] == [
        ("cy", "port_inference", 1, "prompt buckets", "fail")
    ]


def test_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLAPORT_BOOK", str(ROOT))
    assert main(["learn", "sessions"]) == 0
    assert "2. The walk: training and inference: port_training, port_inference" in capsys.readouterr().out
    work = tmp_path / "w"
    assert main(["learn", "start", "--session", "1", "--dir", str(work), "--name", "dee"]) == 0
    assert "jupyter lab" in capsys.readouterr().out and (work / "01_first_steps.ipynb").exists()
    assert main(["learn", "reset", "first_steps", "--dir", str(work)]) == 0
    assert main(["learn", "reveal", "first_steps", "1"]) == 0
    assert "def make_batches" in capsys.readouterr().out
    assert main(["learn", "team", str(work / ".progress")]) == 0  # made by start: empty, not an error
    assert "No progress records" in capsys.readouterr().out
    assert main(["learn", "team", str(tmp_path / "none")]) == 2
    assert "no progress folder" in capsys.readouterr().err
    (tmp_path / "t").mkdir()
    assert main(["learn", "team", str(tmp_path / "t")]) == 0
    assert "No progress records" in capsys.readouterr().out


def test_exercise_estimates_differ_by_exercise() -> None:

    from xlaport_site import curriculum as cp

    minutes = {
        label: m
        for p in ("notebooks/port_training", "notebooks/port_inference")
        for label, _, m in cp.exercise_minutes(p)
    }
    assert minutes["port-inference-top-p"] >= 20  # the trial's 20-30 minutes for the sampler
    assert minutes["port-training-last-batch"] < 10  # a line or two on top of the chapter's own loader
    assert len(set(minutes.values())) > 1
