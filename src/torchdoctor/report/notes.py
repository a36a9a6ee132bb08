"""Text too long for a table cell, printed below its table: a paragraph per row, keyed by the row.

A reason or an evidence list in a table column is squeezed to a word or two a line in an 80-column
terminal; below the table it wraps in the full width, indented after its row's key. The texts are
rich `Text` (never read as markup): callers make them with report/safe_text.py.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


def row_notes(title: str, notes: list[tuple[str, Text]]) -> Table | None:
    """A borderless grid titled `title`: each row's key (e.g. its `#`), then its text wrapped beside it;
    None when no row has a text."""
    notes = [(key, text) for key, text in notes if text.plain]
    if not notes:
        return None
    grid = Table.grid(padding=(0, 1), pad_edge=True)
    grid.title, grid.title_justify, grid.title_style = title, "left", "italic"
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(ratio=1)
    for key, text in notes:
        grid.add_row(key, text)
    return grid
