"""Rules on computations the script writes out by hand where torch has one operator, or one
argument, for them: a product with a diagonal matrix built from a vector, attention written as two
matrix products around a softmax, `nn.MultiheadAttention` asked for its weights, a convolution
through `unfold`, an embedding followed by a mean over the bag.

Each of these runs at full speed (a dense product is a dense product), so the speed-of-light
accounting finds nothing to say: the waste is in the form. What the rules rest on is what the
script called and which operators ran from the same function of the script (the operator-costs
probe's `script_calls` and its operators' `source`, `file:line (function)`): names and shapes,
which the machine's load does not change. The upside is estimated from the operators' share of the
profiled step.

Sources: the `torch.diag` docs and the PyTorch forums' "multiply by a diagonal matrix" threads
(broadcasting: `v[:, None] * M`), the `F.scaled_dot_product_attention` docs and tutorial ("fused
implementations ... Flash Attention ... memory-efficient attention"), the `nn.MultiheadAttention`
docs (`need_weights`: "Set need_weights=False to use the optimized scaled_dot_product_attention
and achieve the best performance"), the `nn.EmbeddingBag` docs ("more time and memory efficient
than using a chain of these operations"), `nn.Conv2d`/`F.unfold` docs.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from torchdoctor.probe_values import ScriptCall
from torchdoctor.rules.base import Fix, Hit, rule
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.host_calls import every_step, share_severity

REPORTED = 0.05
#: A square matrix built from a vector (`torch.diag(v)`, `torch.diag_embed(v)`).
DIAG_BUILDERS = frozenset({"diag", "Tensor.diag", "diag_embed", "Tensor.diag_embed", "diagflat", "Tensor.diagflat"})
MATMULS = frozenset({"aten::mm", "aten::bmm", "aten::matmul", "aten::addmm", "aten::baddbmm", "aten::einsum"})
SOFTMAX_CALLS = frozenset({"softmax", "Tensor.softmax", "torch.nn.functional.softmax"})
#: A fused attention operator: on the CPU as on a GPU, `scaled_dot_product_attention` and its kernels.
FUSED_ATTENTION = re.compile(
    r"^aten::_?(?:scaled_dot_product|native_multi_head_attention|flash_attention|efficient_attention)")
MHA, EMBEDDING = "nn.Module: MultiheadAttention", "nn.Module: Embedding"
REDUCTIONS = frozenset({"aten::mean", "aten::sum"})
UNFOLD = frozenset({"torch.nn.functional.unfold"})
_LINE = re.compile(r":\d+ \(")
_SHAPE = re.compile(r"\[([\d, ]*)\]")


def function_of(source: str | None) -> str:
    """`file (function)` of a `file:line (function)` source: the script's function, any line."""
    return _LINE.sub(" (", source or "")


def shapes_of(text: str | None) -> list[tuple[int, ...]]:
    """The operand shapes of an operator group's `shapes` text (`[128, 1024]x[1024, 1024]`)."""
    return [tuple(int(d) for d in dims.split(",") if d.strip()) for dims in _SHAPE.findall(text or "")]


def _every_step_calls(ev: Evidence, callees: frozenset[str]) -> list[ScriptCall]:
    """The script's calls of `callees` made at least once a profiled step, outside the data loading."""
    calls, _ = ev.script_calls()
    return [c for c in every_step(calls["calls"]) if c["callee"] in callees]


def _share(ops: Iterable[dict[str, Any]], step_s: float) -> float:
    return min(1.0, sum(float(op.get("self_s") or 0.0) for op in ops) / step_s)


def _square_operand(op: dict[str, Any]) -> int | None:
    """The side of a square 2-D operand of a matrix product, if it has one."""
    return next((shape[0] for shape in shapes_of(op.get("shapes")) if len(shape) == 2 and shape[0] == shape[1] > 1),
                None)


