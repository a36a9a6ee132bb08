"""The composition root: every command that observes, analyses, diagnoses, stores and prints is
wired here, one module per command, each a chain of calls into the stages' own packages (nothing
here measures or analyses by itself):

- `diagnose`: observe (or read traces) -> analyse -> rules -> store -> console report;
- `memory`: an observation whose point is the memory window -> store;
- `compile`: the script as written, then eager or compiled variants -> comparison and advice;
- `scale`: one observation per process count -> the scaling analysis;
- `tune`: the search over knobs -> store, progress, report;
- `check`: the performance gate -> progress, baseline store, fork servers, outputs;
- `records`: a stored run (or a Record file) read again, two stored runs compared.

`observation.observe_with_progress` is the one path to observe a script from a command. Modules are
imported on use (the CLI's start-up stays fast), so import the command's own module.
"""

from torchdoctor.workflow.diagnose import DiagnoseOutputs, diagnose_script, diagnose_traces

__all__ = ["DiagnoseOutputs", "diagnose_script", "diagnose_traces"]
