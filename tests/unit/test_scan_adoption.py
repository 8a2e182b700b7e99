"""Adopting the scanner where teams work: the baseline, the pre-commit hook, the GitHub action's script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from xlaport.cli import main
from xlaport.scan import scan
from xlaport.scan.baseline import apply_baseline, load_baseline, write_baseline
from xlaport.scan.ci import MARKER, post_comment

ROOT = Path(__file__).resolve().parents[2]
CODE = "import torch\nx = torch.zeros(1).cuda()\ntorch.cuda.synchronize()\n"


def test_baseline_survives_moved_lines_and_reports_new_and_copied_findings(tmp_path: Path) -> None:
    src = tmp_path / "train.py"
    src.write_text(CODE)
    base = tmp_path / "baseline.json"
    assert write_baseline(scan(src), base) == 2
    src.write_text("# a comment\n\n" + CODE)  # every finding moves down two lines
    res, known = apply_baseline(scan(src), load_baseline(base))
    assert known == 2 and res.findings == []
    src.write_text(CODE + "y = torch.ones(1).cuda()\ntorch.cuda.synchronize()\n")  # a new line, a copied line
    res, known = apply_baseline(scan(src), load_baseline(base))
    assert known == 2 and sorted((f.rule, f.line) for f in res.findings) == [("cuda-api", 5), ("cuda-device", 4)]


def test_baseline_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "train.py"
    src.write_text(CODE)
    base = str(tmp_path / "b.json")
    assert main(["scan", str(src), "--write-baseline", base]) == 0
    assert main(["scan", str(src), "--baseline", base, "--fail-on", "warning"]) == 0
    assert "2 findings in the baseline" in capsys.readouterr().err
    src.write_text(CODE + "torch.distributed.init_process_group('nccl')\n")
    assert main(["scan", str(src), "--baseline", base]) == 1
    (tmp_path / "bad.json").write_text("{}")
    assert main(["scan", str(src), "--baseline", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("xlaport scan: error:") and "not an xlaport baseline" in err[-1]


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def test_pre_commit_hook_scans_staged_files_at_a_configurable_level(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "xlaport-scan" and hook["language"] == "python"
    entry = hook["entry"].split()
    assert entry[:2] == ["xlaport", "scan"]
    _git(tmp_path, "init", "-q")
    (tmp_path / "train.py").write_text(CODE)
    (tmp_path / "ok.py").write_text("print('fine')\n")
    _git(tmp_path, "add", "train.py", "ok.py")
    staged = _git(tmp_path, "diff", "--cached", "--name-only").split()
    import re

    staged = [str(tmp_path / f) for f in staged if re.search(hook["files"], f)]
    assert main([*entry[1:], *staged]) == 1  # as pre-commit runs it: entry + the staged files
    assert main([*entry[1:], "--fail-on", "never", *staged]) == 0  # args: [--fail-on, never]
    assert main([*entry[1:], str(tmp_path / "ok.py")]) == 0


def test_action_script_on_a_two_commit_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "train.py").write_text(CODE)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    # the pull request: the sync is fixed, the .cuda() moves down, a NCCL process group is new
    (repo / "train.py").write_text(
        "import torch\n\n# moved\nx = torch.zeros(1).cuda()\ntorch.distributed.init_process_group('nccl')\n"
    )
    _git(repo, "commit", "-q", "-am", "head")
    sarif = tmp_path / "out.sarif"
    cmd = [sys.executable, "-m", "xlaport.scan.ci", "--base", "HEAD~1", "--repo", "o/r", "--pr", "7", "--dry-run"]
    r = subprocess.run([*cmd, "--sarif", str(sarif), "--fail-on", "error"], cwd=repo, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr  # the new NCCL finding is an error
    out = r.stdout
    assert "GET https://api.github.com/repos/o/r/issues/7/comments?per_page=100" in out
    post = out.split("POST https://api.github.com/repos/o/r/issues/7/comments\n", 1)[1]
    body = json.loads(post)["body"]
    assert body.startswith(MARKER) and "**1 new**, **1 fixed**" in body
    assert "`nccl-backend`" in body and "`cuda-api`" in body and "person-weeks" in body
    assert "`cuda-device`" not in body  # moved, neither new nor fixed
    runs = json.loads(sarif.read_text())["runs"]
    assert {res["ruleId"] for res in runs[0]["results"]} == {"cuda-device", "nccl-backend"}
    assert len(_git(repo, "worktree", "list").strip().splitlines()) == 1  # the base worktree is gone
    bad = subprocess.run([*cmd[:3], "--base", "nope"], cwd=repo, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("xlaport ci: error: no commit 'nope'")


def test_comment_is_updated_not_duplicated() -> None:
    calls: list[tuple[str, str]] = []

    def fake(method: str, url: str, body: dict[str, Any] | None) -> Any:
        calls.append((method, url))
        return [{"id": 1, "body": "hi"}, {"id": 42, "body": MARKER + "\nold"}] if method == "GET" else {}

    assert post_comment("o/r", 7, MARKER + "\nnew", fake) == "updated"
    assert calls[-1] == ("PATCH", "https://api.github.com/repos/o/r/issues/comments/42")


def test_action_yml_runs_the_script_and_uploads_sarif() -> None:
    act = yaml.safe_load((ROOT / "action.yml").read_text())
    assert act["runs"]["using"] == "composite"
    steps = act["runs"]["steps"]
    assert any("python -m xlaport.scan.ci" in s.get("run", "") for s in steps)
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif") for s in steps)
    assert {"paths", "base", "fail-on", "comment", "upload-sarif"} <= set(act["inputs"])
