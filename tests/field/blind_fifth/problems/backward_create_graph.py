"""A plain training loop calling ``loss.backward(create_graph=True)``.

Thread: "backward(create_graph=True) should raise a warning for potential memory
leak", https://github.com/pytorch/pytorch/issues/4661

Problem: the loop was copied from a gradient-penalty example and keeps
``loss.backward(create_graph=True)`` although no second-order gradient is ever
taken. Autograd then records the backward pass itself as a differentiable
graph: every backward op saves its inputs and builds nodes, the gradients in
``.grad`` carry ``grad_fn`` history, and each parameter and its gradient form a
reference cycle (the memory leak the thread's warning is about).
Expected fix: call ``loss.backward()`` (``create_graph`` only when a
higher-order gradient is needed, and then with ``torch.autograd.grad``).
"""
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40


def main(steps=STEPS):
    torch.manual_seed(0)
    warnings.simplefilter("ignore")
    model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(256, 256), nn.Tanh())],
                          nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    x = torch.randn(256, 256)
    y = torch.randint(0, 10, (256,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward(create_graph=True)
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
