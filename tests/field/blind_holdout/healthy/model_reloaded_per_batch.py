"""Healthy twin of problems/model_reloaded_per_batch.py: the model is built and loaded once, before the request loop.

The problem it fixes: An inference function that rebuilds the model and reloads its weights per call.

Thread: "Dramatically Speed Up Your Python Scripts! A Strategy to Avoid
Reloading Machine Learning Models" (a Stack Overflow question: the function
that embeds each post loads a 1 GB model from disk on every call, 10-12 s
each; the fix keeps the model in memory and reuses it),
https://openillumi.com/en/en-python-ml-speed-model-reload-fix

Problem: ``predict(batch)`` constructs the network and calls
``torch.load`` on its checkpoint for every request, so each small batch pays
for parameter initialisation, file reading and ``load_state_dict`` before its
forward pass.
Expected fix: load the model once at start-up (outside the request loop),
keep it in memory in eval mode and reuse it for every request.
"""
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 8))


def load(path):
    model = build()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()


def predict(model, batch):
    with torch.inference_mode():
        return model(batch).argmax(-1)


def main(steps=80):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.pt"
        torch.save(build().state_dict(), path)
        model = load(path)
        requests = torch.Generator().manual_seed(1)
        times = []
        for step in range(steps):
            t0 = time.perf_counter()
            batch = torch.randn(16, 512, generator=requests)
            labels = predict(model, batch)
            times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"last labels: {labels[:4].tolist()}")
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
