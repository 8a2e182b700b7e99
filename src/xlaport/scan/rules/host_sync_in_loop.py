"""``host-sync-in-loop``: Host sync inside a loop.

`.item()`, `.tolist()`, `.numpy()`, `float/int/bool(tensor)` and `print(tensor)` inside a loop, and inside a
function or method that a loop over a data loader in the same file calls every step
(`self._train_batch(X, y)`). Reading a value that was copied to the host before the loop (by `.cpu()`,
`.to("cpu")` or NumPy) or made there (a torch factory given no device) waits for nothing and is not reported.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule
from ._common import _SYNC_BUILTINS, _SYNC_METHODS

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="host-sync-in-loop",
    title="Host sync inside a loop",
    severity="warning",
    category="host-sync",
    why="`.item()`, `.tolist()`, `.numpy()`, `float(t)` and `print(t)` wait for the device and copy to the host, once per iteration; on XLA each one also cuts the lazy graph.",
    fix="Keep values on the device inside the loop (stack losses, log every N steps) and read them once after it.",
    chapter="notebooks/01_first_steps",
    see_also=("notebooks/port_training",),
    position=12,
    invalid=(
        "import torch\nfor x in loader:\n    loss = model(x)\n    losses.append(loss.item())\n    print(loss)\n",
        "class M:\n    def fit(self, loader):\n        for X, y in loader:\n            self._step(X, y)\n\n    def _step(self, X, y):\n        return self.net(X).sum().item()\n",
    ),
    valid=(
        "import torch\nfor x in loader:\n    loss = model(x)\n    losses.append(loss.detach())\nprint(torch.stack(losses).tolist())\n",
        "import torch\nbuf = torch.zeros(4)\nfor i in range(4):\n    total = buf[i].item()\n",
    ),
)


@check(RULE.id, ast.Call, attrs={*_SYNC_METHODS, "print", *_SYNC_BUILTINS})
def host_sync_in_loop(w: Walker, node: ast.Call) -> None:
    if w.scope.loops <= 0 and not w.scope.per_iteration:
        return
    attr, fcls = w.attr, node.func.__class__
    if attr in _SYNC_METHODS and fcls is ast.Attribute and not node.args:
        since = w.host_since(node.func.value)  # type: ignore[attr-defined]
        if since is not None and since < w.scope.loops:
            return  # `e.numpy()` for `e` in `t.cpu()`: copied to the host before the loop, nothing to wait for
        where = "in a loop" if w.scope.loops > 0 else f"in a function the loop on line {w.scope.per_iteration} calls"
        w.hit(RULE.id, node, f"`.{attr}()` {where} waits for the device every iteration{_SYNC}")
    elif fcls is ast.Name and attr == "print":
        for a in node.args:
            if _prints_tensor(w, a):
                w.hit(
                    RULE.id,
                    node,
                    f"`print` of a tensor in a loop waits for the device every iteration{_SYNC}",
                    tensor_guess=True,
                )
                return
    elif fcls is ast.Name and attr in _SYNC_BUILTINS and len(node.args) == 1 and w.is_tensor(node.args[0]):
        w.hit(
            RULE.id,
            node,
            f"`{attr}(tensor)` in a loop waits for the device every iteration{_SYNC}",
            tensor_guess=True,
        )


_SYNC = "; on TPU/Trainium each one also cuts the lazily traced step in two"


def _prints_tensor(w: Walker, a: ast.AST) -> bool:
    if a.__class__ is ast.JoinedStr:
        return any(v.__class__ is ast.FormattedValue and w.is_tensor(v.value) for v in a.values)
    return w.is_tensor(a)
