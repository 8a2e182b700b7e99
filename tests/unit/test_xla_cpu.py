"""The emulator's XLA:CPU settings (xlaport.xla_cpu): PJRT_DEVICE=CPU and the fast-compile level, and the ways out."""

from __future__ import annotations

import pytest

from conftest import Runner
from xlaport import xla_cpu

FAST = xla_cpu.FAST_COMPILE_FLAG


def test_configure_sets_the_cpu_device_and_the_fast_compile_flag() -> None:
    env: dict[str, str] = {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}
    xla_cpu.configure(env)
    assert env == {"PJRT_DEVICE": "CPU", "XLA_FLAGS": f"--xla_dump_to=/tmp/x {FAST}"}
    xla_cpu.configure(env)  # twice: the flag once
    assert env["XLA_FLAGS"].split().count(FAST) == 1
    assert xla_cpu.describe(env) == "LLVM -O0"


def test_a_level_already_given_or_default_asked_for_is_left_alone() -> None:
    mine = {"XLA_FLAGS": "--xla_backend_optimization_level=2"}
    xla_cpu.configure(mine)
    assert mine["XLA_FLAGS"] == "--xla_backend_optimization_level=2"
    default = {xla_cpu.OPT_ENV: "default"}
    xla_cpu.configure(default)
    assert "XLA_FLAGS" not in default and xla_cpu.describe(default) == "XLA's default optimisation"


def test_another_device_gets_no_cpu_flags() -> None:
    tpu = {"PJRT_DEVICE": "TPU"}
    xla_cpu.configure(tpu)
    assert tpu == {"PJRT_DEVICE": "TPU"}


def test_a_bad_level_is_named_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"XLAPORT_XLA_CPU_OPT must be 'fast' or 'default', not 'O3'"):
        xla_cpu.configure({xla_cpu.OPT_ENV: "O3"})


def test_the_emulated_target_compiles_at_the_fast_level_and_says_so(fresh_python: Runner) -> None:
    """In a fresh process without the variables: the target sets the flag before torch_xla starts (which adds flags
    of its own) and the banner says so. That XLA honours it is measured by benchmarks/xla_cpu_opt_level.py."""
    out = fresh_python(
        """
        import xlaport
        t = xlaport.target("tpu")
        import os
        print(os.environ["XLA_FLAGS"]); print(t.banner().splitlines()[0])
        """,
        unset=["XLA_FLAGS", xla_cpu.OPT_ENV],
    ).stdout.splitlines()
    assert FAST in out[-2].split()
    assert "LLVM -O0" in out[-1]
