"""``variable-length-batch``: Batches padded to their longest.

Batches padded to their own longest: `pad_sequence`, and tokenizer calls with `padding=True` or
`padding="longest"`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="variable-length-batch",
    title="Batches padded to their longest",
    severity="warning",
    category="recompile",
    why='`pad_sequence` and tokenizers\' `padding=True`/`"longest"` give every batch its own length: one new program per length on TPU/Trainium.',
    fix="Pad to a few bucket lengths (`xlaport.recompile.buckets`) or to one maximum length, with the mask.",
    chapter="notebooks/recompile_storms",
    see_also=(),
    position=11,
    invalid=(
        "from torch.nn.utils.rnn import (\n    pad_sequence)\nb = pad_sequence(docs, batch_first=True)\nenc = tok(texts, padding=True)\n",
    ),
    valid=("enc = tok(texts,\n          padding='max_length',\n          max_length=128)\n",),
)


@check(RULE.id, ast.Call)
def variable_length_batch(w: Walker, node: ast.Call) -> None:
    if w.attr == "pad_sequence" and not any(k.arg in ("padding_side",) for k in node.keywords):
        w.hit(
            RULE.id,
            node,
            "`pad_sequence` pads to the longest in each batch: on TPU/Trainium one new compiled program per length",
        )
    for k in node.keywords:
        v = k.value
        if k.arg == "padding" and isinstance(v, ast.Constant) and (v.value is True or v.value == "longest"):
            w.hit(
                RULE.id,
                v,
                f"padding={v.value!r} pads to the longest in each batch: on TPU/Trainium one new compiled program per length",
            )
