"""The curriculum's sessions as data (torch-free): which chapters a session covers, what it needs, what its
discussion should settle. The site build renders the curriculum page from it (``_ext/xlaport_site/curriculum.py``),
and ``xlaport learn start --session N`` copies a session's chapters for a learner."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SESSIONS", "Session", "session"]


@dataclass(frozen=True)
class Session:
    title: str
    pages: tuple[str, ...]  # "notebooks/<stem>" or "book/<page>"
    prerequisites: tuple[int, ...]
    settles: str  # what the discussion should settle

    @property
    def chapters(self) -> tuple[str, ...]:
        """The notebook stems of the session's executable chapters, in order."""
        return tuple(p.split("/", 1)[1] for p in self.pages if p.startswith("notebooks/"))


SESSIONS: tuple[Session, ...] = (
    Session(
        "Where execution happens",
        ("book/what_changed", "notebooks/01_first_steps"),
        (),
        "Where does our training loop read values back to the host, and which input shapes does it see?",
    ),
    Session(
        "The walk: training and inference",
        ("book/the_walk", "notebooks/port_training", "notebooks/port_inference"),
        (1,),
        "Which of our loops need a static cache or `drop_last`, and who owns the portable checkpoint format?",
    ),
    Session(
        "Shapes and views",
        ("notebooks/recompile_storms", "notebooks/sd3_view_offsets"),
        (2,),
        "Our bucket list and compile budget, and which per-step views in our loops must become clones or host values.",
    ),
    Session(
        "Ops, numerics and kernels",
        ("notebooks/op_fallbacks", "notebooks/attention_numerics", "notebooks/custom_kernels"),
        (2,),
        "Which ops raise on each target, which attention blocks need a rewrite, and which kernels we port or drop.",
    ),
    Session(
        "Beyond the forward pass and scale",
        ("notebooks/beyond_forward", "notebooks/distributed"),
        (3, 4),
        "Pack or bucket our training data (and at what row length), the matmul precision our equivalence tests run "
        "at, which tied weights to re-tie, and how many chips FSDP needs once our stream code is deleted.",
    ),
    Session(
        "Memory, profiles, data and checkpoints",
        ("notebooks/memory_fit", "notebooks/profiling", "notebooks/input_pipelines", "notebooks/checkpoints"),
        (2,),
        "Whether our step fits a chip's HBM and which fix comes first, where a profile says our step's time goes, how "
        "many loader workers keep our device busy, and how our checkpoints reshard across hosts.",
    ),
    Session(
        "The workloads: fine-tuning, serving, quantized inference",
        ("notebooks/fine_tuning", "notebooks/serving", "notebooks/quantized_inference"),
        (3, 6),
        "Which of our fine-tuning runs are LoRA and how we pad them, the slots, longest sequence and buckets our "
        "server compiles at warm-up, and which weights we serve in int8 or fp8.",
    ),
    Session(
        "Audit and decide",
        (
            "notebooks/audit_your_code",
            "notebooks/predict_before_renting",
            "notebooks/pricing_math",
            "book/decision_brief",
        ),
        (3, 4, 5, 6),
        "The three numbers for our project (recompiles after warm-up, raising ops, break-even band) and a go/no-go.",
    ),
    Session(
        "Capstone",
        ("notebooks/capstone",),
        (8,),
        "What the port of the sample cost us, and the plan for our own project in the same four steps.",
    ),
)


def session(n: int) -> Session:
    """Session ``n`` (counted from 1), or a one-line ValueError."""
    if not isinstance(n, int) or not 1 <= n <= len(SESSIONS):
        raise ValueError(f"there are sessions 1 to {len(SESSIONS)}, not {n!r}")
    return SESSIONS[n - 1]
