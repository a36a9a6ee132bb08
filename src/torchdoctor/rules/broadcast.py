"""A broadcast that builds a tensor many times larger than its inputs, and the step's time spent on
it: `((x[:, None] - y[None]) ** 2).sum(-1)` for a distance matrix, an outer product by
broadcasting, a similarity computed element by element. Each operator that follows runs over the
whole broadcast tensor, memory-bound, where a matrix product (`torch.cdist`, `x @ y.T`,
`torch.einsum`) computes the same result without it. Read from the operator-costs probe's groups
(their recorded input shapes): the speed-of-light accounting cannot see it, since each of those
operators runs as fast as a healthy step runs it; the waste is that the tensor exists at all.
"""

from __future__ import annotations

import math
import re
from typing import Any

from torchdoctor.finding import Fix
from torchdoctor.probe_values import OP_COSTS
from torchdoctor.rules.base import Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence

#: The broadcast's output over its largest input, and its elements, from which it counts.
BLOW_UP, MIN_ELEMENTS = 16, 2**20
WARNING, PROBLEM = 0.10, 0.25
_SHAPE = re.compile(r"\[([\d, ]*)\]")


@rule("TD-COMP-047", "compute")
def broadcast_blow_up(ev: Evidence) -> Hit | None:
    """An operator of the profiled steps broadcasts its inputs into a tensor 16 or more times larger
    than the largest of them and of at least 2^20 elements (its recorded input shapes, aligned from
    the right, 1s stretched), and the operator groups working on tensors of that shape (the
    broadcast and what follows it, forward and backward) take 10% of the step or more. Upside:
    their share of the step beyond what the same work on the inputs' size takes (x (1 - 1/blow-up));
    a warning from 10%, a problem from 25%. PyTorch docs "Broadcasting semantics", `torch.cdist`."""
    costs = OP_COSTS.of(ev.record)
    if not costs or not costs.get("complete"):
        raise MissingEvidence("probes.op_costs")
    ops, step = costs.get("ops") or [], float(costs.get("step_s") or 0.0)
    found = max((b for b in map(_broadcast, ops) if b is not None), key=lambda b: math.prod(b[1]), default=None)
    if found is None or step <= 0:
        return None
    op, shape, largest = found
    on_it = [op] + [o for o in ops if o is not op and _shapes(str(o.get("shapes")))[:1] == [shape]]
    share = min(1.0, sum(float(o.get("self_s") or 0.0) for o in on_it) / step)
    blow_up = math.prod(shape) / largest
    upside = share * (1 - 1 / blow_up)
    severity = severity_at(upside, WARNING, PROBLEM)
    if severity is None:
        return None
    where = f" at {op['source']}" if op.get("source") else ""
    evidence = {"operator": op.get("name"), "input_shapes": op.get("shapes"), "broadcast_shape": shape,
                "blow_up": round(blow_up, 1), "operators_on_it": [o.get("name") for o in on_it][:8],
                "share_fraction": round(share, 4), "source": op.get("source")}
    return Hit(severity, f"a broadcast builds a {_count(shape)}-element tensor, {blow_up:.0f}x its inputs"
               f"{where}: {share:.0%} of the step works on it", upside, evidence,
               f"{op.get('name')} on {op.get('shapes')} broadcasts to {shape}; every operator after it "
               "(and its backward) reads and writes the whole broadcast tensor, memory-bound, where a matrix "
               "product or a reduction before the expansion computes the same result on the inputs' size.",
               Fix("Compute the result without materialising the broadcast: `torch.cdist` for pairwise "
                   "distances, a matrix product (`x @ y.T`, `torch.einsum`) for pairwise dot products or "
                   "similarities, or reduce before you expand.",
                   "dist = torch.cdist(x, y) ** 2  # was ((x[:, None] - y[None]) ** 2).sum(-1)"))


def _broadcast(op: dict[str, Any]) -> tuple[dict[str, Any], list[int], int] | None:
    """(op, its broadcast output's shape, its largest input's elements) where the output is BLOW_UP
    times the largest input or more and MIN_ELEMENTS or more; else None."""
    shapes = _shapes(str(op.get("shapes")))
    if len(shapes) < 2 or not all(shapes):
        return None
    rank = max(len(s) for s in shapes)
    padded = [[1] * (rank - len(s)) + s for s in shapes]
    if any(len({d for d in dims if d != 1}) > 1 for dims in zip(*padded)):
        return None  # not a valid broadcast (the record is of something else)
    out = [max(dims) for dims in zip(*padded)]
    largest = max(math.prod(s) for s in shapes)
    elements = math.prod(out)
    return (op, out, largest) if elements >= MIN_ELEMENTS and elements >= BLOW_UP * largest else None


def _shapes(text: str) -> list[list[int]]:
    """The shapes of a group's `shapes` string ("[128, 1, 128]x[1, 256, 128]")."""
    return [[int(d) for d in m.split(",") if d.strip()] for m in _SHAPE.findall(text)]


def _count(shape: list[int]) -> str:
    return f"{math.prod(shape):,}"