@rule("TD-COMP-055", "compute")
def diagonal_matrix_product(ev: Evidence) -> Hit | None:
    """A function of the script builds a diagonal matrix (`torch.diag(v)`, `diag_embed`) in every
    profiled step and a matrix product with a square operand runs from the same function: an n x n
    product (n^2 memory, n times the FLOPs) for what is a row or column scaling, `v[:, None] * M`
    or `M * v`. Upside, estimated: one such product per diagonal built (the mean time of a call of
    the function's costliest product with a square operand: `Q @ diag(w) @ Q.T` keeps one of its
    two) and the diagonals' own operators, as a share of the profiled step (the backward not
    counted)."""
    builders = _every_step_calls(ev, DIAG_BUILDERS)
    if not builders:
        return None
    ops, step_s = ev.profiled_ops()
    functions = {function_of(c["caller"]) for c in builders}
    products = [op for op in ops if op.get("name") in MATMULS and function_of(op.get("source")) in functions
                and _square_operand(op)]
    if not products:
        return None
    # the group that does a product's work (aten::mm under aten::matmul's own few microseconds)
    per_product = max(float(op.get("self_s") or 0.0) / max(1.0, float(op.get("count") or 1.0))
                      for op in products)
    built = sum(c["count"] for c in builders)
    diagonals = [op for op in ops if op.get("name", "").startswith("aten::diag")
                 and function_of(op.get("source")) in functions]
    share = min(1.0, min(built * per_product, sum(float(op.get("self_s") or 0.0) for op in products)) / step_s
                + _share(diagonals, step_s))
    if share < REPORTED:
        return None
    top = max(products, key=lambda op: float(op.get("self_s") or 0.0))
    n = _square_operand(top)
    caller = max(builders, key=lambda c: c["wall_s"])
    return Hit(share_severity(share), f"a product with a diagonal matrix in {caller['caller']}: "
               f"{top['name']} over a {n} x {n} matrix", share,
               {"callees": sorted({c["callee"] for c in builders}), "caller": caller["caller"],
                "diagonals_per_step": built, "operator": top["name"], "shapes": top.get("shapes"),
                "source": top.get("source"), "share_fraction": round(share, 4), "upside_basis": "estimated"},
               f"{caller['caller']} builds a diagonal matrix with {caller['callee']}() every step and multiplies by "
               f"it ({top['name']} {top.get('shapes')} at {top.get('source')}): a dense {n} x {n} product, "
               f"{n} times the arithmetic of scaling the rows or columns, and an {n} x {n} matrix written and "
               "read for a vector's worth of information.",
               Fix("Scale by the vector with broadcasting instead of building the diagonal matrix: diag(v) @ M is "
                   "v[:, None] * M, and M @ diag(v) is M * v (torch.einsum('i,ij->ij', v, M) says the same).",
                   "y = v[:, None] * x     # was torch.diag(v) @ x\n"
                   "z = x * v              # was x @ torch.diag(v)"))


def _out_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The output shape of a batched matrix product of two operands of 3 dims or more."""
    if len(shapes) < 2 or len(shapes[0]) < 3 or len(shapes[1]) < 3 or shapes[0][-1] != shapes[1][-2]:
        return None
    return (*shapes[0][:-1], shapes[1][-1])


def _score_products(mine: list[dict[str, Any]], ops: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(L, S) where a batched product from the function (`mine`) makes an L x S matrix that a softmax
    from the function reads and another batched product takes as its first operand (Q K^T, its
    softmax, then its product with V): the scores of attention written out. The second product is
    looked for among all of the step's operators (`ops`): a group of operators of one shape holds
    the forward's product and the backward's of the same shape under one source."""
    made = {out[-2:] for op in mine if op.get("name") in MATMULS
            for out in [_out_shape(shapes_of(op.get("shapes")))] if out}
    softmaxed = {s[-2:] for op in mine if "softmax" in (op.get("name") or "")
                 for s in shapes_of(op.get("shapes")) if len(s) >= 2}
    consumed = {shapes[0][-2:] for op in ops if op.get("name") in MATMULS
                for shapes in [shapes_of(op.get("shapes"))] if len(shapes) >= 2 and len(shapes[0]) >= 3}
    scores = made & softmaxed & consumed
    return max(scores, key=lambda ls: ls[0] * ls[1]) if scores else None


def _on_scores(ops: list[dict[str, Any]], scores: tuple[int, int]) -> list[dict[str, Any]]:
    """The operators over the L x S score matrix other than the products: the scaling, the mask, the
    softmax, the dropout and the weights' average, which a fused attention kernel never writes out."""
    return [op for op in ops if op.get("name") not in MATMULS
            and any(len(s) >= 2 and s[-2:] == scores for s in shapes_of(op.get("shapes")))]

ATTENTION_FIX = Fix("Call F.scaled_dot_product_attention(q, k, v, attn_mask=..., dropout_p=..., is_causal=...): one "
                    "fused operator (Flash or memory-efficient attention where the device has them) that never "
                    "writes the score matrix out, forward or backward. With nn.MultiheadAttention, pass "
                    "need_weights=False unless the weights are used.",
                    "out = F.scaled_dot_product_attention(q, k, v)\n"
                    "# was: torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1) @ v\n"
                    "out, _ = self.attn(x, x, x, need_weights=False)")


