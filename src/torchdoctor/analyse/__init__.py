"""The analyse stage: values in, values out. `analyse_record` fills a Record's analysis sections;
`compare_records` sets two Records side by side."""

from torchdoctor.analyse.compare import RunComparison, compare_records
from torchdoctor.analyse.record import analyse_record

__all__ = ["RunComparison", "analyse_record", "compare_records"]
