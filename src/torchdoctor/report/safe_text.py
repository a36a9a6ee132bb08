"""Text from a trace, a script or a Record, made safe to print on a terminal.

Such text is someone else's data. An operator name can hold an escape sequence that clears the
screen (`ESC[2J`), writes the clipboard (OSC 52) or recolours the rest of the report, and a rich
console reads `[link=file:///etc/passwd]` inside a name as markup (a live hyperlink). So every
renderer prints such text through one of these, and only through them:
- `clean(text)`: the text as a str without control characters (C0 but newline and tab, DEL, C1),
  without the bidirectional overrides that reorder what the reader sees; `one_line=True` also turns
  newlines and tabs into spaces (for names and table cells, so a name cannot fake a report line);
- `markup(text)`: cleaned and escaped for rich markup, for f-strings printed with markup on;
- `plain(text)`: cleaned, as a rich `Text` (never read as markup), for table cells and lines;
- `for_stream(text, stream)`: cleaned when `stream` is a terminal, unchanged when it is a file or
  a pipe (a diff saved to be applied later keeps every byte of the lines it changes).
Anything that is not a str is written with `str()` first, so a wrongly typed Record field prints.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

from rich.markup import escape
from rich.text import Text

#: C0 controls but tab and newline, DEL, C1 controls, and the bidirectional marks and overrides.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile("[\t\n]")


def clean(text: Any, *, one_line: bool = False, limit: int | None = None) -> str:
    """`text` without control characters; `limit` cuts it to that many characters afterwards."""
    out = _CONTROL.sub("", text if isinstance(text, str) else str(text))
    if one_line:
        out = _BREAKS.sub(" ", out)
    return out if limit is None else out[:limit]


def markup(text: Any, *, one_line: bool = False, limit: int | None = None) -> str:
    """`clean(text)` escaped so rich shows any `[tag]` in it literally; for markup f-strings."""
    return escape(clean(text, one_line=one_line, limit=limit))


def plain(text: Any, style: str = "", *, one_line: bool = False, limit: int | None = None) -> Text:
    """`clean(text)` as a rich Text, which rich never reads as markup."""
    return Text(clean(text, one_line=one_line, limit=limit), style=style)


def cell(text: Any, style: str = "", *, limit: int | None = None) -> Text:
    """A table cell: `plain(text, one_line=True)`; None shows as '-'."""
    return plain("-" if text is None else text, style, one_line=True, limit=limit)


def for_stream(text: Any, stream: TextIO) -> str:
    """`clean(text)` when `stream` is a terminal; the text as it is when it goes to a file or a pipe."""
    isatty = getattr(stream, "isatty", None)
    terminal = bool(isatty and isatty())
    return clean(text) if terminal else (text if isinstance(text, str) else str(text))
