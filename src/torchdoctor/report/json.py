"""JSON renderer: the Record itself, findings included; keys in docs/record-schema.md and docs/report.md."""

from __future__ import annotations

from torchdoctor.record import Record


class JsonRenderer:
    """The Record as indented JSON, with its `schema_version` (the public machine interface)."""

    extension = "json"

    def render(self, record: Record) -> str:
        return record.to_json(indent=True).decode("utf-8")
