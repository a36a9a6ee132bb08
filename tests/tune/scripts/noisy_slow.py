"""A training loop without a seed (its loss differs run to run) and slow steps (40 ms of sleep),
so that a test can interrupt a tuning session in the middle of a trial.

With `MARKER HOLD` arguments, each run appends a line to the file MARKER once it has run 4 steps
(inside the timing window of `--warmup-steps 2`), and run number HOLD (1-based) then holds its
step open until it is interrupted: a test waits for that line, then presses Ctrl-C, knowing the
trial is running whatever the machine's load."""

import sys
import time

import torch
from torch import nn

marker, hold = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 2 else (None, 0)
model = nn.Linear(16, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(10_000):
    x = torch.randn(32, 16)
    optimizer.zero_grad()
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    loss.backward()
    optimizer.step()
    time.sleep(0.04)
    if marker and step == 3:
        with open(marker, "a+", encoding="utf-8") as runs:
            runs.seek(0)
            run = runs.read().count("\n") + 1
            runs.write(f"run {run} is in its timing window\n")
        while run == hold:  # until Ctrl-C (KeyboardInterrupt) ends the trial
            time.sleep(1)
