"""What the script's gradients went to, read off its modules and optimizers at the end of the run.

Two facts the rules weigh (TD-COMP-041, TD-COMP-042), both cheap to read once outside the timed
steps (a pass over the parameters' flags, and one over each embedding table's gradient):
- gradients nobody uses: parameters of the script's outermost modules that require grad and hold a
  `.grad`, but that no optimizer the script stepped holds (a backbone meant to be frozen, or a whole
  module beside the trained one: a distillation teacher run with autograd on), while some parameter
  an optimizer does hold got a gradient too (so the backward reaches the optimized ones without
  them);
- embedding tables (`nn.Embedding`, `nn.EmbeddingBag`): their size, `sparse` flag, and how many of
  their rows hold a non-zero gradient (the rows the last steps touched, where the gradient is dense).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import torch

#: Embedding tables recorded per model, largest first.
MAX_TABLES = 8


def optimized_ids(optimizers: Iterable[torch.optim.Optimizer]) -> set[int]:
    """The ids of every parameter the optimizers' param groups hold."""
    return {id(p) for opt in optimizers for group in opt.param_groups for p in group["params"]}


def unused_gradients(modules: Iterable[torch.nn.Module], optimized: set[int]) -> list[torch.nn.Parameter]:
    """The parameters of `modules` that require grad and hold a gradient that no optimizer holds;
    empty unless some optimized parameter among them holds a gradient as well (else the script may
    update its parameters by hand, or the backward may reach none of the optimized ones). Read across
    all of the script's outermost modules, a module that no optimizer trains at all counts as much as
    a frozen part inside the trained one."""
    with_grad = {id(p): p for m in modules for p in m.parameters() if p.requires_grad and p.grad is not None}
    if not any(key in optimized for key in with_grad):
        return []
    return [p for key, p in with_grad.items() if key not in optimized]


def embedding_tables(module: torch.nn.Module, optimized: set[int]) -> list[dict[str, Any]]:
    """The embedding tables of `module`, largest first: `module` (its name in `module`), `type`,
    `num_embeddings`, `embedding_dim`, `sparse`, `dtype`, `optimized` (an optimizer holds its
    weight), `rows_with_grad` (rows whose dense gradient is non-zero; None without a dense one)."""
    tables = [(name, m) for name, m in module.named_modules()
              if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))]
    tables.sort(key=lambda item: -item[1].weight.numel())
    return [{"module": name, "type": type(m).__qualname__, "num_embeddings": m.num_embeddings,
             "embedding_dim": m.embedding_dim, "sparse": bool(m.sparse),
             "dtype": str(m.weight.dtype).removeprefix("torch."), "optimized": id(m.weight) in optimized,
             "rows_with_grad": _rows_with_grad(m.weight)} for name, m in tables[:MAX_TABLES]]


def _rows_with_grad(weight: torch.nn.Parameter) -> int | None:
    """The rows of `weight`'s dense gradient with a non-zero element (a reduction whose output is one
    value a row, so a large table's gradient is not copied); None without a dense 2-D gradient, or
    where the reduction fails (a sharded or meta tensor): a fact missing, never the run's Record."""
    grad = weight.grad
    if grad is None or grad.is_sparse or grad.dim() != 2:
        return None
    try:
        with torch.no_grad():
            return int(grad.any(dim=1).sum())
    except (RuntimeError, NotImplementedError):
        return None


def gradient_facts(module: torch.nn.Module, optimizers: list[torch.optim.Optimizer],
                   modules: Sequence[torch.nn.Module] = ()) -> dict[str, Any]:
    """`unused_grad_tensors` and `unused_grad_parameters` (`module`'s tensors and elements with
    gradients no optimizer uses, judged with the other outermost `modules`; None when the script
    stepped no optimizer) and `embeddings` (embedding_tables)."""
    optimized = optimized_ids(optimizers)
    unused = None
    if optimizers:
        nobody = {id(p) for p in unused_gradients([module, *modules], optimized)}
        unused = [p for p in module.parameters() if id(p) in nobody]
    return {"unused_grad_tensors": None if unused is None else len(unused),
            "unused_grad_parameters": None if unused is None else sum(p.numel() for p in unused),
            "embeddings": embedding_tables(module, optimized)}
