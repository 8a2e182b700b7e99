"""xlaport.scan and `xlaport scan` (each rule's own examples are run by test_scan_rules.py): suppressions,
[tool.xlaport], outputs (SARIF validated with sarif-pydantic), exit codes, and files that must not crash it."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import Runner
from xlaport import pages
from xlaport.cli import main
from xlaport.scan import RULES, ScanConfig, load_config, rule, scan, scan_source, to_markdown
from xlaport.scan import engine as scan_engine

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "cuda_project"


# rule -> (code that must trigger it, the fixed code that must not); file name where it matters
def _invalid(rule_id: str) -> str:
    """The first snippet rule ``rule_id``'s module says it reports."""
    return next(r for r in RULES if r.id == rule_id).invalid[0]


def _rules_of(code: str, path: str = "snippet.py") -> list[str]:
    return [f.rule for f in scan_source(code, path)]


def test_kernel_rules_point_to_the_kernel_chapter_and_page() -> None:
    kernel_rules = [r for r in RULES if r.category == "kernel"]
    assert kernel_rules and all(
        r.docs == ("notebooks/custom_kernels", "book/generated/kernel_concepts") for r in kernel_rules
    )


def test_rule_chapters_exist() -> None:
    from xlaport.reference import PAGES

    for r in RULES:
        for doc in r.docs:
            if doc.startswith("book/generated/"):
                assert doc.removeprefix("book/generated/") in PAGES, f"{r.id}: no generated page {doc}"
            else:
                assert (ROOT / f"{doc}.ipynb").exists() or (ROOT / f"{doc}.md").exists(), f"{r.id}: no page {doc}"


