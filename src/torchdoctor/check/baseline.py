"""Stored baselines (`torchdoctor check --save-baseline NAME` and `--baseline NAME`): the document
(one side's per-observation figures and its machine's fingerprint), checked when read, kept as a
JSON file next to the code (NAME ends in .json or holds a path) or in a `BaselineStore`."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import orjson

from torchdoctor.check.figures import fingerprint
from torchdoctor.environment import Environment
from torchdoctor.errors import CheckError
from torchdoctor.inputs import read_capped
from torchdoctor.jsonguard import BASELINE_LIMITS, JsonBoundError, loads_bounded

BASELINE_SCHEMA_VERSION = 2
BASELINE_KIND = "torchdoctor.check.baseline"
#: A baseline holds a few figures per phase; a larger file is not one and is not read whole.
MAX_BASELINE_BYTES = 32 * 1024 * 1024


class BaselineStore(Protocol):
    """Where named baselines are kept (`torchdoctor.store.RunStore` is one); `path` names it in messages."""

    path: Path

    def save_baseline(self, name: str, document: dict[str, Any]) -> None: ...
    def load_baseline(self, name: str) -> dict[str, Any] | None: ...
    def baselines(self) -> list[str]: ...


#: Opens the baseline store for one use (a `with` block), only when a baseline lives there.
StoreOpener = Callable[[], AbstractContextManager[BaselineStore]]


@dataclass(frozen=True, slots=True)
class BaselineOrigin:
    """Where a baseline was measured: its name, the script and arguments, when, and the commit of
    the tree (None outside a git repository) with whether it had uncommitted changes."""

    name: str
    script: str
    argv: Sequence[str]
    created_at: str
    commit: str | None
    dirty: bool


def baseline_document(origin: BaselineOrigin, env: Environment, settings: dict[str, Any],
                      observations: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A stored baseline: the per-observation figures of one side and its environment fingerprint.
    `noise` is the difference of the medians of its two halves (interleaved), a floor for later checks."""
    steps = [o["step_s"] for o in observations if o.get("step_s")]
    noise = None
    if len(steps) >= 4:
        first, second = float(np.median(steps[0::2])), float(np.median(steps[1::2]))
        noise = abs(second / first - 1.0)
    return {
        "schema_version": BASELINE_SCHEMA_VERSION, "kind": BASELINE_KIND, "name": origin.name,
        "created_at": origin.created_at, "script": origin.script, "argv": list(origin.argv), "commit": origin.commit,
        "dirty": origin.dirty,
        "fingerprint": fingerprint(env), "settings": dict(settings), "noise": noise,
        "observations": list(observations),
    }  # fmt: skip


def read_baseline(data: Any, where: str) -> dict[str, Any]:
    """Check a loaded baseline document; raises ValueError with what is wrong."""
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise ValueError(f"{where} is not a torchdoctor check baseline (no kind {BASELINE_KIND!r})")
    version = data.get("schema_version")
    if version == 1:
        raise ValueError(f"{where} was recorded by an older torchdoctor, with each observation's median step; "
                         "the gate now compares mean steps (the pace), so record the baseline again "
                         "(--save-baseline)")
    if version != BASELINE_SCHEMA_VERSION:
        raise ValueError(f"{where} has baseline schema_version {version!r}; this torchdoctor reads "
                         f"{BASELINE_SCHEMA_VERSION}")
    if not [o for o in data.get("observations") or [] if o.get("step_s")]:
        raise ValueError(f"{where} holds no measured observation")
    return data


def baseline_source(name: str) -> str:
    """'file' for a JSON file next to the code (NAME ends in .json or holds a path), else 'store'."""
    return "file" if name.endswith(".json") or "/" in name or os.sep in name else "store"


def write_baseline(name: str, document: dict[str, Any], open_store: StoreOpener) -> str:
    """Keep `document` as NAME (a file or the store); returns where it went, for the reason."""
    if baseline_source(name) == "file":
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        return str(Path(name))
    with open_store() as store:
        store.save_baseline(name, document)
        return f"{store.path} (baseline {name!r})"


def load_baseline(name: str, open_store: StoreOpener) -> dict[str, Any]:
    """The baseline NAME, checked (`read_baseline`); CheckError (kind "bad_baseline") when it cannot
    be read, breaks the bounds on its JSON (`jsonguard.BASELINE_LIMITS`), is missing or is not one."""
    data = _baseline_file(name) if baseline_source(name) == "file" else _stored_baseline(name, open_store)
    try:
        return read_baseline(data, f"baseline {name}")
    except ValueError as exc:
        raise CheckError(str(exc), kind="bad_baseline") from None


def _baseline_file(name: str) -> Any:
    try:
        return loads_bounded(read_capped(name, MAX_BASELINE_BYTES), BASELINE_LIMITS)
    except OSError as exc:
        raise CheckError(f"cannot read baseline {name}: {exc.strerror}", kind="bad_baseline") from None
    except (JsonBoundError, orjson.JSONDecodeError) as exc:
        raise CheckError(f"baseline {name} is not JSON within bounds: {exc}", kind="bad_baseline") from None


def _stored_baseline(name: str, open_store: StoreOpener) -> Any:
    with open_store() as store:
        data = store.load_baseline(name)
        if data is None:
            known = store.baselines()
            listed = ", ".join(known) if known else "none yet"
            raise CheckError(f"no baseline {name!r} in {store.path} (stored: {listed}); record one with "
                             f"`torchdoctor check --save-baseline {name} -- SCRIPT`", kind="bad_baseline")
    return data
