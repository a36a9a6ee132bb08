"""A training loop whose custom activation is a Python loop of tiny operators (the case
torch.compile fuses). With `COUNTER N` arguments, each run appends a line to the file COUNTER as
it starts, and the first N runs sleep 50 ms in each step: a disturbed baseline, the same for
every machine, that a test can ask for without loading the machine."""

import sys
import time

import torch
from torch import nn

counter, disturbed = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 2 else (None, 0)
run = 0
if counter:
    with open(counter, "a+", encoding="utf-8") as runs:
        runs.seek(0)
        run = runs.read().count("\n") + 1
        runs.write(f"run {run}\n")


class LoopActivation(nn.Module):
    """x * sigmoid(x), approximated term by term: many tiny elementwise operators."""

    def forward(self, x):
        out = x
        for k in range(1, 12):
            out = out + torch.tanh(x * (0.1 * k)) * (0.01 / k)
        return out


model = nn.Sequential(nn.Linear(16, 16), LoopActivation(), nn.Linear(16, 16), LoopActivation(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(100_000):
    x = torch.randn(8, 16)
    optimizer.zero_grad()
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    loss.backward()
    optimizer.step()
    if run and run <= disturbed:
        time.sleep(0.05)
