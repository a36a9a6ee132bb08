"""What one request's inputs may be, read from the model and its example: per positional input the
shape of one sample, the dtype, and for integer inputs the values the model can index with.

Why: a request is checked against this before it joins a batch. A token id of -1 or 10^6 used to
reach the model's embedding inside a batch, raise IndexError there and fail every request batched
with it (20 such requests among 300 valid ones failed 296 valid ones). Integer inputs are bounded
by the smallest `nn.Embedding`/`nn.EmbeddingBag` of the model (0..num_embeddings-1), else by
their dtype's range; the check names the field (`inputs[i]`) and the offending element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from torchdoctor.serve.errors import BadRequestError, WrongShapeError


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One positional input: a sample's shape, its dtype, and integer bounds (inclusive)."""

    index: int
    shape: tuple[int, ...]
    dtype: Any  # torch.dtype
    low: int | None = None
    high: int | None = None
    bound_by: str = ""  # what sets the bounds, in words

    @property
    def field(self) -> str:
        return f"inputs[{self.index}]"

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "shape": list(self.shape), "dtype": str(self.dtype).removeprefix("torch."),
                "min": self.low, "max": self.high}

    def tensor(self, value: Any) -> Any:
        """`value` (nested lists from JSON) as this input's tensor, or a RequestError naming it."""
        import torch

        try:
            tensor = torch.tensor(value)
        except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
            raise BadRequestError(f"{self.field} is not a rectangular array of numbers: {exc}",
                                  field=self.field) from None
        if tuple(tensor.shape) != self.shape:
            raise WrongShapeError(f"input {self.index} has shape {list(tensor.shape)}; the model takes "
                                  f"{list(self.shape)}", field=self.field)
        if tensor.dtype == torch.bool and self.dtype != torch.bool:
            raise WrongShapeError(f"input {self.index} holds booleans; the model takes {self.dtype}", field=self.field)
        if tensor.is_floating_point() and not self.dtype.is_floating_point:
            raise WrongShapeError(f"input {self.index} holds fractions; the model takes {self.dtype}", field=self.field)
        if self.low is not None and self.high is not None and tensor.numel():
            outside = (tensor < self.low) | (tensor > self.high)
            if bool(outside.any()):
                where = [int(i) for i in outside.nonzero()[0]]
                bad = tensor[tuple(where)].item()
                raise BadRequestError(f"{self.field}{where} = {bad} is outside {self.low}..{self.high}, the values "
                                      f"the model takes ({self.bound_by})", field=self.field)
        return tensor.to(self.dtype)


def input_specs(model: Any, example: Sequence[Any]) -> list[InputSpec]:
    """The spec of each positional input of `model`, from its example batch (dim 0 is the batch)."""
    import torch

    vocab = _smallest_embedding(model)
    specs = []
    for index, tensor in enumerate(example):
        low = high = None
        bound_by = ""
        if not tensor.dtype.is_floating_point and not tensor.dtype.is_complex and tensor.dtype != torch.bool:
            info = torch.iinfo(tensor.dtype)
            low, high, bound_by = info.min, info.max, f"{tensor.dtype} range"
            if vocab is not None:
                low, high, bound_by = 0, vocab - 1, f"its embedding has {vocab} rows"
        specs.append(InputSpec(index, tuple(tensor.shape[1:]), tensor.dtype, low, high, bound_by))
    return specs


def _smallest_embedding(model: Any) -> int | None:
    import torch

    sizes = [m.num_embeddings for m in model.modules() if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))]
    return min(sizes) if sizes else None
