"""`torchdoctor tune`: apply knobs to the unmodified script one at a time, measure each in a fresh
subprocess, keep only what is faster and still numerically sound. Keys: docs/tune.md."""

from __future__ import annotations

from torchdoctor.tune.config import TuneConfig
from torchdoctor.tune.confirmation_report import rounds_for_precision
from torchdoctor.tune.protocols import TrialStore, TuneProgress
from torchdoctor.tune.result import SCHEMA_VERSION, TuneResult, load_result
from torchdoctor.tune.trial import Trial
from torchdoctor.tune.tuner import Tuner

__all__ = ["SCHEMA_VERSION", "Trial", "TrialStore", "TuneConfig", "TuneProgress", "TuneResult", "Tuner", "load_result",
           "rounds_for_precision"]
