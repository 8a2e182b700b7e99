"""SPMD on N emulated devices: the environment, the mesh, and where each parameter's shards live.

torch_xla's CPU client gives ``CPU_NUM_DEVICES`` devices, read once when its runtime starts, so a
process that wants 4 devices must have the variable set before torch_xla does anything: use
:func:`cpu_devices_env` for a fresh process (:mod:`xlaport.distributed.launch`). In that process::

    >>> from xlaport.distributed.mesh import spmd_mesh, shard_table
    >>> mesh = spmd_mesh(4)                       # xr.use_spmd(), a (4, 1) mesh named ("fsdp", "model")
    >>> model = SpmdFullyShardedDataParallel(model.to(torch_xla.device()))
    >>> for row in shard_table(model): print(row.name, row.spec, row.shard_shapes, row.bytes_per_device)

:func:`fsdp_bytes_per_device` is the same layout as arithmetic, for a model that is not built (how many chips
does FSDP need?).

``spmd_mesh`` and ``shard_table`` import torch_xla (which changes Dynamo's global config for the
whole process); :func:`cpu_devices_env` and :func:`mesh_shape` do not.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import validate, xla_cpu

__all__ = [
    "FSDP_AXES",
    "ShardInfo",
    "cpu_devices_env",
    "mesh_shape",
    "spmd_mesh",
    "shard_table",
    "fsdp_bytes_per_device",
    "largest_parameter",
]

FSDP_AXES: tuple[str, str] = ("fsdp", "model")  # SpmdFullyShardedDataParallel shards over the axis named "fsdp"


def cpu_devices_env(n: int) -> dict[str, str]:
    """Environment for a fresh process whose torch_xla should see ``n`` CPU devices."""
    n = validate.integer("n", n, minimum=1)
    env = {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": str(n)}
    flags = xla_cpu.with_fast_compile(os.environ.get("XLA_FLAGS", ""), os.environ.get(xla_cpu.OPT_ENV))
    return {**env, "XLA_FLAGS": flags} if flags else env


def mesh_shape(n_devices: int, shape: Sequence[int] | None = None, axes: Sequence[str] = FSDP_AXES) -> tuple[int, ...]:
    """Check a mesh shape against the device count and axis names; default ``(n_devices, 1, ...)``."""
    n = validate.integer("n_devices", n_devices, minimum=1)
    axes = tuple(axes)
    if not axes or len(set(axes)) != len(axes) or not all(isinstance(a, str) and a for a in axes):
        raise ValueError(f"axes must be distinct non-empty names, got {axes!r}")
    dims = (
        (n,) + (1,) * (len(axes) - 1)
        if shape is None
        else tuple(validate.integer("mesh dim", d, minimum=1) for d in shape)
    )
    if len(dims) != len(axes):
        raise ValueError(f"mesh shape {dims} has {len(dims)} dims but {len(axes)} axis names {axes}")
    if math.prod(dims) != n:
        raise ValueError(f"mesh shape {dims} holds {math.prod(dims)} devices, but there are {n}")
    return dims


def spmd_mesh(n_devices: int | None = None, shape: Sequence[int] | None = None, axes: Sequence[str] = FSDP_AXES) -> Any:
    """Switch torch_xla to SPMD, build a mesh over its devices and make it the global mesh; returns the ``Mesh``.

    ``n_devices`` (optional) is the count the caller expects; a different count raises ``ValueError``
    naming ``CPU_NUM_DEVICES``, the usual cause being a variable set after torch_xla had started.
    """
    import numpy as np
    import torch_xla.distributed.spmd as xs
    import torch_xla.runtime as xr

    xr.use_spmd()
    count = xr.global_runtime_device_count()
    if n_devices is not None and validate.integer("n_devices", n_devices, minimum=1) != count:
        raise ValueError(
            f"torch_xla sees {count} device(s), not {n_devices}: on CPU set CPU_NUM_DEVICES={n_devices} and "
            "PJRT_DEVICE=CPU before torch_xla starts (in a fresh process, see cpu_devices_env)"
        )
    dims = mesh_shape(count, shape, axes)
    mesh = xs.Mesh(np.arange(count), dims, tuple(axes))
    xs.set_global_mesh(mesh)
    return mesh


@dataclass(frozen=True)
class ShardInfo:
    """Where one parameter lives on an SPMD mesh."""

    name: str
    shape: tuple[int, ...]  # the global (logical) shape
    spec: str  # XLA's sharding annotation, e.g. "{devices=[4,1]0,1,2,3}"
    shard_shapes: tuple[tuple[int, ...], ...]  # one per device, in device order
    bytes_per_device: tuple[int, ...]
    devices: tuple[str, ...]

    @property
    def full_bytes(self) -> int:
        return math.prod(self.shape) * (self.bytes_per_device[0] // max(1, math.prod(self.shard_shapes[0])))

    @property
    def sharded(self) -> bool:
        """True when every device holds a strict part of the parameter (not a replica)."""
        return len(self.shard_shapes) > 1 and all(math.prod(s) < math.prod(self.shape) for s in self.shard_shapes)


def shard_table(module: Any) -> list[ShardInfo]:
    """One :class:`ShardInfo` per parameter of ``module`` (on an XLA device, SPMD mode). Imports torch_xla."""
    import torch_xla
    import torch_xla.distributed.spmd as xs

    rows = []
    for name, p in module.named_parameters():
        if p.device.type != "xla":
            raise ValueError(f"parameter {name!r} is on {p.device}, not an XLA device: move the module first")
        spec = torch_xla._XLAC._get_xla_sharding_spec(p) or "{replicated}"
        wrapped = xs.wrap_if_sharded(p)
        if hasattr(wrapped, "local_shards"):
            shards = sorted(wrapped.local_shards, key=lambda s: str(s.shard_device))
            shapes = tuple(tuple(s.data.shape) for s in shards)
            nbytes = tuple(s.data.numel() * s.data.element_size() for s in shards)
            devices = tuple(str(s.shard_device) for s in shards)
        else:  # not sharded: one full copy
            shapes, nbytes, devices = (tuple(p.shape),), (p.numel() * p.element_size(),), (str(p.device),)
        rows.append(ShardInfo(name, tuple(p.shape), spec, shapes, nbytes, devices))
    return rows


# --------------------------------------------------------------------------- the layout as arithmetic
def _dims(name: str, shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {name!r}: shape must be a sequence of whole numbers, got {shape!r}") from None
    if any(d < 1 for d in dims):
        raise ValueError(f"parameter {name!r}: dimensions must be positive, got {dims}")
    return dims


def fsdp_bytes_per_device(shapes: Mapping[str, Sequence[int]], n_devices: int, bytes_per_param: float = 4) -> float:
    """Bytes each device holds when FSDPv2 shards every parameter over ``n_devices`` along its largest dimension
    (torch_xla's ``shard_maximal``, what :func:`shard_table` reads from a built model), a shard being
    ``ceil(dim / n_devices)`` long; ``bytes_per_param`` per element (4 for float32 parameters; 16 with float32
    gradients and AdamW's two moments)."""
    n = validate.integer("n_devices", n_devices, minimum=1)
    total = 0
    for pname, shape in shapes.items():
        dims = list(_dims(pname, shape))
        if dims:
            at = dims.index(max(dims))
            dims[at] = -(-dims[at] // n)
        total += math.prod(dims)
    return total * validate.positive("bytes_per_param", bytes_per_param)


def largest_parameter(shapes: Mapping[str, Sequence[int]]) -> int:
    """Elements of the largest parameter: what FSDP gathers whole on every device before a layer uses it."""
    if not shapes:
        raise ValueError("no parameter shapes given")
    return max(math.prod(_dims(k, v)) for k, v in shapes.items())


def layout_table(shards: Sequence[Mapping[str, Any]], fsdp2: Mapping[str, Mapping[str, Any]]) -> str:
    """Each parameter's place under FSDP2 and FSDPv2, as a markdown table.

    ``shards``: one dict per parameter as the SPMD run reports it (``name``, ``shape``, ``spec``, ``shard_shapes``,
    ``bytes``: the fields of :class:`ShardInfo`); ``fsdp2``: rank 0's FSDP2 shard per parameter name (``type``,
    ``local``).
    """
    if not shards:
        raise ValueError("layout_table needs at least one parameter's shards")
    n = len(shards[0]["shard_shapes"])
    lines = [
        "| parameter | global shape | FSDP2: rank 0's `DTensor` shard | FSDPv2 sharding | "
        f"shard per device ({n} devices) | bytes per device |",
        "|---|---|---|---|---|---|",
    ]
    for s in shards:
        if s["name"] not in fsdp2:
            raise ValueError(f"layout_table: no FSDP2 shard for parameter {s['name']!r}")
        f2 = fsdp2[s["name"]]
        per_device = ", ".join(str(tuple(x)) for x in dict.fromkeys(map(tuple, s["shard_shapes"])))
        lines.append(
            f"| `{s['name']}` | {tuple(s['shape'])} | {f2['type']} {tuple(f2['local'])} | `{s['spec']}` | "
            f"{per_device} | {', '.join(map(str, s['bytes']))} |"
        )
    return "\n".join(lines)
