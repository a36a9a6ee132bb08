"""What the script's gradients went to, read off real modules after real backward passes: the
gradients no optimizer holds, and each embedding table's size, flag and touched rows."""

from __future__ import annotations

import torch
from torch import nn

from torchdoctor.observe.gradients import embedding_tables, gradient_facts, optimized_ids, unused_gradients


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> None:
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()


def test_a_backbone_no_optimizer_holds_gets_gradients_nobody_uses() -> None:
    backbone, head = nn.Linear(8, 16), nn.Linear(16, 2)
    model = nn.Sequential(backbone, nn.ReLU(), head)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    _step(model, optimizer, torch.randn(4, 8))
    unused = unused_gradients([model], optimized_ids([optimizer]))
    assert {id(p) for p in unused} == {id(backbone.weight), id(backbone.bias)}
    facts = gradient_facts(model, [optimizer])
    assert facts["unused_grad_tensors"] == 2 and facts["unused_grad_parameters"] == 8 * 16 + 16


def test_a_frozen_backbone_and_a_model_without_an_optimizer_report_none() -> None:
    backbone, head = nn.Linear(8, 16), nn.Linear(16, 2)
    backbone.requires_grad_(False)
    model = nn.Sequential(backbone, head)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    _step(model, optimizer, torch.randn(4, 8))
    assert gradient_facts(model, [optimizer])["unused_grad_parameters"] == 0
    assert gradient_facts(model, [])["unused_grad_parameters"] is None  # updated by hand, maybe


def test_without_an_optimized_parameter_in_the_backward_nothing_is_called_unused() -> None:
    model, other = nn.Linear(8, 2), nn.Linear(8, 2)
    optimizer = torch.optim.SGD(other.parameters(), lr=0.1)  # trains a module this backward never reaches
    model(torch.randn(4, 8)).sum().backward()
    assert unused_gradients([model, other], optimized_ids([optimizer])) == []


def test_a_teacher_no_optimizer_holds_beside_the_trained_student_gets_gradients_nobody_uses() -> None:
    teacher, student = nn.Linear(8, 4), nn.Linear(8, 4)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    optimizer.zero_grad()
    (student(x) - teacher(x)).pow(2).mean().backward()  # the teacher's output not detached
    optimizer.step()
    unused = unused_gradients([teacher, student], optimized_ids([optimizer]))
    assert {id(p) for p in unused} == {id(teacher.weight), id(teacher.bias)}
    assert gradient_facts(teacher, [optimizer], [student])["unused_grad_tensors"] == 2
    assert gradient_facts(student, [optimizer], [teacher])["unused_grad_tensors"] == 0
    assert gradient_facts(teacher, [optimizer])["unused_grad_tensors"] == 0  # alone, nothing says a backward trained anything


def test_an_embedding_table_reports_its_size_flag_and_the_rows_its_gradient_touched() -> None:
    model = nn.Sequential(nn.EmbeddingBag(1000, 4, mode="mean"), nn.Linear(4, 1))
    small = nn.Embedding(10, 4, sparse=True)
    model.add_module("small", small)
    optimizer = torch.optim.Adam(model[0].parameters(), lr=1e-3)
    model[1](model[0](torch.tensor([[1, 2, 3], [3, 4, 5]]))).sum().backward()
    big, tiny = embedding_tables(model, optimized_ids([optimizer]))
    assert big == {"module": "0", "type": "EmbeddingBag", "num_embeddings": 1000, "embedding_dim": 4,
                   "sparse": False, "dtype": "float32", "optimized": True, "rows_with_grad": 5}
    assert tiny["module"] == "small" and tiny["sparse"] and not tiny["optimized"] and tiny["rows_with_grad"] is None


def test_a_gradient_whose_rows_cannot_be_counted_is_a_missing_fact_not_an_error() -> None:
    table = nn.Embedding(10, 4, device="meta")  # no values to count: a meta (or sharded) tensor
    table.weight.grad = torch.empty(10, 4, device="meta")
    (facts,) = embedding_tables(nn.Sequential(table), set())
    assert facts["rows_with_grad"] is None and facts["num_embeddings"] == 10
