"""Far more intra-op threads than cores.

Thread: "Better performance without OMP",
https://github.com/pytorch/pytorch/issues/3146 (a small model trains faster
with one thread than with the OpenMP default; see also the oversubscription
explanation in https://github.com/pytorch/pytorch/issues/19163)

Problem: the script hard-codes ``torch.set_num_threads(32)`` (copied from a
large server's config), so on a small machine every operator is split over
many more threads than there are cores and the threads fight for them.
Expected fix: leave the thread count at its default or set it to the number
of physical cores (``torch.set_num_threads(os.cpu_count())`` at most).
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

torch.set_num_threads(32)


def main(steps=80):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x_all = torch.randn(8192, 256)
    y_all = torch.randint(0, 10, (8192,))
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(x_all), (128,))
        loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"threads: {torch.get_num_threads()}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
