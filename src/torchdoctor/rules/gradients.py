"""Compute-layer rules about gradients the step computes for nothing: for parameters no optimizer
trains, and dense over a whole embedding table of which a step touches a few rows.

Sources: PyTorch docs "Autograd mechanics: excluding subgraphs from backward" (requires_grad_(False)
on a frozen part, torch.no_grad()), the transfer-learning tutorial ("Finetuning the ConvNet" /
"ConvNet as fixed feature extractor"); torch.nn.Embedding and EmbeddingBag ("sparse: if True,
gradient w.r.t. weight matrix will be a sparse tensor"; the optimizers that take sparse gradients:
SGD, SparseAdam, Adagrad).
"""

from __future__ import annotations

from typing import Any

from torchdoctor.environment import EmbeddingTable
from torchdoctor.probe_values import FREEZE, OP_COSTS
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.probed import measured_evidence, measured_phrase, no_clear_gain

#: Without the freeze probe: the weight gradient is one of a Linear's or convolution's two backward
#: products (the other is the input's), so the weight gradients are taken as half the backward.
WEIGHT_GRAD_SHARE = 0.5
#: A dense-gradient table whose gradient touched at most this share of its rows.
FEW_ROWS = 0.5
#: The claimed upside from which a rule reports, a warning, a problem.
REPORTED, WARNING, PROBLEM = 0.05, 0.10, 0.25


@rule("TD-COMP-042", "compute")
def gradients_nobody_uses(ev: Evidence) -> Hit | None:
    """Parameters that require grad hold a gradient at the end of the run, but no optimizer the
    script stepped holds them (`env.models[].unused_grad_parameters`, observe/gradients.py): the
    backward computes their gradients for nothing (a backbone meant to be frozen). Upside: what the
    freeze probe measured with exactly those parameters frozen against the script's steps (silent
    when not judged faster); without it, the backward's share x the unused parameters' share of the
    trainable ones x WEIGHT_GRAD_SHARE, marked "estimated"; reported from 5%."""
    models = ev.models()
    counts = [m.unused_grad_parameters for m in models if m.unused_grad_parameters is not None]
    if not counts:
        raise MissingEvidence("env.models[].unused_grad_parameters")
    unused, tensors = sum(counts), sum(m.unused_grad_tensors or 0 for m in models)
    if not unused:
        return None
    trainable = sum(m.num_trainable_parameters or 0 for m in models) or unused
    evidence: dict[str, Any] = {"unused_grad_tensors": tensors, "unused_grad_parameters": unused,
                                "trainable_parameters": trainable}
    probe = FREEZE.of(ev.record)
    if probe and probe.get("complete") and probe.get("speedup"):
        if no_clear_gain(probe):
            return None  # freezing them measured no clear gain in this run
        share = max(0.0, 1 - 1 / probe["speedup"])
        evidence.update(measured_evidence(probe))
        claim = f"With them frozen the step measured {measured_phrase(probe, 'alternating blocks frozen and not')}."
    else:
        backward = ev.summary("backward_fraction")
        share = backward * unused / trainable * WEIGHT_GRAD_SHARE
        evidence.update(backward_fraction=round(backward, 4), upside_basis="estimated")
        claim = (f"The backward takes {backward:.0%} of the step; their weight gradients are estimated at "
                 f"{WEIGHT_GRAD_SHARE:.0%} of its share for them (not measured).")
    if share < REPORTED:
        return None
    return Hit(severity_at(share, WARNING, PROBLEM) or "info",
               f"{tensors} parameter tensors ({unused:,} elements) get gradients no optimizer uses", share, evidence,
               f"{unused:,} of the {trainable:,} trainable parameters require grad and receive a gradient every "
               "backward, but no optimizer holds them: the backward computes (and keeps) those gradients for "
               "nothing, and before a frozen part at the input end, the gradients flowing through it too. " + claim,
               Fix("Freeze the part no optimizer trains (or run it without autograd).",
                   "for p in backbone.parameters():  # the parameters no optimizer holds\n"
                   "    p.requires_grad_(False)\n"
                   "# or: with torch.no_grad(): features = backbone(x)"))


@rule("TD-COMP-041", "compute")
def dense_embedding_gradients(ev: Evidence) -> Hit | None:
    """An embedding table with `sparse=False` that an optimizer trains, whose dense gradient touched
    at most FEW_ROWS of its rows (`env.models[].embeddings`), while operators over the whole table
    (the optimizer's update, the gradient's fill; the lookup itself left out) take time in the step
    (the operator-costs probe's groups whose input shapes include the table's). Upside: that time's
    share of the profiled step x (1 - the touched rows' share): with `sparse=True` and an optimizer
    that takes sparse gradients the update runs over the touched rows only; reported from 5%."""
    tables = [t for m in ev.models() for t in (m.embeddings or ())]
    if not tables:
        return None
    costs = OP_COSTS.of(ev.record)
    if not costs or not costs.get("complete") or not costs.get("step_s"):
        raise MissingEvidence("probes.op_costs")
    candidates = [(t, _table_share(t, costs)) for t in tables if _few_rows(t)]
    scored = [(t, share * (1 - (t.rows_with_grad or 0) / (t.num_embeddings or 1))) for t, share in candidates]
    if not scored:
        return None
    table, upside = max(scored, key=lambda item: item[1])
    if upside < REPORTED:
        return None
    rows, n, d = table.rows_with_grad or 0, table.num_embeddings or 0, table.embedding_dim or 0
    share = _table_share(table, costs)
    name = table.module or "the embedding"
    return Hit(severity_at(upside, WARNING, PROBLEM) or "info",
               f"dense gradients for a {n:,}-row embedding table of which {rows:,} rows were used", upside,
               {"module": table.module, "type": table.type, "num_embeddings": n, "embedding_dim": d,
                "rows_with_grad": rows, "whole_table_ops_fraction": round(share, 4), "upside_basis": "measured ops"},
               f"{table.type} {name!r} ({n:,} x {d}) has sparse=False, so every backward writes a gradient for all "
               f"{n:,} rows and the optimizer updates every row and its state; the last gradient had {rows:,} "
               f"non-zero rows. Operators over the whole table take {share:.0%} of the step.",
               Fix("Give the table sparse gradients and an optimizer that takes them (SparseAdam; SGD and Adagrad "
                   "also do), a dense optimizer for the rest.",
                   f"nn.{table.type or 'Embedding'}({n}, {d}, sparse=True)\n"
                   "sparse_opt = torch.optim.SparseAdam(list(table.parameters()), lr=1e-3)\n"
                   "dense_opt = torch.optim.Adam(other_parameters, lr=1e-3)  # step both"))


def _few_rows(table: EmbeddingTable) -> bool:
    """A dense-gradient table an optimizer trains, whose gradient touched at most FEW_ROWS of its rows."""
    if table.sparse or not table.optimized or table.rows_with_grad is None or not table.num_embeddings:
        return False
    return table.rows_with_grad <= FEW_ROWS * table.num_embeddings


def _table_share(table: EmbeddingTable, costs: dict[str, Any]) -> float:
    """The profiled step's share in operators with the whole table among their inputs, the lookups
    (operators named "embedding") left out."""
    shape = f"[{table.num_embeddings}, {table.embedding_dim}]"
    seconds = sum(float(op.get("self_s") or 0.0) for op in costs.get("ops") or []
                  if shape in str(op.get("shapes")) and "embedding" not in str(op.get("name")).lower())
    return min(1.0, seconds / float(costs["step_s"]))
