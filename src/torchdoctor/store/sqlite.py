"""Every run in one SQLite file (default `.torchdoctor/runs.db` under the current folder).

Table `runs` keeps the searchable columns beside the whole Record as JSON; a Record from an older
schema is upgraded when loaded (record.upgrade). Table `trials` keeps the tuner's trials, table
`baselines` the baselines of `torchdoctor check --save-baseline NAME` (one JSON document a name).

Faults are StoreErrors that say what to do, never sqlite tracebacks: a store that cannot be
created or written (read-only folder or file), and a damaged one (a valid header over corrupted
pages), which is found by `PRAGMA quick_check` when the store is opened, before anything is read
from or written to it (writing into a damaged file would spread the damage).
"""

from __future__ import annotations

import functools
import stat
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import orjson

from torchdoctor.errors import StoreError
from torchdoctor.inputs import file_kind
from torchdoctor.jsonguard import BASELINE_LIMITS, JsonBoundError, loads_bounded
from torchdoctor.outputs import dumps_json, encodable_text
from torchdoctor.record import Record, RunRow
from torchdoctor.store.folder import OWN_FOLDER, make_store_folder

DEFAULT_STORE = Path(OWN_FOLDER) / "runs.db"


def run_dir_for(store_path: str | Path, run_id: str) -> Path:
    """Artefacts (traces, per-rank results) of a run live beside the store that indexes it;
    StoreError when the store path is not one (`check_store_path`), so nothing is made beside
    a device or a folder."""
    check_store_path(Path(store_path))
    return Path(store_path).parent / "runs" / run_id


def check_store_path(path: Path) -> None:
    """StoreError unless `path` is a regular file or does not exist yet (`--store /dev/null`
    would otherwise write runs into /dev/runs/)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # absent (made on first save) or unreachable (opening it says why)
    if not stat.S_ISREG(mode):
        raise StoreError(f"the run store {path} is {file_kind(mode)}, not a regular file: pass --store with a "
                         "path to an SQLite file (it is made if absent)")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    script TEXT,
    argv TEXT NOT NULL,
    exit_status INTEGER NOT NULL,
    exit_reason TEXT NOT NULL,
    step_s REAL,
    samples_per_s REAL,
    tag TEXT,
    record BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at);
CREATE TABLE IF NOT EXISTS trials (
    tune_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    run_id TEXT,
    knobs TEXT NOT NULL,
    verdict TEXT,
    reason TEXT,
    figures TEXT NOT NULL,
    PRIMARY KEY (tune_id, trial)
);
CREATE TABLE IF NOT EXISTS baselines (
    name TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    document BLOB NOT NULL
);
"""


_T = TypeVar("_T")


