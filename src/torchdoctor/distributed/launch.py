"""Where each torchrun launch of ours keeps its logs.

torch.distributed.run's elastic agent makes a log directory for every launch (`torchelastic_*` in
the temporary folder, per-rank error files under it) and never removes it: this machine's /tmp
held 784 of them after a few days of our tests and benchmarks. Each launch of ours names a
directory of its own instead, which its caller removes; a `--log-dir` the user passes is theirs.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from typing import Iterator, Sequence

_LOG_DIR_OPTIONS = ("--log-dir", "--log_dir")  # torchrun's two spellings, each also as `--log-dir=DIR`


def log_dir_option(torchrun_args: Sequence[str], directory: str) -> list[str]:
    """`--log-dir=directory`, or nothing when `torchrun_args` already choose a log directory."""
    if any(arg.split("=", 1)[0] in _LOG_DIR_OPTIONS for arg in torchrun_args):
        return []
    return [f"--log-dir={directory}"]


@contextmanager
def own_log_dir(torchrun_args: Sequence[str]) -> Iterator[list[str]]:
    """The torchrun options of one launch whose logs go to a temporary directory, removed when the
    `with` block ends (a user's own `--log-dir` is kept as it is)."""
    with tempfile.TemporaryDirectory(prefix="torchdoctor-torchrun-", ignore_cleanup_errors=True) as directory:
        yield log_dir_option(torchrun_args, directory)
