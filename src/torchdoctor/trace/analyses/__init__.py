"""One module per question asked of a trace; each is a pure function returning a JSON-ready dict.

Every function takes the columnar Trace and the rows or window it should look at; none draws or
prints. Keys carry their unit (`_us`, `_fraction`, `_count`) and are documented in docs/trace.md.
"""