def test_cuda_source_files_counted_with_lines(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("#include <cuda.h>\n__global__ void a() {}\n__global__ void b() {}\nint x;\n")
    (tmp_path / "k.cuh").write_text("#pragma once\n")
    (tmp_path / "k.cpp").write_text("__global__ void not_cuda_file() {}\n")
    res = scan(tmp_path)
    src = {f.path.rsplit("/", 1)[-1]: f for f in res.findings if f.rule == "cuda-source"}
    assert set(src) == {"k.cu", "k.cuh"}
    assert src["k.cu"].lines == 4 and "2 `__global__` kernels" in src["k.cu"].message
    assert src["k.cuh"].lines == 1


def test_dependencies_in_requirements_and_pyproject(tmp_path: Path) -> None:
    (tmp_path / "requirements-gpu.txt").write_text("torch==2.5\nbitsandbytes>=0.43  # 8-bit Adam\n-e .\n# xformers\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["numpy", "flash_attn>=2"]\n'
        '[project.optional-dependencies]\nfast = ["cupy-cuda12x"]\n'
    )
    res = scan(tmp_path)
    deps = sorted((f.path.rsplit("/", 1)[-1], f.line, f.detail) for f in res.findings)
    assert deps == [
        ("pyproject.toml", 3, "flash-attn"),
        ("pyproject.toml", 5, "cupy"),
        ("requirements-gpu.txt", 2, "bitsandbytes"),
    ]


def test_optional_import_is_a_warning_not_an_error() -> None:
    code = "try:\n    import apex\nexcept ImportError:\n    apex = None\nimport xformers\n"
    sev = {f.detail: f.severity for f in scan_source(code)}
    assert sev == {"apex": "warning", "xformers": "error"}


def test_fix_and_severity_come_from_the_api_mapping() -> None:
    from xlaport.api_mapping import lookup

    (f,) = scan_source("import torch\ntorch.cuda.synchronize()\n")
    row = lookup("torch.cuda.synchronize")[0]
    assert row.accelerator in f.fix and row.tpu.status in f.fix
    # the message says what the line as written does on a host without CUDA; the fix is the mapping's port
    assert "raises there" in f.message and f.severity == "error"
    (g,) = scan_source("import torch\ntorch.cuda.manual_seed_all(0)\n")
    seed_row = lookup("torch.cuda.manual_seed_all")[0]
    assert seed_row.tpu.spelling in g.fix and "does nothing there" in g.message and g.severity == "warning"
    (h,) = scan_source("import torch\nassert torch.cuda.is_available()\n")
    assert "returns False" in h.message and "stops the script" in h.message and h.severity == "error"


def test_aliases_are_resolved() -> None:
    code = "import torch as T\nfrom torch import cuda\nfrom torch.cuda.amp import GradScaler as GS\ncuda.synchronize()\ns = GS()\nT.cuda.empty_cache()\n"
    # the import line from torch.cuda.amp is where the port goes (line 3), then each use
    assert _rules_of(code) == ["cuda-amp", "cuda-api", "cuda-amp", "cuda-api"]


def test_line_and_file_suppressions() -> None:
    code = (
        "import torch\n"
        "x = y.cuda()  # xlaport: ignore[cuda-device]\n"
        "z = y.cuda()  # xlaport: ignore[cuda-api]\n"
        "torch.cuda.synchronize()  # xlaport: ignore\n"
    )
    found = scan_source(code)
    assert [(f.rule, f.line) for f in found] == [("cuda-device", 3)]
    assert scan_source("# xlaport: ignore-file\nimport torch\nx = y.cuda()\n") == []
    kept = scan_source("# xlaport: ignore-file[cuda-device]\nimport torch\nx = y.cuda()\ntorch.cuda.synchronize()\n")
    assert [f.rule for f in kept] == ["cuda-api"]


@pytest.mark.parametrize(
    ("code", "rules"),
    [
        # the words inside a string literal on the line suppress nothing
        ('import torch\nx = y.cuda(); note = "# xlaport: ignore"\n', ["cuda-device"]),
        # nor inside a docstring, even ignore-file
        ('"""Docs.\n\n# xlaport: ignore-file\n"""\nimport torch\nx = y.cuda()\n', ["cuda-device"]),
        # nor inside an f-string
        ("import torch\nx = y.cuda(); s = f'{1} # xlaport: ignore'\n", ["cuda-device"]),
        # a real comment after a string with a hash in it still counts
        ("import torch\nx = y.cuda('#')  # xlaport: ignore[cuda-device]\n", []),
    ],
)
def test_suppressions_come_from_comments_only(code: str, rules: list[str]) -> None:
    assert [f.rule for f in scan_source(code)] == rules


def test_a_misspelt_rule_id_in_a_suppression_is_reported_and_suppresses_nothing(tmp_path: Path) -> None:
    from xlaport.scan import scan

    (tmp_path / "a.py").write_text("import torch\nx = y.cuda()  # xlaport: ignore[cuda-devcie]\n")
    res = scan(tmp_path, jobs=1)
    assert [f.rule for f in res.findings] == ["cuda-device"]
    said = [w.reason for w in res.warnings]
    assert said == ["line 2: unknown rule id 'cuda-devcie' in an xlaport suppression comment"], said


def test_suppression_comments_in_requirements_pyproject_and_cuda_sources(tmp_path: Path) -> None:
    from xlaport.scan import scan

    (tmp_path / "requirements.txt").write_text("flash-attn==2.6.3  # xlaport: ignore[cuda-only-dependency]\ncupy\n")
    (tmp_path / "k.cu").write_text("// xlaport: ignore-file[cuda-source]\n__global__ void k() {}\n")
    (tmp_path / "l.cu").write_text('const char* s = "// xlaport: ignore-file";\n__global__ void k() {}\n')
    res = scan(tmp_path, jobs=1)
    got = sorted((Path(f.path).name, f.rule, f.line) for f in res.findings)
    assert got == [("l.cu", "cuda-source", 1), ("requirements.txt", "cuda-only-dependency", 2)], got


def test_comments_before_a_syntax_error_still_count() -> None:
    from xlaport.scan.suppress import comments

    text = "x = 1  # xlaport: ignore\ndef f(:\n  y = '''open\n"
    assert list(comments(text, "py")) == [(1, "# xlaport: ignore")]


def _project(tmp_path: Path, toml: str) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n' + toml)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import torch\nx = y.cuda()\ntorch.cuda.Stream()\n")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text("x = y.cuda()\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text("x = y.cuda()\nfor b in loader:\n    print(b.item())\n")
    return tmp_path


def test_pyproject_config(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        '[tool.xlaport]\nignore = ["cuda-streams"]\nexclude = ["legacy"]\nfail-on = "warning"\n'
        '[tool.xlaport.severity]\nhost-sync-in-loop = "error"\n'
        '[tool.xlaport.per-file-ignores]\n"scripts/*" = ["cuda-device"]\n',
    )
    res = scan(root)
    got = sorted((f.path.split("/", 1)[-1] if "/" in f.path else f.path, f.rule, f.severity) for f in res.findings)
    rel = sorted((Path(p).name, r, s) for p, r, s in got)
    assert rel == [("a.py", "cuda-device", "error"), ("run.py", "host-sync-in-loop", "error")]
    assert res.suppressed == 2 and res.fail_on == "warning"
    assert not any("legacy" in f.path for f in res.findings)
    # without the table every finding is back
    plain = scan(root, config=ScanConfig())
    assert {f.rule for f in plain.findings} == {"cuda-device", "cuda-streams", "host-sync-in-loop"}
    assert sum(f.rule == "cuda-device" for f in plain.findings) == 3


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[tool.xlaport]\nignore = ["no-such-rule"]\n', "unknown rule 'no-such-rule'"),
        ("[tool.xlaport]\nfrobnicate = 1\n", "unknown key 'frobnicate'"),
        ('[tool.xlaport]\nfail-on = "fatal"\n', "fail-on must be one of"),
        ('[tool.xlaport.severity]\ncuda-device = "loud"\n', "must be one of error, warning, note"),
        ("[tool.xlaport\n", "not valid TOML"),
    ],
)
def test_bad_config_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], toml: str, message: str
) -> None:
    root = _project(tmp_path, toml)
    with pytest.raises(ValueError, match=message):
        load_config(root / "pyproject.toml")
    assert main(["scan", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message.split("'")[0] in err[0], err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["scan"], "give at least one file or folder"),
        (["scan", "/no/such/place"], "no such file or folder"),
        (["scan", ".", "--jobs", "0"], "--jobs must be"),
        (["scan", ".", "--max-file-size", "1.5"], "--max-file-size must be a whole number"),
        (["scan", ".", "--config", "/no/such.toml"], "no such config file"),
    ],
)
def test_bad_input_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_bad_choice_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["scan", ".", "--fail-on", "fatal"])
    assert e.value.code == 2


