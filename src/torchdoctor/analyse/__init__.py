"""The analyse stage: values in, values out. `analyse_record` fills a Record's analysis sections
(`accounting_section` the speed-of-light accounting, `explained_section` its slices against the findings);
`compare_records` sets two Records side by side; `qualify_findings` marks findings with the
input caveats (`record_caveats`) that weaken them."""

from torchdoctor.analyse.caveats import qualify_findings, record_caveats
from torchdoctor.analyse.compare import RunComparison, compare_records
from torchdoctor.analyse.record import accounting_section, analyse_record, explained_section

__all__ = ["RunComparison", "accounting_section", "analyse_record", "explained_section", "compare_records", "qualify_findings", "record_caveats"]
