"""Which codes run: `--select`/`--ignore` prefixes and `# noqa` comments."""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchdoctor.errors import TorchDoctorError
from torchdoctor.lint.registry import all_checks

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)


class LintUsageError(TorchDoctorError):
    """Bad lint options or paths: an unknown code prefix, a path that does not exist."""


@dataclass(frozen=True)
class Selection:
    """Codes enabled by `select` (prefixes; empty means all) minus those matched by `ignore`.

    A prefix is `TDL`, a family (`TDL1`) or a code (`TDL101`); one matching no check raises
    :class:`LintUsageError` listing the valid codes.
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        codes = [check.code for check in all_checks()]
        for prefix in (*self.select, *self.ignore):
            if not any(code.startswith(prefix.upper()) for code in codes):
                raise LintUsageError(
                    f"unknown lint code or prefix {prefix!r}; valid codes: {', '.join(codes)}"
                )

    def enabled(self, code: str) -> bool:
        chosen = not self.select or _matches(code, self.select)
        return chosen and not _matches(code, self.ignore)


def suppressed(code: str, line_text: str) -> bool:
    """`line_text` carries `# noqa` (all codes) or `# noqa: CODE[,CODE...]` matching `code`
    (a listed prefix such as `TDL1` matches the whole family)."""
    match = _NOQA.search(line_text)
    if match is None:
        return False
    listed = match.group("codes")
    return listed is None or _matches(code, tuple(re.split(r"\s*,\s*", listed)))


def _matches(code: str, prefixes: tuple[str, ...]) -> bool:
    return any(code.startswith(prefix.upper()) for prefix in prefixes)
