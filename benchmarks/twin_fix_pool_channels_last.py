"""Does TD-COMP-004's hot max_pool2d on a small CNN leave anything to win? In one process,
alternate training steps of tests/field/blind/healthy/tensor_from_list_of_arrays.py's model in
NCHW (A) and in channels_last (B, the usual fix of a slow CPU max_pool2d); median step times, the
first 20 of each left out.

    python benchmarks/twin_fix_pool_channels_last.py [THREADS]
"""
import copy, statistics, sys, time
import torch, torch.nn.functional as F
from torch import nn
if len(sys.argv) > 1:
    torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
a = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 16 * 16, 8))
b = copy.deepcopy(a).to(memory_format=torch.channels_last)
oa, ob = torch.optim.Adam(a.parameters(), lr=1e-3), torch.optim.Adam(b.parameters(), lr=1e-3)
x, y = torch.randn(64, 1, 32, 32), torch.randint(0, 8, (64,))
xb = x.contiguous(memory_format=torch.channels_last)
def step(m, o, x):
    loss = F.cross_entropy(m(x), y); o.zero_grad(); loss.backward(); o.step()
ta, tb = [], []
for i in range(200):
    for m, o, xx, out in ((a, oa, x, ta), (b, ob, xb, tb)) if i % 2 else ((b, ob, xb, tb), (a, oa, x, ta)):
        t0 = time.perf_counter(); step(m, o, xx); out.append(time.perf_counter() - t0)
ma, mb = statistics.median(ta[20:]), statistics.median(tb[20:])
print(f"pool ({torch.get_num_threads()} threads): NCHW {ma*1e3:.3f} ms, channels_last {mb*1e3:.3f} ms, saving {1 - mb/ma:.0%}")
