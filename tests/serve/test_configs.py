"""Triton and Ray Serve equivalents of a batching setting."""

from __future__ import annotations

from torchdoctor.serve import BatcherConfig, ray_serve_snippet, triton_config, write_configs


def test_triton_config_carries_batch_size_delay_and_queue_policy() -> None:
    text = triton_config("bert", BatcherConfig(max_batch_size=16, max_delay_ms=2.5, max_queue=64, timeout_ms=100))
    assert 'name: "bert"\nmax_batch_size: 16\n' in text
    assert "max_queue_delay_microseconds: 2500" in text and "max_queue_size: 64" in text
    assert "default_timeout_microseconds: 100000" in text and text.count("{") == text.count("}")


def test_ray_serve_snippet_is_python_with_the_same_limits(tmp_path) -> None:
    text = ray_serve_snippet(BatcherConfig(max_batch_size=16, max_delay_ms=2.5))
    compile(text, "ray_serve_deployment.py", "exec")
    assert "@serve.batch(max_batch_size=16, batch_wait_timeout_s=0.0025)" in text
    assert sorted(p.name for p in write_configs(tmp_path, "m", BatcherConfig())) == [
        "config.pbtxt", "ray_serve_deployment.py"]
