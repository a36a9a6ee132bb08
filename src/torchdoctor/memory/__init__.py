"""Where one step's memory goes, and what would change it (see docs/memory.md).

The step is measured inside the observed child by `torchdoctor.observe.probes.memory`; this
package holds the values it produces and their analysis (breakdown, timeline, snapshot, what-if).
"""

from torchdoctor.memory.breakdown import CATEGORIES, MemoryBreakdown, ModuleMemory
from torchdoctor.memory.whatif import BatchScaling, WhatIf, parse_bytes, what_if

__all__ = ["CATEGORIES", "BatchScaling", "MemoryBreakdown", "ModuleMemory", "WhatIf", "parse_bytes", "what_if"]
