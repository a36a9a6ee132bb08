"""Small runnable workloads, each with one known performance problem, and healthy ones.

:data:`WORKLOADS` maps each workload's name to the rule id expected as its top finding (None for
a healthy one, which should produce no finding of severity warning or above). Run any of them with
`torchdoctor diagnose -- $(python -c "from torchdoctor.zoo import workload_path; print(workload_path('NAME'))")`.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent

#: name -> expected top rule id (None: healthy).
WORKLOADS: dict[str, str | None] = {
    "demo": "TD-DATA-002",
    "data_few_workers": "TD-DATA-003",
    "data_worker_restart": "TD-DATA-004",
    "data_slow_storage": "TD-DATA-007",
    "compute_tiny_ops": "TD-COMP-003",
    "compute_hot_op": "TD-COMP-004",
    "compute_anomaly": "TD-COMP-007",
    "compute_grad_inference": "TD-COMP-008",
    "compute_threads": "TD-COMP-009",
    "compute_loop_optimizer": "TD-COMP-012",
    "compute_host_work": "TD-COMP-013",
    "compute_script_profiler": "TD-COMP-016",
    "compute_gradcheck": "TD-COMP-017",
    "inference_unbatched": "TD-COMP-018",
    "scale_data_parallel": "TD-SCALE-004",
    "config_debug_env": "TD-CONF-001",
    "healthy_mlp": None,
    "healthy_cnn": None,
    "healthy_inference": None,
}


def workload_path(name: str) -> Path:
    """Path of the zoo workload `name` (a key of :data:`WORKLOADS`)."""
    if name not in WORKLOADS:
        raise KeyError(f"no zoo workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return _HERE / f"{name}.py"


def demo_script() -> Path:
    """Path of the built-in demo workload (`torchdoctor diagnose --demo`)."""
    return workload_path("demo")
