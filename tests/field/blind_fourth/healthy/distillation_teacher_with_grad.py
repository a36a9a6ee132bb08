"""Healthy twin of problems/distillation_teacher_with_grad.py: the teacher runs
under ``torch.no_grad()``.

The problem it fixes: A distillation teacher run with autograd on, its logits
not detached.
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
        with torch.no_grad():
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
