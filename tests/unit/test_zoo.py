"""The model zoo: every config builds offline, inputs are what the sweep counts, bad input is one line, and the
sweep's records hold together (on the CPU here; on the emulated tpu in a fresh interpreter)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from conftest import Runner
from xlaport.cli import main
from xlaport.zoo import FAMILIES, REGISTRY, SweepConfig, SweepResult, draw_lengths, get, names, parse_overrides, sweep
from xlaport.zoo.sweep import init_optimizer_state


def test_registry_covers_the_families() -> None:
    assert len(REGISTRY) >= 10
    assert {s.family for s in REGISTRY.values()} == set(FAMILIES)
    assert set(names("encoder-decoder")) == {"t5", "bart"}
    assert "whisper" in names("speech") and "vit" in names("vision") and len(names("moe")) >= 1


def test_no_network_while_building_every_model(fresh_python: Runner) -> None:
    """Sockets refuse to open and HF_HUB_OFFLINE=1: every model still builds and runs a forward pass."""
    code = """
        import socket
        attempts = []
        def refuse(*args, **kwargs):
            attempts.append(args[:2])
            raise OSError("network blocked by the test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        import torch
        from xlaport.zoo import REGISTRY
        for name, spec in REGISTRY.items():
            model = spec.build(seed=0)
            batch, useful = spec.batch([6, 9], generator=torch.Generator().manual_seed(0))
            out = model(**batch)
            assert torch.isfinite(out.loss), name
        assert not attempts, f"network attempts: {attempts}"
        print("built", len(REGISTRY))
    """
    out = fresh_python(code, env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}, timeout=300)
    assert f"built {len(REGISTRY)}" in out.stdout


@pytest.mark.parametrize("name", list(REGISTRY))
def test_each_config_builds_small(name: str) -> None:
    spec = get(name)
    model = spec.build(seed=0)
    n = sum(p.numel() for p in model.parameters())
    assert 10_000 < n < 1_000_000, f"{name}: {n} parameters is not a tiny model"
    assert spec.layers == 2
    assert spec.with_layers(1).layers == 1


def test_same_seed_same_weights() -> None:
    a, b = get("gpt2").build(seed=3), get("gpt2").build(seed=3)
    c = get("gpt2").build(seed=4)
    pa, pb, pc = (torch.cat([p.reshape(-1) for p in m.parameters()]) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)


def test_text_batches_pad_and_count_useful_tokens() -> None:
    batch, useful = get("llama").batch([5, 9], pad_to=12, generator=torch.Generator().manual_seed(0))
    assert batch["input_ids"].shape == (2, 12)
    assert useful == 14 == int(batch["attention_mask"].sum())
    assert (batch["labels"][0, 5:] == -100).all() and (batch["labels"][0, :5] >= 0).all()
    s2s, useful = get("t5").batch([8, 4], generator=torch.Generator().manual_seed(0))
    assert s2s["input_ids"].shape == (2, 8) and s2s["labels"].shape == (2, 4)
    assert useful == 8 + 4 + 4 + 2


def test_speech_keeps_the_encoder_window_and_images_change_resolution() -> None:
    spec = get("whisper")
    batch, useful = spec.batch([7, 11], generator=torch.Generator().manual_seed(0))
    assert batch["input_features"].shape[-1] == 2 * spec.config["max_source_positions"]
    assert useful == 18
    vit = get("vit").for_fixed_len(48)
    small, _ = vit.batch([9, 16], generator=torch.Generator().manual_seed(0))  # grid 4 -> 32 px
    fixed, useful = vit.batch([9, 16], pad_to=48, generator=torch.Generator().manual_seed(0))
    assert small["pixel_values"].shape[-1] == 32 and fixed["pixel_values"].shape[-1] == vit.config["image_size"] == 56
    assert useful == 9 + 16


def test_bad_names_and_configs_are_one_line_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown model 'gpt5'; choose from: llama") as e:
        get("gpt5")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="unknown family"):
        names("cnn")
    with pytest.raises(ValueError, match="has no field 'no_such_field'"):
        get("llama").with_overrides({"no_such_field": 1})
    with pytest.raises(ValueError, match="rejected the config") as e:
        get("llama").with_overrides({"hidden_size": 63}).build()
    assert "\n" not in str(e.value) and "multiple of the number of attention heads" in str(e.value)
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_overrides(["hidden_size"])
    assert parse_overrides(["a=1", "b=0.5", "c=true", "d=gelu", "e=none"]) == {
        "a": 1,
        "b": 0.5,
        "c": True,
        "d": "gelu",
        "e": None,
    }
    with pytest.raises(ValueError, match="lengths must be whole numbers >= 2"):
        get("llama").batch([1, 4])
    with pytest.raises(ValueError, match="shorter than the longest"):
        get("llama").batch([8, 4], pad_to=6)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["zoo", "--model", "gpt5"], "unknown model 'gpt5'"),
        (["zoo", "--steps", "2.5"], "--steps must be a whole number"),
        (["zoo", "--model", "llama", "--set", "hidden_size=63"], "rejected the config"),
        (["zoo", "--family", "cnn"], "unknown family 'cnn'"),
        (["zoo", "--set", "oops"], "KEY=VALUE"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_cli_list_needs_no_torch(fresh_python: Runner) -> None:
    code = """
        import contextlib, io, sys
        from xlaport.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["zoo", "--list"]) == 0
        assert "torch" not in sys.modules
        print(buf.getvalue())
    """
    out = fresh_python(code, timeout=60)
    for name in REGISTRY:
        assert name in out.stdout


def test_config_validation() -> None:
    cfg = SweepConfig(models=("llama",)).validated()
    assert cfg.targets == ("tpu",) and cfg.steps == 4
    assert SweepConfig().validated().models == names()
    for bad, message in [
        (dict(steps=0), "steps"),
        (dict(batch=1.5), "batch must be a whole number"),
        (dict(min_len=60), "min_len"),
        (dict(fixed_len=500), "at most 120"),
        (dict(cliff_ratio=2), "cliff_ratio"),
        (dict(targets=("gpu",)), "unknown target 'gpu'"),
        (dict(precision="fp8"), "unknown matmul precision"),
        (dict(models=("llama", "llama")), "listed twice"),
    ]:
        with pytest.raises(ValueError, match=message):
            SweepConfig(**bad).validated()  # type: ignore[arg-type]


def test_lengths_are_seeded_and_clipped() -> None:
    cfg = SweepConfig(steps=6, batch=3, min_len=8, fixed_len=40).validated()
    a, b = draw_lengths(cfg), draw_lengths(cfg)
    assert a == b and len(a) == 6 and all(len(x) == 3 for x in a)
    assert all(8 <= n <= 40 for x in a for n in x)
    assert draw_lengths(SweepConfig(seed=1, steps=6, batch=3).validated()) != draw_lengths(
        SweepConfig(seed=2, steps=6, batch=3).validated()
    )


def test_optimizer_state_created_up_front_matches_the_lazy_one() -> None:
    torch.manual_seed(0)
    a = torch.nn.Linear(4, 3)
    b = torch.nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    oa, ob = torch.optim.AdamW(a.parameters(), lr=0.1), torch.optim.AdamW(b.parameters(), lr=0.1)
    init_optimizer_state(ob)
    assert all(ob.state[p] for p in b.parameters()) and not oa.state
    x = torch.randn(5, 4)
    for m, o in ((a, oa), (b, ob)):
        for _ in range(3):
            o.zero_grad()
            m(x).pow(2).sum().backward()
            o.step()
    assert torch.equal(a.weight, b.weight)


def test_cpu_sweep_records_round_trip() -> None:
    """On the CPU (no torch_xla) the same weights give the same numbers: forward and training pass exactly."""
    result = sweep(SweepConfig(models=("llama", "bert"), targets=("cpu",), steps=2, layers=1))
    assert [r.model for r in result.results] == ["llama", "bert"]
    for r in result.results:
        assert r.forward.passed and r.forward.tol_needed == 0.0, r.forward
        assert r.train.passed, r.train.why
        assert r.precision is None and r.untied == 0
        assert r.fixed is not None and r.varied is not None and r.varied.useful == r.fixed.useful > 0
        assert r.varied.useful_share > r.fixed.useful_share  # padding to the longest item wastes less than to 48
    s = result.summary()["cpu"]
    assert s["models"] == 2 and s["forward_rate"] == s["train_rate"] == 1.0
    back = SweepResult.from_dict(json.loads(result.to_json()))
    assert back.summary() == result.summary()
    assert back.table() == result.table()
    assert "llama" in result.table() and "forward 2/2" in result.summary_text()


def test_sweep_on_emulated_tpu(fresh_python: Runner) -> None:
    """One model on the emulated tpu: the varied run compiles per new shape, the fixed one does not; the
    precision rule is on; a tied model's weights come apart in .to(device), which fails its training step."""
    code = """
        import json
        from xlaport.zoo import SweepConfig, sweep
        r = sweep(SweepConfig(models=("llama", "gpt2"), targets=("tpu",), steps=2, layers=1))
        out = {x.model: x.as_dict(0.5) for x in r.results}
        print(json.dumps(out))
    """
    res = json.loads(fresh_python(code, timeout=600, fork=True).stdout.strip().splitlines()[-1])
    llama, gpt2 = res["llama"], res["gpt2"]
    for r in (llama, gpt2):
        assert r["precision"] == "default"
        assert r["forward"]["passed"], r["forward"]
        assert r["fixed"]["compiles"] == 0, "the fixed-shape run compiled after its warm-up step"
        assert r["varied"]["compiles"] >= r["varied"]["distinct_shapes"] - 1 >= 1
        assert r["ratio"] < 0.5 and not r["no_cliff"]
        assert not r["forward"]["raises"] and not r["train"]["raises"]
    assert llama["train"]["passed"] and llama["untied"] == 0
    assert gpt2["untied"] == 1 and not gpt2["train"]["passed"] and "tie_weights" in gpt2["train"]["why"]
    # one bf16 pass: outside float32's tolerance, inside bfloat16's
    assert 1e-4 < llama["forward"]["tol_needed"] < 1e-2
    assert not math.isnan(llama["train"]["grad_rel_l2"])


def test_the_cliff_ratio_compares_cpu_time_where_both_runs_measured_it() -> None:
    from xlaport.zoo.results import ModelResult, RunResult

    # A busy machine stretched the fixed run's wall time (0.1 s of CPU waited 0.4 s); its CPU time is the fair price.
    fixed = RunResult(steps=2, wall_s=0.4, cpu_s=0.1, useful=100)
    varied = RunResult(steps=2, compiles=2, wall_s=1.0, cpu_s=1.0, useful=100)
    r = ModelResult("m", "f", "tpu", fixed=fixed, varied=varied)
    assert r.ratio == pytest.approx(0.1) and fixed.tokens_per_cpu_s == pytest.approx(1000)
    # a sweep recorded before CPU time was measured reads back with wall time
    old = ModelResult.from_dict({**r.as_dict(0.5), "fixed": {"wall_s": 0.4, "useful": 100}})
    assert old.fixed is not None and old.fixed.cpu_s is None and old.ratio == pytest.approx(0.4)
    assert math.isnan(RunResult(useful=1).tokens_per_cpu_s)
