"""Why a request to the batcher did not get a model output. HTTP status codes in `status`."""

from __future__ import annotations

from torchdoctor.errors import TorchDoctorError


class RequestError(Exception):
    """A request the batcher could not answer; `status` is the HTTP code the server returns."""

    status: int = 500


class BadRequestError(RequestError):
    """The body is not JSON, or lacks `inputs`, or holds something that is not numbers."""

    status = 400


class WrongShapeError(RequestError):
    """The inputs parse but do not match the model's per-sample shape or dtype."""

    status = 422


class QueueFullError(RequestError):
    """The bounded queue is full: the request was rejected before being accepted."""

    status = 503


class RequestTimeoutError(RequestError):
    """The request waited longer than the batcher's timeout for its result."""

    status = 504


class BatchFailedError(RequestError):
    """The model raised while running the batch that held this request."""

    status = 500


class BatcherClosedError(RequestError):
    """The batcher stopped before this accepted request was run."""

    status = 503


class ServeConfigError(TorchDoctorError):
    """A serving or load-generation option is invalid (the message says which)."""