@rule("TD-COMP-057", "compute")
def attention_written_out(ev: Evidence) -> Hit | None:
    """A function of the script calls a softmax in every profiled step between two batched matrix
    products chained through an L x S matrix (`softmax(q @ k.transpose(-2, -1) / scale) @ v`):
    attention written out, which materialises the scores and their softmax (and keeps them for the
    backward) where `F.scaled_dot_product_attention` runs one fused kernel. Upside, estimated: the
    share of the function's operators over the score matrix other than the products (the scaling,
    the mask, the softmax: what the fused kernel never writes out; the fused kernel's own cost is not
    known before it runs, so the products are not counted)."""
    softmaxes = _every_step_calls(ev, SOFTMAX_CALLS)
    softmaxes = [c for c in softmaxes if c["in_model"]]
    if not softmaxes:
        return None
    ops, step_s = ev.profiled_ops()
    for call in sorted(softmaxes, key=lambda c: -c["wall_s"]):
        function = function_of(call["caller"])
        mine = [op for op in ops if function_of(op.get("source")) == function]
        scores = _score_products(mine, ops)
        if scores is None or any(FUSED_ATTENTION.match(op.get("name") or "") for op in mine):
            continue
        around = _on_scores(mine, scores)
        share = _share(around, step_s)
        if share < REPORTED:
            continue
        return Hit(share_severity(share), f"attention written out in {call['caller']}: a softmax over "
                   f"{scores[0]} x {scores[1]} scores between two matrix products", share,
                   {"caller": call["caller"], "scores": list(scores),
                    "operators": sorted({op["name"] for op in around}), "share_fraction": round(share, 4),
                    "upside_basis": "estimated"},
                   f"{call['caller']} computes attention by hand: a product for the {scores[0]} x {scores[1]} "
                   "scores, their scaling and softmax, and a second product with the values. Each writes and "
                   "reads the whole score matrix, and autograd keeps it for the backward, where "
                   "scaled_dot_product_attention computes the same result in one fused operator.", ATTENTION_FIX)
    return None


@rule("TD-COMP-058", "compute")
def attention_weights_returned(ev: Evidence) -> Hit | None:
    """`nn.MultiheadAttention` runs in every profiled step with `need_weights=True` (its default):
    it then computes the attention through its weights (products, a softmax, the heads' average)
    instead of `scaled_dot_product_attention`, which it calls when `need_weights=False`; no fused
    attention operator runs from the line that calls it. Upside, estimated: the share of the
    operators over the score matrix other than the products, from that line."""
    modules = _every_step_calls(ev, frozenset({MHA}))
    if not modules:
        return None
    ops, step_s = ev.profiled_ops()
    for call in sorted(modules, key=lambda c: -c["wall_s"]):
        mine = [op for op in ops if op.get("source") == call["caller"]]
        if any(FUSED_ATTENTION.match(op.get("name") or "") for op in mine):
            continue
        scores = _score_products(mine, ops)
        if scores is None:
            continue
        around = _on_scores(mine, scores)
        share = _share(around, step_s)
        if share < REPORTED:
            continue
        return Hit(share_severity(share), f"nn.MultiheadAttention returns its attention weights in {call['caller']} "
                   "(need_weights=True)", share,
                   {"caller": call["caller"], "scores": list(scores),
                    "operators": sorted({op["name"] for op in around}), "share_fraction": round(share, 4),
                    "upside_basis": "estimated"},
                   f"{call['caller']} calls nn.MultiheadAttention with need_weights left at its default, True: "
                   "to return the attention weights it computes the scores, their softmax and their average "
                   "over the heads explicitly, instead of the fused scaled_dot_product_attention it uses when "
                   "the weights are not asked for; the weights are often discarded (out, _ = attn(...)).",
                   ATTENTION_FIX)
    return None


