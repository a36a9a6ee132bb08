"""Healthy twin of problems/logging_fstring_tensor.py: the debug line passes the tensors as lazy ``%s`` arguments.

The problem it fixes: Debug log lines built with f-strings of tensors although debug logging is off.

Thread: "Remove f-string in logging statement" (a device tensor had ended up
in an f-string inside a logging call; f-strings are evaluated before the
logger checks the level, so they were changed to lazy ``%s`` arguments),
https://github.com/NVIDIA-NeMo/Emerging-Optimizers/pull/255

Problem: the training loop calls ``log.debug(f"... {logits} ... {grad}")``
every step while the logger is at INFO: nothing is printed, but Python
formats both tensors to strings (``Tensor.__repr__`` walks every element)
before ``debug`` discards the message.
Expected fix: lazy logging arguments, ``log.debug("... %s ...", logits)``,
or guard the line with ``if log.isEnabledFor(logging.DEBUG):``.
"""
import logging
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("train")


def main(steps=80):
    logging.basicConfig(level=logging.INFO)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(64, 32)
        y = torch.randint(0, 10, (64,))
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        log.debug("step %d loss %s logits %s grad %s", step, loss, logits, model[2].weight.grad)
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    log.info("done")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