def _store_errors(method: Callable[..., _T]) -> Callable[..., _T]:
    """sqlite's errors from a store operation become a StoreError that names the store."""

    @functools.wraps(method)
    def guarded(self: RunStore, *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise self._fault(exc) from None

    return guarded


class RunStore:
    def __init__(self, path: str | Path = DEFAULT_STORE, *, create: bool = True) -> None:
        """Open the store at `path`, made (with its folder) when absent and `create`; a command
        that only reads passes create=False and gets a StoreError instead of a new empty store."""
        self.path = Path(path)
        check_store_path(self.path)
        if not create and not self.path.exists():
            raise StoreError(f"no run store at {self.path}: nothing was saved there (pass --store PATH)")
        try:
            make_store_folder(self.path.parent)
            self._db = sqlite3.connect(self.path)
        except (OSError, sqlite3.Error) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise StoreError(f"cannot open the run store {self.path}: {reason}") from None
        try:
            self._check_intact()
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise self._fault(exc) from None

    def _check_intact(self) -> None:
        problems = [str(row[0]) for row in self._db.execute("PRAGMA quick_check(1)").fetchall()]
        if problems != ["ok"]:
            first = " ".join(" ".join(problems).split()).replace("*** in database main *** ", "")
            raise sqlite3.DatabaseError(f"database disk image is malformed: {first}")

    def _fault(self, exc: sqlite3.DatabaseError) -> StoreError:
        text = str(exc)
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            return StoreError(f"cannot write the run store {self.path}: {text} (check the permissions of it and its "
                              "folder, or pass --store PATH)")
        if isinstance(exc, sqlite3.OperationalError) and "malformed" not in text:
            return StoreError(f"the run store {self.path} failed: {text}")
        return StoreError(f"the run store {self.path} is damaged ({text}); move it aside (e.g. `mv {self.path} "
                          f"{self.path}.damaged`) and torchdoctor starts a new one; `sqlite3 {self.path}.damaged "
                          ".recover` may save its runs")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @_store_errors
    def save(self, record: Record, *, tag: str | None = None) -> str:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.run_id, record.created_at, record.kind, record.script and encodable_text(record.script),
                    dumps_json(record.argv).decode(), record.exit.status, record.exit.reason,
                    record.summary.step_s, record.summary.samples_per_s, tag, record.to_json(),
                ),
            )
        return record.run_id

    @_store_errors
    def resolve(self, run_id: str) -> str:
        """Full id from an id or a unique prefix of one ('last' is the newest run)."""
        if run_id == "last":
            row = self._db.execute("SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError(f"the run store {self.path} holds no runs yet")
            return row[0]
        rows = self._db.execute(
            "SELECT run_id FROM runs WHERE run_id = ? OR run_id LIKE ? ESCAPE '\\'",
            (run_id, run_id.replace("%", "\\%").replace("_", "\\_") + "%"),
        ).fetchall()
        ids = sorted({r[0] for r in rows})
        if run_id in ids:
            return run_id
        if not ids:
            raise StoreError(f"no run {run_id!r} in {self.path}; `torchdoctor runs list` shows the ids")
        if len(ids) > 1:
            raise StoreError(f"run id prefix {run_id!r} is ambiguous: {', '.join(ids[:5])}")
        return ids[0]

    @_store_errors
    def load(self, run_id: str) -> Record:
        full = self.resolve(run_id)
        (blob,) = self._db.execute("SELECT record FROM runs WHERE run_id = ?", (full,)).fetchone()
        return Record.from_json(blob)

    @_store_errors
    def list(self, limit: int = 20) -> list[RunRow]:
        rows = self._db.execute(
            "SELECT run_id, created_at, kind, script, argv, exit_status, exit_reason, step_s, "
            "samples_per_s, tag FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [run_row(row) for row in rows]

    # -- tuner trials ----------------------------------------------------------------------
    @_store_errors
    def save_trial(self, tune_id: str, trial: int, *, run_id: str | None, knobs: dict[str, Any],
                   verdict: str | None, reason: str | None, figures: dict[str, Any]) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO trials VALUES (?,?,?,?,?,?,?)",
                (tune_id, trial, run_id, orjson.dumps(knobs).decode(), verdict, reason,
                 orjson.dumps(figures).decode()),
            )

    @_store_errors
    def trials(self, tune_id: str) -> list[dict[str, Any]]:
        return list(self._trials(tune_id))

    def _trials(self, tune_id: str) -> Iterator[dict[str, Any]]:
        for row in self._db.execute(
            "SELECT trial, run_id, knobs, verdict, reason, figures FROM trials WHERE tune_id = ? ORDER BY trial",
            (tune_id,),
        ):
            yield {"trial": row[0], "run_id": row[1], "knobs": orjson.loads(row[2]), "verdict": row[3],
                   "reason": row[4], "figures": orjson.loads(row[5])}

    # -- check baselines ---------------------------------------------------------------------
    @_store_errors
    def save_baseline(self, name: str, document: dict[str, Any]) -> None:
        """Keep a `torchdoctor check` baseline under `name` (replacing one of the same name)."""
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO baselines VALUES (?,?,?)",
                             (name, document.get("created_at", ""), orjson.dumps(document)))

    @_store_errors
    def load_baseline(self, name: str) -> dict[str, Any] | None:
        """The baseline saved as `name`, None when there is none; StoreError when its document
        is not JSON within BASELINE_LIMITS (a damaged or hand-edited store)."""
        row = self._db.execute("SELECT document FROM baselines WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        try:
            return loads_bounded(bytes(row[0]), BASELINE_LIMITS)
        except (JsonBoundError, orjson.JSONDecodeError) as exc:
            raise StoreError(f"baseline {name!r} in the run store {self.path} is unreadable ({exc}); save it again "
                             f"with `torchdoctor check --save-baseline {name} -- SCRIPT`") from None

    @_store_errors
    def baselines(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT name FROM baselines ORDER BY name")]


#: The runs table's columns that `runs list` reads, in order, with the types they must hold.
_ROW_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("run_id", (str,)), ("created_at", (str,)), ("kind", (str,)), ("script", (str, type(None))),
    ("argv", (str, bytes)), ("exit_status", (int,)), ("exit_reason", (str,)),
    ("step_s", (int, float, type(None))), ("samples_per_s", (int, float, type(None))), ("tag", (str, type(None))),
)  # fmt: skip


def run_row(columns: Sequence[Any]) -> RunRow:
    """One line of `runs list` from the runs table's columns; a row damaged outside torchdoctor (text
    in a number column, `argv` that is not a JSON list of strings) becomes a RunRow that says so,
    its columns as text, so that the other runs are still listed."""
    wrong = [name for (name, types), value in zip(_ROW_TYPES, columns) if not isinstance(value, types)]
    argv: Any = None
    if "argv" not in wrong:
        try:
            argv = orjson.loads(columns[4])
        except orjson.JSONDecodeError:
            pass
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            wrong.append("argv")
    if not wrong:
        return RunRow(*columns[:4], argv, *columns[5:])
    text = ["" if value is None else str(value) for value in columns]
    return RunRow(text[0], text[1], text[2], text[3] or None, [], 0, text[6], None, None, text[9] or None,
                  damaged=f"damaged row: {', '.join(name for name, _ in _ROW_TYPES if name in wrong)} of the wrong type")
