"""Where one step's memory goes, and what would change it (see docs/memory.md)."""

from torchdoctor.memory.breakdown import CATEGORIES, MemoryBreakdown, ModuleMemory
from torchdoctor.memory.tracker import StepMemoryTracker, mem_tracker_support
from torchdoctor.memory.whatif import BatchScaling, WhatIf, parse_bytes, what_if

__all__ = ["CATEGORIES", "BatchScaling", "MemoryBreakdown", "ModuleMemory", "StepMemoryTracker", "WhatIf",
           "mem_tracker_support", "parse_bytes", "what_if"]
