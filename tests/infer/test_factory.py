"""Loading a model factory: the three accepted forms and the messages for bad ones."""

from __future__ import annotations

import pytest
import torch

from torchdoctor.infer import load_model
from torchdoctor.infer.errors import ModelFactoryError
from torchdoctor.infer.factory import resize_batch


def test_a_module_function_gives_an_eval_model_and_its_example_as_args() -> None:
    loaded = load_model("tests.infer.models:classifier")
    assert not loaded.model.training
    assert loaded.batch_size == 4 and loaded.args[0].dtype == torch.int64


def test_a_script_defining_model_and_example_globals_is_accepted(tmp_path) -> None:
    script = tmp_path / "m.py"
    script.write_text("import torch\nmodel = torch.nn.Linear(3, 2)\nexample = torch.rand(5, 3)\n")
    assert load_model(str(script)).batch_size == 5


def test_a_missing_file_or_function_is_named_in_the_error(tmp_path) -> None:
    with pytest.raises(ModelFactoryError, match="does not exist"):
        load_model(str(tmp_path / "nope.py"))
    with pytest.raises(ModelFactoryError, match="no callable named 'absent'"):
        load_model("tests.infer.models:absent")


def test_a_factory_returning_something_else_is_rejected(tmp_path) -> None:
    script = tmp_path / "bad.py"
    script.write_text("def model_and_example():\n    return 'model', 3\n")
    with pytest.raises(ModelFactoryError, match="not a torch.nn.Module"):
        load_model(str(script))


def test_resize_batch_repeats_example_rows_cyclically() -> None:
    (x,) = resize_batch((torch.tensor([[1], [2], [3]]),), 5)
    assert x.flatten().tolist() == [1, 2, 3, 1, 2]
