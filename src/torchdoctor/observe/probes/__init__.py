"""Child-side probes: each gathers one kind of fact inside the observed process, switched on by
the ObserveConfig (compile: always when torch.compile runs; memory: `memory=True`; distributed
run-time facts: always, cheap). Each hands back a JSON-ready dict that lands in the rank's results;
the analysis of those values lives in the topic's own package (compile, memory, distributed).
"""
