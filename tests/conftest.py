"""Shared fixtures: where the real GPU traces live, and a guard that no test leaves a patch behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


#: Test files that take minutes each (`--durations` on CI: tune's end-to-end runs, every command's
#: JSON), started first.
LONGEST_FIRST = ("tests/tune/", "tests/test_json_schemas.py", "tests/field/test_field_tune.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest test files run first, then the other files with slow (end-to-end) tests, then the
    rest; each file's tests stay together and in order.

    `make test` spreads whole files over two workers (pytest-xdist, `--dist loadfile`), handing them
    out in this order: a long file started last would leave one worker running alone at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def order(item: pytest.Item) -> int:
        relative = item.path.relative_to(REPO_ROOT).as_posix()
        if relative.startswith(LONGEST_FIRST):
            return 0
        return 1 if item.path in slow_files else 2

    items.sort(key=order)


def _shared_dir() -> Path:
    # Sessions and CI lay the project's shared/ folder beside the checkout.
    return Path(os.environ.get("TORCHDOCTOR_SHARED", REPO_ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def gpu_traces() -> Path:
    """Folder of real Kineto traces recorded on GPUs (see its README for their sources)."""
    path = _shared_dir() / "fixtures" / "traces"
    if not path.is_dir():
        raise FileNotFoundError(f"shared trace fixtures not found at {path}; set TORCHDOCTOR_SHARED")
    return path


def _instrumentation_state() -> dict[str, object]:
    import torch
    import torch.nn.modules.module as module_mod
    import torch.optim.optimizer as optimizer_mod
    import torch.utils.data.dataloader as dataloader_mod

    import torchdoctor

    return {
        "Tensor.backward": torch.Tensor.backward,
        "autograd.backward": torch.autograd.backward,
        "torch.compile": torch.compile,
        "DataLoader.__init__": dataloader_mod.DataLoader.__init__,
        "_BaseDataLoaderIter.__next__": dataloader_mod._BaseDataLoaderIter.__next__,
        "global forward pre-hooks": len(module_mod._global_forward_pre_hooks),
        "global forward hooks": len(module_mod._global_forward_hooks),
        "optimizer pre-hooks": len(optimizer_mod._global_optimizer_pre_hooks),
        "optimizer post-hooks": len(optimizer_mod._global_optimizer_post_hooks),
        "step marker": torchdoctor._step_marker,
        "os._exit": os._exit,
    }


@pytest.fixture(autouse=True)
def no_instrumentation_left_behind():
    """Fails any test that leaves a torchdoctor patch, hook or marker installed."""
    before = _instrumentation_state()
    yield
    after = _instrumentation_state()
    leaked = [name for name in before if before[name] is not after[name] and before[name] != after[name]]
    assert not leaked, f"instrumentation left behind: {leaked}"


@pytest.fixture(scope="session")
def python_wrapper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An 'interpreter' that is this one started through a shell script which sets TD_CHECK_SPEED=0.66
    (the check tests' script then sleeps a third less per step): another environment, as
    `--against-python` sees one. Made once for the whole test run."""
    import sys

    path = tmp_path_factory.mktemp("python") / "python-wrapper"
    path.write_text(f"#!/bin/sh\nTD_CHECK_SPEED=0.66 exec {sys.executable} \"$@\"\n")
    path.chmod(0o755)
    return path
