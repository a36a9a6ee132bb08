"""ObserveConfig refuses what it cannot measure."""

from __future__ import annotations

import pytest

from torchdoctor.observe import ObserveConfig

STEPS_ONLY = {"steps_only": True, "profile": False, "memory": False, "threads_probe": False}


@pytest.mark.parametrize("reads_other_hooks", [{"profile": True}, {"memory": True}, {"threads_probe": True},
                                               {"capture_steps": 5}])
def test_steps_only_refuses_the_windows_and_probes_that_read_the_other_hooks(reads_other_hooks) -> None:
    with pytest.raises(ValueError, match="steps_only observes step times alone"):
        ObserveConfig(**{**STEPS_ONLY, **reads_other_hooks})


def test_steps_only_travels_to_the_child_with_the_rest_of_the_config() -> None:
    config = ObserveConfig(**STEPS_ONLY)
    assert ObserveConfig.from_env(config.to_env()) == config and config.total_steps == 25
