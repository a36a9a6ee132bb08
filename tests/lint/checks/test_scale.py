"""TDL402 over a program: `set_epoch` counts wherever the sampler's program calls it.

`FSDP_T5` is a reduced recreation of pytorch/examples `distributed/FSDP` (the T5 example), in its
shape only: the entry script builds two shuffling `DistributedSampler`s and hands the training one
to `utils.train`, which calls `set_epoch`; `utils/__init__.py` re-exports the helpers with
relative imports; `policies`, `model_checkpointing` and `configs` are left out, so they are
imports lint cannot resolve, like `transformers` and `nlp`.
"""

from __future__ import annotations

from pathlib import Path

from torchdoctor.lint import lint_paths, lint_script_with_local_imports
from tests.lint.files import write

FSDP_T5 = Path(__file__).parents[1] / "fixtures" / "programs" / "fsdp_t5"
SAMPLER = "from torch.utils.data.distributed import DistributedSampler\n"



def tdl402(paths: list[Path]) -> list[tuple[str, int]]:
    report = lint_paths(paths, select=["TDL402"])
    assert report.errors == ()
    return [(Path(v.path).name, v.line) for v in report.violations]


def test_the_fsdp_t5_example_linted_as_a_folder_raises_no_tdl402() -> None:
    assert tdl402([FSDP_T5]) == []


def test_the_fsdp_t5_entry_script_linted_alone_follows_its_imports_and_raises_no_tdl402() -> None:
    report = lint_paths([FSDP_T5 / "T5_training.py"], select=["TDL402"])
    assert report.violations == ()
    assert report.files_checked == 1  # utils/ is read for facts, not reported


def test_the_fsdp_t5_example_linted_for_diagnose_raises_no_tdl402() -> None:
    report = lint_script_with_local_imports(FSDP_T5 / "T5_training.py")
    assert [v for v in report.violations if v.code == "TDL402"] == []


def test_a_sampler_built_in_one_util_is_fine_when_another_util_of_the_program_sets_the_epoch(tmp_path: Path) -> None:
    write(tmp_path, "main.py", "from utils.data import make_sampler\nfrom utils.train_utils import train\n")
    write(tmp_path, "utils/__init__.py")
    write(tmp_path, "utils/data.py", SAMPLER + "def make_sampler(ds):\n    return DistributedSampler(ds)\n")
    write(tmp_path, "utils/train_utils.py", "def train(loader, epoch):\n    loader.sampler.set_epoch(epoch)\n")
    assert tdl402([tmp_path]) == []
    assert tdl402([tmp_path / "main.py", tmp_path / "utils" / "data.py"]) == []


def test_a_sampler_whose_epoch_is_never_set_anywhere_is_flagged_where_it_is_built(tmp_path: Path) -> None:
    write(tmp_path, "main.py", "import utils\nutils.train(utils.make_sampler(ds))\n")
    write(tmp_path, "utils/__init__.py", "from .data import make_sampler\nfrom .train_utils import train\n")
    write(tmp_path, "utils/data.py", SAMPLER + "def make_sampler(ds):\n    return DistributedSampler(ds)\n")
    write(tmp_path, "utils/train_utils.py", "def train(sampler):\n    sampler.shuffle = True\n")
    assert tdl402([tmp_path]) == [("data.py", 3)]
    assert tdl402([tmp_path / "utils" / "data.py"]) == [("data.py", 3)]


def test_set_epoch_in_an_unrelated_script_of_the_same_folder_does_not_count(tmp_path: Path) -> None:
    write(tmp_path, "train_ddp.py", SAMPLER + "sampler = DistributedSampler(ds)\n")
    write(tmp_path, "train_other.py", "for epoch in range(3):\n    sampler.set_epoch(epoch)\n")
    assert tdl402([tmp_path]) == [("train_ddp.py", 2)]


def test_unresolved_and_broken_imports_do_not_crash_and_leave_the_sampler_flagged(tmp_path: Path) -> None:
    write(tmp_path, "main.py", SAMPLER + "import missing\nfrom . import broken\nsampler = DistributedSampler(ds)\n")
    write(tmp_path, "broken.py", "def f(:\n    sampler.set_epoch(0)\n")
    assert tdl402([tmp_path / "main.py"]) == [("main.py", 4)]
