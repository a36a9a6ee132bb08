"""The chosen batching setting, written for Triton's dynamic batcher and Ray Serve's @serve.batch.

Triton: ``max_batch_size`` and ``dynamic_batching { max_queue_delay_microseconds }`` in the
model's config.pbtxt, with the queue bound and timeout as its ``default_queue_policy``
(https://docs.nvidia.com/deeplearning/triton-inference-server/ model_configuration.md).
Ray Serve: ``@serve.batch(max_batch_size=..., batch_wait_timeout_s=...)`` on the deployment's
batched method, and ``max_ongoing_requests`` as the queue bound.
"""

from __future__ import annotations

from pathlib import Path

from torchdoctor.serve.batcher import BatcherConfig


def triton_config(model_name: str, config: BatcherConfig) -> str:
    """A config.pbtxt fragment; inputs/outputs and the backend stay for the user to fill in."""
    timeout = "" if config.timeout_ms is None else (
        f"    default_timeout_microseconds: {int(config.timeout_ms * 1000)}\n"
        "    allow_timeout_override: true\n"
    )
    return (
        f'name: "{model_name}"\n'
        f"max_batch_size: {config.max_batch_size}\n"
        "dynamic_batching {\n"
        f"  max_queue_delay_microseconds: {int(round(config.max_delay_ms * 1000))}\n"
        "  default_queue_policy {\n"
        f"    max_queue_size: {config.max_queue}\n"
        "    timeout_action: REJECT\n"
        f"{timeout}"
        "  }\n"
        "}\n"
    )


def ray_serve_snippet(config: BatcherConfig) -> str:
    """A Ray Serve deployment skeleton with the same batching limits."""
    return (
        "from ray import serve\n\n\n"
        f"@serve.deployment(max_ongoing_requests={config.max_queue})\n"
        "class Model:\n"
        f"    @serve.batch(max_batch_size={config.max_batch_size}, "
        f"batch_wait_timeout_s={config.max_delay_ms / 1000:g})\n"
        "    async def __call__(self, requests: list) -> list:\n"
        "        ...  # stack the requests, run the model once, return one result per request\n"
    )


def write_configs(folder: Path, model_name: str, config: BatcherConfig) -> list[Path]:
    """Write config.pbtxt and ray_serve_deployment.py into `folder`; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    triton = folder / "config.pbtxt"
    triton.write_text(triton_config(model_name, config))
    ray = folder / "ray_serve_deployment.py"
    ray.write_text(ray_serve_snippet(config))
    return [triton, ray]
