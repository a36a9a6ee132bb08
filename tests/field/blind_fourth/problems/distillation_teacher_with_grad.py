"""A distillation teacher run with autograd on, its logits not detached.

Thread: "torch.no_grad() is impotant?",
https://github.com/clovaai/overhaul-distillation/issues/34

Problem: the student is trained against a frozen-by-intent teacher (never given
to the optimizer), but ``t_logits = teacher(x)`` runs outside
``torch.no_grad()`` and the loss uses ``t_logits`` as is: autograd records the
teacher's forward pass, keeps its activations, and every ``loss.backward()``
also back-propagates through the (eight times larger) teacher and computes
gradients for all its weights, which nobody uses.
Expected fix: compute the teacher's outputs under ``torch.no_grad()`` (or
``torch.inference_mode()``), or ``detach()`` them and set
``requires_grad_(False)`` on the teacher.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS = 60


def mlp(width, depth):
    layers = [nn.Linear(128, width), nn.ReLU()]
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def main(steps=STEPS):
    torch.manual_seed(0)
    teacher = mlp(512, 3).eval()
    student = mlp(256, 1)
    opt = torch.optim.SGD(student.parameters(), lr=0.05)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x = torch.randn(256, 128)
        t_logits = teacher(x)
        s_logits = student(x)
        loss = F.kl_div(F.log_softmax(s_logits, -1), F.softmax(t_logits / 2, -1),
                        reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
