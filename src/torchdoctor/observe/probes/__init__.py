"""Child-side probes: each gathers one kind of fact inside the observed process.

Two kinds live here. The session's own instruments, switched on by the ObserveConfig (compile:
always when torch.compile runs; memory: `memory=True`; distributed run-time facts: always, cheap),
hand back JSON-ready dicts for their own Record sections, analysed in the topic's package (compile,
memory, distributed). The registered probes (base.py: one module each, found by module scan, run
by runner.py after the timing windows) leave their values in `Record.probes` under their names.
"""
