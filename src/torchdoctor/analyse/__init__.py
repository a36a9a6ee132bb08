"""The analyse stage: values in, values out. `analyse_record` fills a Record's analysis sections;
`compare_records` sets two Records side by side; `qualify_findings` marks findings with the
input caveats (`record_caveats`) that weaken them."""

from torchdoctor.analyse.caveats import qualify_findings, record_caveats
from torchdoctor.analyse.compare import RunComparison, compare_records
from torchdoctor.analyse.record import analyse_record

__all__ = ["RunComparison", "analyse_record", "compare_records", "qualify_findings", "record_caveats"]
