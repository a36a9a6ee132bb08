"""The model side of the server: turning a request body into tensors, a batch into rows.

Request body (JSON): ``{"inputs": [x0, x1, ...]}``, one nested list per positional input of the
model, each shaped like ONE sample of the example batch (the example's shape without dim 0).
Response: ``{"outputs": ...}``, that sample's row of the model's (first) output tensor.
"""

from __future__ import annotations

from typing import Any

import orjson

from torchdoctor.infer.factory import ModelAndExample
from torchdoctor.infer.variants.base import first_tensor
from torchdoctor.serve.errors import BadRequestError, WrongShapeError


class TensorModel:
    """Parses requests against the example's per-sample shapes and runs batches under inference_mode."""

    def __init__(self, loaded: ModelAndExample) -> None:
        self.model = loaded.model
        self.spec = loaded.spec
        self.sample_shapes = [tuple(a.shape[1:]) for a in loaded.args]
        self.dtypes = [a.dtype for a in loaded.args]
        self.example_body = {"inputs": [a[0].tolist() for a in loaded.args]}

    def parse(self, body: bytes) -> tuple[Any, ...]:
        """The request's sample tensors; BadRequestError or WrongShapeError when they do not fit."""
        import torch

        try:
            inputs = orjson.loads(body)["inputs"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise BadRequestError('the body must be JSON like {"inputs": [sample, ...]}') from None
        if not isinstance(inputs, list) or len(inputs) != len(self.sample_shapes):
            raise WrongShapeError(f"`inputs` must be a list of {len(self.sample_shapes)} sample(s)")
        tensors = []
        for index, (value, shape, dtype) in enumerate(zip(inputs, self.sample_shapes, self.dtypes)):
            try:
                tensor = torch.tensor(value)
            except (TypeError, ValueError, RuntimeError) as exc:
                raise BadRequestError(f"input {index} is not a rectangular array of numbers: {exc}") from None
            if tuple(tensor.shape) != shape:
                raise WrongShapeError(f"input {index} has shape {list(tensor.shape)}; the model takes {list(shape)}")
            if tensor.is_floating_point() and not dtype.is_floating_point:
                raise WrongShapeError(f"input {index} holds fractions; the model takes {dtype}")
            tensors.append(tensor.to(dtype))
        return tuple(tensors)

    def run_batch(self, items: list[tuple[Any, ...]]) -> list[Any]:
        """Stack the samples, run the model once, return one output row (a list) per sample."""
        import torch

        batch = tuple(torch.stack([item[i] for item in items]) for i in range(len(self.sample_shapes)))
        with torch.inference_mode():
            output = first_tensor(self.model(*batch))
        return output.tolist()
