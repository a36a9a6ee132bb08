"""Diagnosis rules: measured evidence in a Record -> ranked Findings (see docs/rules.md).

`Finding`, `Fix` and `SEVERITIES` live in torchdoctor.finding and are re-exported here."""

from __future__ import annotations

from torchdoctor.finding import SEVERITIES, Finding, Fix
from torchdoctor.rules.base import Hit, MissingEvidence, Rule, all_rules
from torchdoctor.rules.engine import Diagnosis, UnknownRuleError, diagnose, diagnose_record, selected_rules

__all__ = ["SEVERITIES", "Diagnosis", "Finding", "Fix", "Hit", "MissingEvidence", "Rule", "UnknownRuleError",
           "all_rules", "diagnose", "diagnose_record", "selected_rules"]