@rule("TD-COMP-059", "compute")
def embedding_then_reduced(ev: Evidence) -> Hit | None:
    """A function of the script looks up an `nn.Embedding` in every profiled step and reduces the
    looked-up rows over the bag (`emb(tokens).mean(1)`, `.sum(1)`): the (batch, bag, dim) rows are
    written out, reduced, and their gradient written back row by row, where `nn.EmbeddingBag` sums or
    averages each bag as it reads it. Upside, estimated: the lookups' and the reduction's share of the
    profiled step (the backward not counted)."""
    lookups = [c for c in _every_step_calls(ev, frozenset({EMBEDDING})) if c["in_model"]]
    if not lookups:
        return None
    ops, step_s = ev.profiled_ops()
    for call in sorted(lookups, key=lambda c: -c["wall_s"]):
        function = function_of(call["caller"])
        mine = [op for op in ops if function_of(op.get("source")) == function]
        looked_up = {_embedding_output(op) for op in mine if op.get("name") == "aten::embedding"} - {None}
        reduced = [op for op in mine if op.get("name") in REDUCTIONS
                   and any(shape in looked_up for shape in shapes_of(op.get("shapes")))]
        if not reduced:
            continue
        lookup_ops = [op for op in mine if op.get("name") in ("aten::embedding", "aten::index_select")]
        share = _share(reduced + lookup_ops, step_s)
        if share < REPORTED:
            continue
        shape = next(s for op in reduced for s in shapes_of(op.get("shapes")) if s in looked_up)
        how = "mean" if any(op["name"] == "aten::mean" for op in reduced) else "sum"
        return Hit(share_severity(share), f"embedding rows looked up, then reduced, in {call['caller']}: "
                   f"an nn.EmbeddingBag's work in two operators", share,
                   {"caller": call["caller"], "looked_up": list(shape), "reduction": how,
                    "share_fraction": round(share, 4), "upside_basis": "estimated"},
                   f"{call['caller']} looks up {shape[0]} x {shape[1]} embedding rows of {shape[2]} every step and "
                   f"then takes their {how} over the bag: the looked-up rows are written out as a "
                   f"{' x '.join(map(str, shape))} tensor, reduced, and their gradient scattered back row by row.",
                   Fix(f"Use nn.EmbeddingBag(num_embeddings, dim, mode=\"{how}\"): it reduces each bag as it reads "
                       "the rows, never writing out the looked-up rows (per_sample_weights and offsets cover "
                       "weighted and ragged bags; with padding_idx it leaves the padding out of a mean, where "
                       "Embedding(...).mean(1) counted the padding's zero rows).",
                       f"self.emb = nn.EmbeddingBag(vocab, dim, mode=\"{how}\")\n"
                       f"x = self.emb(tokens)     # was nn.Embedding(vocab, dim)(tokens).{how}(1)"))
    return None


def _embedding_output(op: dict[str, Any]) -> tuple[int, ...] | None:
    """The shape `aten::embedding` (weight [V, D], indices [...]) returns: the indices' shape + (D,)."""
    shapes = shapes_of(op.get("shapes"))
    if len(shapes) < 2 or len(shapes[0]) != 2 or len(shapes[1]) < 2:
        return None
    return (*shapes[1], shapes[0][1])


@rule("TD-COMP-060", "compute")
def convolution_through_unfold(ev: Evidence) -> Hit | None:
    """A function of the script calls `F.unfold` in every profiled step inside the model and
    multiplies the unfolded patches by a weight (a matrix product from the same function): a
    convolution written as im2col and a product, whose patch matrix (kernel-size times the input)
    is written out and kept for the backward, where `F.conv2d`/`nn.Conv2d` run oneDNN's or cuDNN's
    convolution. Upside, estimated: the unfold's operators' share of the profiled step (their
    backward and the products not counted)."""
    unfolds = [c for c in _every_step_calls(ev, UNFOLD) if c["in_model"]]
    if not unfolds:
        return None
    ops, step_s = ev.profiled_ops()
    for call in sorted(unfolds, key=lambda c: -c["wall_s"]):
        function = function_of(call["caller"])
        mine = [op for op in ops if function_of(op.get("source")) == function]
        if not any(op.get("name") in MATMULS for op in mine):
            continue
        share = min(1.0, float(call.get("ops_s") or 0.0) / step_s)
        if share < REPORTED:
            continue
        return Hit(share_severity(share), f"a convolution through F.unfold and a matrix product in {call['caller']}",
                   share, {"caller": call["caller"], "calls_per_step": call["count"],
                           "share_fraction": round(share, 4), "upside_basis": "estimated"},
                   f"{call['caller']} unfolds its input into patches (F.unfold, im2col) {call['count']:.0f} time(s) a "
                   "step and multiplies them by a weight: a convolution, computed through a patch matrix "
                   "kernel-size times larger than the input, written out forward and kept for the backward.",
                   Fix("Call F.conv2d(x, weight, bias, padding=...) (or an nn.Conv2d) with the weight in its "
                       "(out, in, kh, kw) shape: the same result from the convolution kernels of oneDNN or "
                       "cuDNN, without the patch matrix.",
                       "out = F.conv2d(x, self.weight, self.bias, padding=1)\n"
                       "# was: (self.weight.flatten(1) @ F.unfold(x, 3, padding=1)).view(b, -1, h, w)"))
    return None