def test_exit_codes_follow_fail_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "w.py").write_text("for b in loader:\n    print(b.item())\n")  # one warning, no error
    assert main(["scan", str(tmp_path)]) == 0  # default: fail on errors only
    assert main(["scan", str(tmp_path), "--fail-on", "warning"]) == 1
    assert main(["scan", str(tmp_path), "--fail-on", "never"]) == 0
    (tmp_path / "w.py").write_text("x = 1\n")
    assert main(["scan", str(tmp_path), "--fail-on", "note"]) == 0
    capsys.readouterr()


# --------------------------------------------------------------------------- hostile trees
def test_hostile_files_become_findings_or_warnings(tmp_path: Path) -> None:
    (tmp_path / "py2.py").write_text("print 'old'\nexcept_ = 1\n")
    (tmp_path / "binary.py").write_bytes(b"\x7fELF\x00\x01\x02")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9t\xe9'\n")  # not UTF-8 and no coding cookie
    (tmp_path / "cookie.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9t\xe9'.cuda()\n")
    (tmp_path / "badcookie.py").write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    (tmp_path / "huge.py").write_text("x = 1\n" * 20000)
    (tmp_path / "deep.py").write_text("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    (tmp_path / "chain.py").write_text("x = " + " + ".join(["a"] * 20000) + "\n")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch\ntorch.cuda.synchronize()\n")
    os.symlink("selfloop.py", tmp_path / "selfloop.py")
    os.symlink("missing_target.py", tmp_path / "dangling.py")
    (tmp_path / "sub").mkdir()
    os.symlink("..", tmp_path / "sub" / "up")  # a folder loop
    os.mkfifo(tmp_path / "pipe.py")  # opening it would block forever
    res = scan(tmp_path, max_file_size=100_000, jobs=1)
    why = {w.path.rsplit("/", 1)[-1]: w.reason for w in res.warnings}
    assert "binary" in why["binary.py"]
    assert "not valid utf-8" in why["latin.py"]
    assert "encoding" in why["badcookie.py"]
    assert "limit" in why["huge.py"]
    assert "symlink loop" in why["selfloop.py"]
    assert "broken symlink" in why["dangling.py"]
    assert "already scanned" in why["up"]
    assert "not a regular file" in why["pipe.py"]
    rules = {(f.path.rsplit("/", 1)[-1], f.rule) for f in res.findings}
    py2 = next(f for f in res.findings if f.path.endswith("py2.py"))
    assert py2.rule == "syntax-error" and "Python 2" in py2.message and py2.severity == "note"
    assert ("deep.py", "syntax-error") in rules or "deep.py" in why  # the parser's own nesting limit
    assert "nested too deeply" in why["chain.py"]
    assert ("cookie.py", "cuda-device") in rules and ("bom.py", "cuda-api") in rules
    assert not res.internal_errors, res.internal_errors


