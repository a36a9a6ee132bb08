"""tune on a field script, its claim re-measured independently: the slow
`__getitem__` script is tuned through the CLI, then run plain and under `torchdoctor run --apply
TUNED.json`, interleaved, its step times read from the script's own `[timing]` lines (nothing of
tune's observation in the re-measurement), and judged with the statistic tune uses.

How close the claim comes to the re-measurement is the benchmark's question (benchmarks/tune_zoo.py,
docs/field.md): the size of a speed-up depends on the machine's load, and on CI's two shared cores a
step of 1-2 ms with 16 sleeping workers jitters run to run by 2x. This test holds what does not
depend on it: tune keeps a worker count within what `run --apply` accepts, confirms it side by side
with an interval around its claim, and an independent re-measurement agrees in direction (the fix
is x7-x20 here, far beyond any noise floor). About 80 s on the 2-core development machine.

Sixteen workers started together deliver in waves: a wait of about one worker's batch, then up to
sixteen batches at once. A window of 10 steps could fall between two waves: CI once re-measured
x63 (0.3 ms steps) against a confirmed x21.5. So the script's items take 1 ms (its runs stay
short) and both the confirmation and the re-measurement time WINDOW steps, several waves.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.field.helpers import ENV, SCRIPTS, own_step_times_s
from torchdoctor.bench import FASTER, compare_runs
from torchdoctor.knobs import REGISTRY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SCRIPT = SCRIPTS / "slow_getitem.py"
#: Warm-up past the batches 16 workers queue at start (2 each): within them a run measures the
#: prefetched burst (with 2 ms items: 0.4 ms steps, x86 where the steady state is x18), not the workers' pace.
WARMUP, STEPS, WINDOW, ROUNDS = 35, 16, 64, 3
#: The script's own arguments: 1 ms an item, a step of 16 items.
ITEMS = ["--item-ms", "1"]
#: One knob, one value, one round (STEPS timed) and a confirmation of 2 to 6 rounds (until the
#: claim is precise, with no span asked of it: tests/tune/test_search.py tests the span) whose
#: runs time the script's steps after the warm-up to its end, WINDOW of them: the smallest complete tune.
TUNE = ["--knobs", "num_workers", "--int-trials", "1", "--rounds", "1", "--confirm-rounds", "2",
        "--confirm-max-rounds", "6", "--confirm-span", "0", "--warmup-steps", str(WARMUP), "--steps", str(STEPS)]


def _own_steps(argv: list[str], cwd: Path) -> list[float]:
    """The script's own step times (WINDOW steps after its first WARMUP) in one fresh run of `argv`."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd, env=ENV)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return own_step_times_s(proc.stdout, WARMUP, WINDOW)


def test_tunes_claim_on_the_slow_getitem_script_survives_an_independent_re_measurement(tmp_path: Path) -> None:
    out = tmp_path / "tune.json"
    command = [sys.executable, "-m", "torchdoctor", "tune", "--json", str(out), "--store", str(tmp_path / "runs.db"),
               *TUNE, "--", str(SCRIPT), *ITEMS, "--steps", str(WARMUP + WINDOW)]
    tune = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=ENV)
    assert out.exists(), tune.stdout + tune.stderr
    result = orjson.loads(out.read_bytes())
    assert result["confirmed"] and "num_workers" in result["kept"], result["summary"]
    low_workers, high_workers = REGISTRY["num_workers"].value_range()  # what `run --apply` accepts here
    assert max(1, low_workers) <= result["kept"]["num_workers"] <= high_workers, result["kept"]
    low, high = result["speedup_ci"]
    assert low <= result["speedup"] <= high and result["speedup"] > 1.0, (result["speedup"], result["speedup_ci"])

    args = [str(SCRIPT), *ITEMS, "--steps", str(WARMUP + WINDOW)]
    plain_argv = [sys.executable, *args]
    tuned_argv = [sys.executable, "-m", "torchdoctor", "run", "--apply", str(out), "--", *args]
    plain, tuned = [], []
    for index in range(ROUNDS):  # interleaved, the order swapped each round
        pair = (plain_argv, plain), (tuned_argv, tuned)
        for argv, runs in pair if index % 2 == 0 else reversed(pair):
            runs.append(_own_steps(argv, tmp_path))
    verdict = compare_runs(plain, tuned)
    assert verdict.verdict.verdict == FASTER, verdict.to_dict()
