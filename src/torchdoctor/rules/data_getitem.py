"""What the script's dataset code does while the step waits for its batch.

With `num_workers=0` the DataLoader fetches each batch in the training process, so the operator-costs
probe's Python tracer sees the script's `Dataset.__getitem__` (and its `collate_fn`) run and what
they call (`script_calls.loading_s` and the calls marked `in_loading`, observe/probes/script_calls.py).
Work repeated at every access (a file opened and parsed for every sample, text tokenised again in
every epoch) is work that can be done once; PyTorch's "Writing custom datasets" tutorial reads the
data (or opens the file) in `__init__` and indexes it in `__getitem__`, and the data-loading guides'
first advice is to cache or pre-compute what each sample needs.
"""

from __future__ import annotations

from torchdoctor.probe_values import ScriptCall, ScriptCallsValue
from torchdoctor.rules.base import Fix, Hit, rule, severity_at
from torchdoctor.rules.data import WAIT_PROBLEM, WAIT_WARNING
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.host_calls import median_batch

MIN_SHARE = 0.10  # of a typical step: dataset code cheaper than this is not worth a finding
NAMED = 3
#: Last parts of the names of calls that open or read a whole file (`open`, `numpy...load`,
#: `torch.serialization.load`, `PIL.Image.open`, `pandas...read_csv`, `imageio...imread`).
FILE_READS = frozenset({"open", "load", "loadtxt", "genfromtxt", "fromfile", "read_csv", "read_parquet", "imread",
                        "read_image", "File"})

FILE_FIX = Fix("Open or read the file once, not for every sample: load the array in __init__ (or map it with "
               "np.load(path, mmap_mode='r')), keep an open handle (one per worker for HDF5), and index it in "
               "__getitem__.",
               "def __init__(self, path, labels):\n"
               "    self.data = np.load(path, mmap_mode='r')   # once\n"
               "def __getitem__(self, i):\n"
               "    return torch.from_numpy(np.array(self.data[i])), int(self.labels[i])")
WORK_FIX = Fix("Do the per-sample preprocessing once instead of at every access: pre-compute it in __init__ "
               "(tokenise the whole corpus once into a tensor of ids) or cache each sample's result, and index "
               "the result in __getitem__; what must change at every access (random augmentation) runs in "
               "DataLoader workers (num_workers).",
               "def __init__(self, texts, labels):\n"
               "    self.ids = torch.stack([tokenize(t) for t in texts])   # once, not every epoch\n"
               "def __getitem__(self, i):\n"
               "    return self.ids[i], self.labels[i]")


def reads_file(callee: str) -> bool:
    """Whether a call opens or reads a whole file, by its name's last part (FILE_READS); never a
    tensor's or a module's method."""
    return not callee.startswith(("Tensor.", "nn.Module: ", "torch.nn.")) and callee.rsplit(".", 1)[-1] in FILE_READS


def _times(count: float) -> str:
    return f"{count:.0f} time(s)" if count >= 1 else f"{count:.2f} times"


def _loading_calls(calls: ScriptCallsValue) -> list[ScriptCall]:
    return sorted((c for c in calls["calls"] if c.get("in_loading")), key=lambda c: -c["wall_s"])


@rule("TD-DATA-012", "data")
def dataset_work_per_sample(ev: Evidence) -> Hit | None:
    """With the batch loaded in the training process, the script's dataset code (its `__getitem__`,
    its `collate_fn`) takes MIN_SHARE of a typical step or more: named by its longest calls, and a
    file opened or read per sample said so. Upside, estimated: the smaller of the timed steps'
    steady data wait and the profiled step's share in the dataset code (the part of the wait that
    code is; doing its work once removes it)."""
    calls, step_s = ev.script_calls()
    loading = calls.get("loading_s") or 0.0
    wait = ev.steady_data_wait_fraction()
    share = min(wait, loading / step_s)
    inside = _loading_calls(calls)
    if share < MIN_SHARE or not inside:
        return None
    batch = max(1, median_batch(ev))
    files = [c for c in inside if reads_file(c["callee"])]
    top = files[0] if files else inside[0]
    per_sample = top["count"] / batch
    named = ", ".join(f"{c['callee']}() in {c['caller']}" for c in inside[:NAMED])
    what = "reads a file" if files else "repeats its preprocessing"
    return Hit(severity_at(share, WAIT_WARNING, WAIT_PROBLEM) or "info",
               f"the dataset {what} for every sample: {top['callee']}() {_times(per_sample)} a sample in "
               f"{top['caller']}, {share:.0%} of each step", share,
               {"loading_share_fraction": round(loading / step_s, 4), "data_wait_fraction_steady": round(wait, 4),
                "reads_file": bool(files), "batch_size_median": batch,
                "calls": [{"callee": c["callee"], "caller": c["caller"], "per_sample": round(c["count"] / batch, 2),
                           "wall_s": c["wall_s"]} for c in inside[:NAMED]],
                "upside_basis": "estimated"},
               f"The DataLoader loads each batch in the training process, and the script's dataset code takes "
               f"{loading / step_s:.0%} of the profiled step; its longest calls: {named}. Each access does this "
               "work again for its sample, in every epoch, while the model waits.",
               FILE_FIX if files else WORK_FIX)
