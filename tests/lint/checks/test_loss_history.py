"""TDL210 flags a loss summed across the training loop with its history, wherever the loop is,
and the hint it gives is right: the flagged sum keeps every step's graph, the advised one none."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.lint.files import write
from torchdoctor.lint import lint_paths

TRAIN = """\
def train(model, loader, optimizer):
    total = 0
    for x, y in loader:
        loss = model(x).sub(y).pow(2).mean()
        loss.backward()
        optimizer.step()
        total += loss
    return total / len(loader)
"""


def _lines(tmp_path: Path, text: str) -> list[int]:
    write(tmp_path, "train.py", text)
    report = lint_paths([tmp_path], select=["TDL210"])
    assert report.errors == ()
    return [v.line for v in report.violations]


def test_a_sum_in_a_training_function_is_flagged(tmp_path: Path) -> None:
    assert _lines(tmp_path, TRAIN) == [7]


def test_a_sum_backpropagated_after_the_loop_is_a_summed_loss_and_not_flagged(tmp_path: Path) -> None:
    text = TRAIN.replace("    return total / len(loader)\n", "    (total / len(loader)).backward()\n")
    assert _lines(tmp_path, text) == []


def _graph_nodes(total: torch.Tensor) -> int:
    """The autograd nodes reachable from `total`: what a sum with history keeps alive."""
    seen, stack = set(), [total.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and node not in seen:
            seen.add(node)
            stack.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


def _summed(detach: bool, steps: int) -> torch.Tensor:
    model = torch.nn.Linear(4, 1)
    total = torch.zeros(())
    for _ in range(steps):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        total += loss.detach() if detach else loss
    return total


def test_the_flagged_sum_keeps_every_steps_graph_and_the_advised_one_keeps_none() -> None:
    assert _graph_nodes(_summed(detach=False, steps=20)) > _graph_nodes(_summed(detach=False, steps=10)) > 10
    assert _summed(detach=True, steps=20).grad_fn is None
