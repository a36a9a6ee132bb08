"""The whole run's goodput and badput: the stream the observed process wrote (stream.py), read
back and broken down (breakdown.py), named in the script's words (causes.py), with what changed
over time (trends.py) and, for a torchrun job, every rank's goodput and the stragglers (ranks.py),
as the Record's `whole_run` section (section.py). Torch-free."""

from torchdoctor.goodput.breakdown import breakdown
from torchdoctor.goodput.section import Part, Trend, WholeRun
from torchdoctor.goodput.ranks import job_breakdown
from torchdoctor.goodput.stream import RunStream, read_watch, watch_path, watch_paths

__all__ = ["Part", "RunStream", "Trend", "WholeRun", "breakdown", "job_breakdown", "read_watch", "watch_path",
           "watch_paths"]
