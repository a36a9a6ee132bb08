"""Rewrite the JSON-schema snapshots that tests/test_json_schemas.py compares every command against.

Run only when a schema change is deliberate and documented (the command's page in docs/, and its
`schema_version` when a key is renamed or removed): the snapshots are what keeps the CLI's JSON, a
public interface, from changing by accident, so regenerating them to make a failing test pass
defeats the test. From the repository root:

    python -m tests.json_schema_snapshots               # every command (a few minutes)
    python -m tests.json_schema_snapshots tune compile  # only these (names: the fixtures' file names)
    python -m tests.json_schema_snapshots --runs 3 tune # the union of 3 runs' shapes

Each command runs exactly as the test runs it (same functions, same settings), and
`tests/fixtures/json_schemas/<command>.json` gets its shape. With `--runs N` the shape is the
union over N runs: a value seen in one run and null in another is a nullable value, a key seen in
only some runs is optional ("absent"), so what varies from run to run shows in the diff. Printed
for review: the paths where no run met a value (null or empty lists only: the test cannot check
their type; `tune` keeps its knob only on some runs, hence its `--runs`), and the data-keyed paths
listed in the test module that no document contained. Review `git diff tests/fixtures/json_schemas`
before committing it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tests.test_json_schemas import COMMANDS, REPO_ROOT, Runs, snapshot_of, write_snapshot


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commands", nargs="*", metavar="COMMAND", help=f"default: all of {', '.join(COMMANDS)}")
    parser.add_argument("--runs", type=int, default=1, help="runs of each command whose shapes are united")
    options = parser.parse_args(argv)
    names = options.commands or list(COMMANDS)
    unknown = [name for name in names if name not in COMMANDS]
    if unknown:
        parser.error(f"unknown command(s) {', '.join(unknown)}; choose from {', '.join(COMMANDS)}")
    started = time.perf_counter()
    documents: dict[str, list] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="json-schemas-") as work:
        for run in range(options.runs):
            runs = Runs(Path(work) / f"run-{run}", {COMMANDS[name].group for name in names})
            try:
                for name in names:
                    documents[name].append(runs.document(name))
            finally:
                runs.close()
    for name in names:
        fixture, unmatched = snapshot_of(name, documents[name])
        path = write_snapshot(fixture)
        print(f"wrote {path.relative_to(REPO_ROOT)}")
        if fixture["unchecked"]:
            print(f"  no value seen (unchecked): {', '.join(fixture['unchecked'])}")
        if unmatched:
            print(f"  listed paths not in its documents: {', '.join(unmatched)}")
    print(f"{len(names)} snapshot(s) from {options.runs} run(s) in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