def test_unreadable_file_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "secret.py").write_text("x = y.cuda()\n")
    (tmp_path / "ok.py").write_text("x = y.cuda()\n")
    real_open = open

    def fake_open(path: object, *a: object, **k: object) -> object:
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(scan_engine, "open", fake_open, raising=False)
    res = scan(tmp_path, jobs=1)
    assert [w.reason for w in res.warnings] == ["cannot read: Permission denied, not scanned"]
    assert [f.path.rsplit("/", 1)[-1] for f in res.findings] == ["ok.py"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_by_mode(tmp_path: Path) -> None:  # pragma: no cover - runs for non-root users
    p = tmp_path / "secret.py"
    p.write_text("x = 1\n")
    p.chmod(0)
    res = scan(tmp_path)
    assert res.warnings and "cannot read" in res.warnings[0].reason


def test_skipped_folders_and_excludes(tmp_path: Path) -> None:
    for d in (".git", ".venv", "__pycache__", "node_modules", "pkg"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "m.py").write_text("x = y.cuda()\n")
    res = scan(tmp_path)
    assert [f.path.split("/")[-2] for f in res.findings] == ["pkg"]


def test_parallel_scan_matches_serial(tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(_invalid("cuda-device") + _invalid("growing-cache") + f"# {i}\n")
    serial = scan(tmp_path, jobs=1)
    parallel = scan(tmp_path, jobs=2)
    assert parallel.jobs == 2 and serial.jobs == 1
    assert serial.findings == parallel.findings and len(serial.findings) == 40 * 3


def test_progress_bar_goes_to_the_given_stream(tmp_path: Path) -> None:
    import io

    (tmp_path / "a.py").write_text("x = 1\n")
    buf = io.StringIO()
    scan(tmp_path, progress=buf)
    assert "1/1 files" in buf.getvalue()
    quiet = io.StringIO()
    scan(tmp_path, progress=None)
    assert quiet.getvalue() == ""


# --------------------------------------------------------------------------- outputs
def _sample_result() -> object:
    return scan(SAMPLE)


def test_sample_project_findings() -> None:
    res = scan(SAMPLE)
    counts = res.counts()
    for rid in (
        "cuda-device",
        "cuda-api",
        "cuda-amp",
        "nccl-backend",
        "cuda-only-dependency",
        "triton-kernel",
        "dynamic-shape-op",
        "variable-length-batch",
        "host-sync-in-loop",
        "growing-cache",
        "view-offset-in-loop",
    ):
        assert counts.get(rid, 0) >= 1, f"sample project lost its {rid} finding: {counts}"
    assert not res.warnings and res.reaches("error") and not res.internal_errors


def _extras(model: object, path: str = "$") -> list[str]:
    """Properties the SARIF model did not recognise, anywhere in the tree (misspelt keys land here)."""
    from pydantic import BaseModel

    out: list[str] = []
    if isinstance(model, BaseModel):
        for k in model.model_extra or {}:
            out.append(f"{path}.{k}")
        for name in type(model).model_fields:
            out += _extras(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list):
        for i, v in enumerate(model):
            out += _extras(v, f"{path}[{i}]")
    return out


def test_sarif_validates_with_sarif_pydantic(tmp_path: Path) -> None:
    from sarif_pydantic import Sarif
    from sarif_pydantic.sarif import Notification

    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "a.py").write_text(_invalid("cuda-amp") + _invalid("triton-kernel"))
    (tmp_path / "proj" / "bin.py").write_bytes(b"\x00\x01")
    out = tmp_path / "out.sarif"
    assert main(["scan", str(tmp_path / "proj"), "--format", "sarif", "-o", str(out), "--fail-on", "never"]) == 0
    raw = json.loads(out.read_text())
    log = Sarif.model_validate(raw)
    assert log.version == "2.1.0" and raw["$schema"].endswith("sarif-2.1.0.json")
    run = log.runs[0]
    rules = run.tool.driver.rules or []
    assert [r.id for r in rules] == [r.id for r in RULES]
    results = run.results or []
    assert {r.rule_id for r in results} == {"cuda-amp", "triton-kernel", "cuda-only-dependency"}
    for r in results:
        assert (
            rules[r.rule_index].id == r.rule_id
            and r.level is not None
            and r.level.value in ("error", "warning", "note")
        )
        loc = r.locations[0].physical_location
        assert loc.region.start_line >= 1 and loc.region.start_column >= 1 and loc.artifact_location.uri.endswith(".py")
    # toolExecutionNotifications is SARIF 2.1.0 (invocation object) but missing from sarif-pydantic's model:
    # check its entries with the library's Notification model, and allow that one extra key only.
    notes = raw["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [Notification.model_validate(n).message.text for n in notes] == [
        "binary file (contains NUL bytes), not scanned"
    ]
    assert _extras(log) == ["$.runs[0].invocations[0].toolExecutionNotifications"]


def test_json_and_markdown_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(SAMPLE), "--format", "json", "--fail-on", "never"]) == 0
    data = json.loads(capsys.readouterr().out)
    res = scan(SAMPLE)
    assert data["summary"] == res.counts() and len(data["findings"]) == len(res.findings)
    assert set(data["rules"]) == set(res.counts())
    f0 = data["findings"][0]
    assert {"rule", "severity", "path", "line", "col", "message", "fix", "chapter"} <= set(f0)
    md = to_markdown(res)
    assert md.startswith("# xlaport scan") and "| `triton-kernel` | error | 1 |" in md
    assert all(line.count("|") >= 6 for line in md.splitlines() if line.startswith("| `"))


