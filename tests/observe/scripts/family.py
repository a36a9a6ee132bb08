"""Trains slowly with two helper processes of its own: one in its process group, one in a session
of its own (as torchrun starts its ranks). Prints `HELPERS pid pid` at once and `READY pid` at the
end of step N (argv[1]); then, with argv[2] == "segv", crashes with a segmentation fault, with
"ignore", ignores SIGINT, SIGTERM and SIGHUP from then on; otherwise it trains on until stopped."""
import os
import signal
import subprocess
import sys
import time

import torch

until = int(sys.argv[1]) if len(sys.argv) > 1 else 4
then = sys.argv[2] if len(sys.argv) > 2 else "train"
# Helpers die quietly on SIGINT, as most programs do (no KeyboardInterrupt traceback), and say
# when they are up (a stop during Python's start-up would be a fatal error on stderr).
sleeper = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); "
           "print('up', flush=True); time.sleep(600)"]
helpers = [subprocess.Popen(sleeper, stdout=subprocess.PIPE),
           subprocess.Popen(sleeper, stdout=subprocess.PIPE, start_new_session=True)]
for helper in helpers:
    helper.stdout.readline()
print("HELPERS", *(helper.pid for helper in helpers), flush=True)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
while True:
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    step += 1
    if step == until:
        if then == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if then == "ignore":
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
        print("READY", os.getpid(), flush=True)
    time.sleep(0.02)
