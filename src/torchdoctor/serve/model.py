"""The model side of the server: turning a request body into tensors, a batch into rows.

Request body (JSON): ``{"inputs": [x0, x1, ...]}``, one nested list per positional input of the
model, each shaped like ONE sample of the example batch (the example's shape without dim 0), and
within the values the model takes (serve.spec): checked here, before the request joins a batch.
Response: ``{"outputs": ...}``, that sample's row of the model's (first) output tensor.
"""

from __future__ import annotations

from typing import Any

import orjson

from torchdoctor.infer.factory import ModelAndExample
from torchdoctor.infer.variants.base import first_tensor
from torchdoctor.serve.errors import BadRequestError, WrongShapeError
from torchdoctor.serve.spec import input_specs


class TensorModel:
    """Parses requests against the model's input spec and runs batches under inference_mode."""

    def __init__(self, loaded: ModelAndExample) -> None:
        self.model = loaded.model
        self.spec = loaded.spec
        self.inputs = input_specs(loaded.model, loaded.args)
        self.sample_shapes = [spec.shape for spec in self.inputs]
        self.example_body = {"inputs": [a[0].tolist() for a in loaded.args]}
        self._example = loaded.args

    def parse(self, body: bytes) -> tuple[Any, ...]:
        """The request's sample tensors; a RequestError naming the field when they do not fit."""
        try:
            inputs = orjson.loads(body)["inputs"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise BadRequestError('the body must be JSON like {"inputs": [sample, ...]}', field="inputs") from None
        if not isinstance(inputs, list) or len(inputs) != len(self.inputs):
            raise WrongShapeError(f"`inputs` must be a list of {len(self.inputs)} sample(s)", field="inputs")
        return tuple(spec.tensor(value) for spec, value in zip(self.inputs, inputs))

    def example_items(self, count: int) -> list[tuple[Any, ...]]:
        """`count` requests' samples cut from the example batch (cyclically): a typical batch."""
        rows = int(self._example[0].shape[0])
        return [tuple(arg[i % rows] for arg in self._example) for i in range(count)]

    def run_batch(self, items: list[tuple[Any, ...]]) -> list[Any]:
        """Stack the samples, run the model once, return one output row (a list) per sample."""
        import torch

        batch = tuple(torch.stack([item[i] for item in items]) for i in range(len(self.sample_shapes)))
        with torch.inference_mode():
            output = first_tensor(self.model(*batch))
        return output.tolist()
