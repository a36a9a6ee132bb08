"""The answers `torchdoctor check` can give, and the exit status of each.

"pass", "regression" and "undecided" are the gate's answers on a metric and on the whole check;
"error" means a side failed or an input was refused; "saved" means a baseline was recorded.
Exit codes: 0 pass or saved, 1 regression, 2 undecided or error.
"""

from __future__ import annotations

PASS, REGRESSION, UNDECIDED, ERROR, SAVED = "pass", "regression", "undecided", "error", "saved"
EXIT_CODES = {PASS: 0, REGRESSION: 1, UNDECIDED: 2, ERROR: 2, SAVED: 0}
