"""A loaded Record's analysis sections checked once against their typed values.

`Record.from_dict` checks the fields the Record itself types; the analysis sections (`trace`,
`memory`, `compile`, `distributed`) are JSON objects typed by the packages that write them, above
the Record. `check_sections` reads each present section into its typed value, so that a Record
from a file or the store whose section has a value of the wrong type (`trace.ranks: [1]`, an
operator without its `count`) is refused on load with a RecordFormatError naming the field,
instead of being drawn in part, or silently without that section.
"""

from __future__ import annotations

from typing import Any, Callable

from torchdoctor.compile.report import CompileReport
from torchdoctor.distributed.section import DistributedSection
from torchdoctor.memory.report import MemoryReport
from torchdoctor.record import Record
from torchdoctor.trace.summary.trace_summary import TraceSummary

#: Each analysis section and the reader of its typed value (RecordFormatError on a wrong type).
SECTION_READERS: dict[str, Callable[[Any], Any]] = {
    "trace": TraceSummary.from_dict, "memory": MemoryReport.from_dict,
    "compile": CompileReport.from_dict, "distributed": DistributedSection.from_dict,
}  # fmt: skip


def check_sections(record: Record) -> Record:
    """`record` itself once every analysis section it has reads as its typed value; raises
    RecordFormatError naming the first field that does not."""
    for name, read in SECTION_READERS.items():
        section = getattr(record, name)
        if section is not None:
            read(section)
    return record
