"""Speed-of-light accounting: what a step could cost on this machine (its FLOPs at the measured
peak) and where the rest of the measured step goes, slice by slice, each slice explained by a
finding or shown as unexplained with its operators and the script's line. Torch-free: it reads a
Record's steps, the operator-costs probe's value and the trace summary.
"""

from torchdoctor.accounting.build import account_record
from torchdoctor.accounting.section import Accounting, CostCentre, Slice

__all__ = ["Accounting", "CostCentre", "Slice", "account_record"]
