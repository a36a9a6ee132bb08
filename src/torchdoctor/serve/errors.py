"""Why a request to the batcher did not get a model output. HTTP status codes in `status`."""

from __future__ import annotations

from torchdoctor.errors import TorchDoctorError


class RequestError(Exception):
    """A request the batcher could not answer; `status` is the HTTP code the server returns and
    `field` the request field at fault (`inputs[0]`), when one is."""

    status: int = 500

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class BadRequestError(RequestError):
    """The body is not JSON, or lacks `inputs`, or holds something that is not numbers, or values
    outside what the model takes (a token id beyond its embedding)."""

    status = 400


class BodyTooLargeError(RequestError):
    """The body is larger than the server reads."""

    status = 413


class UnsupportedMediaError(RequestError):
    """The body is not declared as JSON (`Content-Type: application/json`)."""

    status = 415


class ForbiddenOriginError(RequestError):
    """The request names another host (Host) or comes from a foreign web page (Origin)."""

    status = 403


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
    """The model raised on this request, run alone (its batch-mates were answered). The message
    is generic: the model's own error goes to the server log, not to the client."""

    status = 500


class BatcherClosedError(RequestError):
    """The batcher stopped before this accepted request was run."""

    status = 503


class ServeConfigError(TorchDoctorError):
    """A serving or load-generation option is invalid (the message says which)."""
