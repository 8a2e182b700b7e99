"""The scanner's table of what torch.cuda calls do on a host without CUDA, checked against the installed torch."""

from __future__ import annotations

import warnings

import pytest

from xlaport.scan.rules.cuda_api import CUDA_ON_HOST, cuda_on_host

torch = pytest.importorskip("torch")

CALLS = {
    "is_available": lambda: torch.cuda.is_available(),
    "device_count": lambda: torch.cuda.device_count(),
    "is_bf16_supported": lambda: torch.cuda.is_bf16_supported(),
    "empty_cache": lambda: torch.cuda.empty_cache(),
    "manual_seed": lambda: torch.cuda.manual_seed(0),
    "manual_seed_all": lambda: torch.cuda.manual_seed_all(0),
    "memory_allocated": lambda: torch.cuda.memory_allocated(),
    "max_memory_allocated": lambda: torch.cuda.max_memory_allocated(),
}
RAISES = {
    "set_device": lambda: torch.cuda.set_device(0),
    "synchronize": lambda: torch.cuda.synchronize(),
    "current_device": lambda: torch.cuda.current_device(),
    "get_device_properties": lambda: torch.cuda.get_device_properties(0),
    "Stream": lambda: torch.cuda.Stream(),
    "Event.record": lambda: torch.cuda.Event(enable_timing=True).record(),
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="describes a host without a CUDA device")
def test_table_matches_torch_on_a_host_without_cuda() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {name: call() for name, call in CALLS.items()}
        for name, call in RAISES.items():
            with pytest.raises(Exception):  # noqa: B017 (RuntimeError or AcceleratorError, by build)
                call()
            if "." not in name and name != "Stream":
                assert cuda_on_host(f"torch.cuda.{name}", True)[0].startswith("raises")
    assert results["is_available"] is False and "returns False" in CUDA_ON_HOST["is_available"][0]
    assert results["is_bf16_supported"] is False and "returns False" in CUDA_ON_HOST["is_bf16_supported"][0]
    for name in ("device_count", "memory_allocated", "max_memory_allocated"):
        assert results[name] == 0 and "returns 0" in CUDA_ON_HOST[name][0], name
    for name in ("empty_cache", "manual_seed", "manual_seed_all"):
        assert results[name] is None and "does nothing" in CUDA_ON_HOST[name][0], name


def test_stream_messages_match() -> None:
    from xlaport.scan import scan_source

    (ev,) = scan_source("import torch\ne = torch.cuda.Event()\n")
    (st,) = scan_source("import torch\ns = torch.cuda.Stream()\n")
    assert "`record()` raises there" in ev.message and "raises there" in st.message


def test_every_finding_says_what_happens_there() -> None:
    from xlaport.scan import scan_source

    src = (
        "import torch, flash_attn\n"
        "assert torch.cuda.is_available()\n"
        "x = torch.zeros(1).cuda()\n"
        "torch.distributed.init_process_group('nccl')\n"
        "s = torch.cuda.amp.GradScaler()\n"
        "for b in loader:\n"
        "    print(b.sum().item())\n"
    )
    found = scan_source(src)
    assert {f.rule for f in found} >= {"cuda-api", "cuda-device", "nccl-backend", "cuda-amp", "host-sync-in-loop"}
    for f in found:
        assert " there" in f.message or "TPU" in f.message, f.message
        assert f.fix, f.rule
