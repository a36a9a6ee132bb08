"""Does batching a TensorDataset's fetch (TD-DATA-011's fix) pay on the blind corpora's healthy
twins that still fetch row by row? In one process, alternate steps of the twin's model fed by its
DataLoader batching the TensorDataset row by row (A) and by a BatchSampler fetching each batch in
one indexing call (B); median step times, the first 20 of each left out.

    python benchmarks/twin_fix_batched_fetch.py inference|newiter [THREADS]

`inference`: tests/field/blind/healthy/inference_one_at_a_time.py's model and data;
`newiter`: tests/field/blind_holdout/healthy/new_iterator_every_step.py's. THREADS: intra-op
threads (default: torch's).
"""
import statistics, sys, time
import torch, torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, BatchSampler, RandomSampler, SequentialSampler

def loop(loader):
    while True:
        for b in loader:
            yield b

def inference():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2)).eval()
    ds = TensorDataset(torch.randn(25600, 64))
    a = loop(DataLoader(ds, batch_size=256))
    b = loop(DataLoader(ds, sampler=BatchSampler(SequentialSampler(ds), 256, False), batch_size=None))
    def step(it):
        with torch.inference_mode():
            (x,) = next(it); model(x).softmax(-1)[:, 1]
    return step, a, b

def newiter():
    torch.manual_seed(0)
    x = torch.randn(1_000_000, 8); data = TensorDataset(x, (x[:, 0] > 0).long())
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2)); opt = torch.optim.SGD(model.parameters(), lr=0.05)
    a = loop(DataLoader(data, batch_size=64, shuffle=True))
    b = loop(DataLoader(data, sampler=BatchSampler(RandomSampler(data), 64, False), batch_size=None))
    def step(it):
        xb, yb = next(it); loss = F.cross_entropy(model(xb), yb); opt.zero_grad(); loss.backward(); opt.step()
    return step, a, b

if len(sys.argv) > 2:
    torch.set_num_threads(int(sys.argv[2]))
step, a, b = {"inference": inference, "newiter": newiter}[sys.argv[1]]()
ta, tb = [], []
for i in range(300):
    for it, out in ((a, ta), (b, tb)) if i % 2 else ((b, tb), (a, ta)):
        t0 = time.perf_counter(); step(it); out.append(time.perf_counter() - t0)
ma, mb = statistics.median(ta[20:]), statistics.median(tb[20:])
print(f"{sys.argv[1]} ({torch.get_num_threads()} threads): row by row {ma*1e3:.3f} ms, batched fetch {mb*1e3:.3f} ms, saving {1 - mb/ma:.0%}")
