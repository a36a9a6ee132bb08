"""Activation-logging forward hooks registered again at every step and never removed.

Thread: "render_vis becomes slow when used multiple times" (forward hooks
that grab hidden-layer feature maps are not cleaned up, so modules
accumulate hundreds of hooks that all run after every ``forward()``; time
per iteration keeps growing),
https://github.com/greentfrapp/lucent/issues/45

Problem: to log activation statistics the loop calls
``layer.register_forward_hook(record)`` on four layers at every step and
drops the returned handle, so after N steps every forward runs 4N hooks;
the step time grows linearly with the step count.
Expected fix: register the hooks once before the loop (or keep the handles
and call ``handle.remove()`` after use).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

stats = {}


def record(module, inputs, output):
    stats[id(module)] = output.detach().abs().mean()


def main(steps=120):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
    watched = [model[0], model[2], model[4], model[6]]
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        for layer in watched:
            layer.register_forward_hook(record)
        x = torch.randn(32, 32)
        y = torch.randint(0, 4, (32,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 120)
