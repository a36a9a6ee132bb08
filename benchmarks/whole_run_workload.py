"""Workload for whole_run.py: a training loop with known costs, each timed by the script itself.

`python whole_run_workload.py TRUTH.json [--epochs E] [--batches B] [--eval-every N]
[--ckpt-every M] [--leak-mb X] [--slow-first-epoch-ms S]`: an MLP trained from a DataLoader for E
epochs of B batches; every N steps an evaluation pass (no_grad, 40 batches), every M steps a
checkpoint (torch.save of the model and a 4 MiB buffer to a temporary file), X MiB kept alive a
step (a leak), and S ms of extra waiting in every step of the first epoch. The script times each
of those itself and writes each evaluation's and checkpoint's step and time, the first epoch's extra
work and its steps' own times to TRUTH.json at its end.
"""

import argparse
import atexit
import json
import os
import tempfile
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("truth")
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batches", type=int, default=400)
parser.add_argument("--eval-every", type=int, default=0)
parser.add_argument("--ckpt-every", type=int, default=0)
parser.add_argument("--leak-mb", type=float, default=0.0)
parser.add_argument("--slow-first-epoch-ms", type=float, default=0.0)
opts = parser.parse_args()

torch.set_num_threads(1)
torch.manual_seed(0)
data = TensorDataset(torch.randn(opts.batches * 32, 128), torch.randn(opts.batches * 32, 1))
loader = DataLoader(data, batch_size=32)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
truth = {"eval_s": [], "ckpt_s": [], "slow_epoch_s": 0.0, "step_s": [], "leak_mb": opts.leak_mb,
         "epochs": opts.epochs}
kept = []
folder = tempfile.mkdtemp()
atexit.register(lambda: json.dump(truth, open(opts.truth, "w")))


def evaluate(step):
    start = time.perf_counter()
    model.eval()
    with torch.no_grad():
        for _ in range(40):
            model(torch.randn(512, 128))  # evaluation line
    model.train()
    truth["eval_s"].append([step, time.perf_counter() - start])


def save_checkpoint(step):
    start = time.perf_counter()
    state = {"model": model.state_dict(), "buffer": torch.randn(2**20), "step": step}
    torch.save(state, os.path.join(folder, "checkpoint.pt"))  # checkpoint line
    os.sync()
    truth["ckpt_s"].append([step, time.perf_counter() - start])


def extra_work(ms):
    start = time.perf_counter()
    time.sleep(ms / 1e3)  # a wait (cold storage, a cache being filled), not compute
    truth["slow_epoch_s"] += time.perf_counter() - start


step = 0
for epoch in range(opts.epochs):
    last = time.perf_counter()
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        if epoch == 0 and opts.slow_first_epoch_ms:
            extra_work(opts.slow_first_epoch_ms)
        if opts.leak_mb:
            kept.append(torch.ones(int(opts.leak_mb * 2**18)))
        step += 1
        now = time.perf_counter()
        truth["step_s"].append(now - last)
        if opts.eval_every and step % opts.eval_every == 0:
            evaluate(step)
        if opts.ckpt_every and step % opts.ckpt_every == 0:
            save_checkpoint(step)
        last = time.perf_counter()