def test_table_and_rules_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(SAMPLE / "tinylm.py")]) == 0
    out = capsys.readouterr().out
    assert "[dynamic-shape-op]" in out and "1 finding" in out and "in 1 file," in out
    assert pages.title("notebooks/op_fallbacks") in out and "notebooks/op_fallbacks" not in out  # titles, not paths
    assert main(["scan", "--rules"]) == 0
    listing = capsys.readouterr().out
    assert all(r.id in listing for r in RULES)


def test_scan_cli_never_imports_torch(fresh_python: Runner) -> None:
    code = f"""
        import contextlib, io, sys
        from xlaport.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(["scan", {str(SAMPLE)!r}, "--format", "sarif"])
        assert rc == 1, rc
        torchy = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        assert not torchy, torchy[:5]
        print("clean")
    """
    assert "clean" in fresh_python(code).stdout


def test_scan_source_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="string of Python source"):
        scan_source(b"x = 1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown rule"):
        rule("nope")


def test_snippets_and_positions() -> None:
    code = textwrap.dedent(
        """\
        import torch
        def step(x):
            return x.cuda()
        """
    )
    (f,) = scan_source(code)
    assert (f.line, f.col, f.snippet) == (3, 12, "return x.cuda()")
    assert sys.version_info >= (3, 11)
