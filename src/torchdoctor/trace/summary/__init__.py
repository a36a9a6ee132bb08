"""`record.trace` as frozen values: the summary `analyse_traces` writes, read back by its readers.

Each value reads the JSON its analysis writes (docs/trace.md) with `from_dict`, checking every field
(a wrong type is a RecordFormatError naming it), and `to_dict` writes that JSON back.
"""
