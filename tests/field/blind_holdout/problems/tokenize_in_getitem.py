"""Raw text tokenised again in ``__getitem__`` every time a sample is read.

Thread: "Can we preprocess the tokenization process to speed up?" (the
training code tokenizes a large set of texts every time, which costs about two
hours; the asker wants to convert them to token ids first and train on those),
https://github.com/huggingface/sentence-transformers/issues/334

Problem: the Dataset keeps raw strings and ``__getitem__`` normalises,
splits and maps each text to vocabulary ids with a pure-Python tokenizer on
every access, so the same texts are tokenised again in every epoch while the
model waits.
Expected fix: pre-tokenize once: convert the whole corpus to a tensor of ids
in ``__init__`` (or cache the token ids) and index it in ``__getitem__``.
"""
import random
import re
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

SEQ = 64
WORDS = [f"Word{i}," if i % 7 == 0 else f"word{i}" for i in range(5000)]
VOCAB = {w.lower().strip(","): i + 1 for i, w in enumerate(WORDS)}


def tokenize(text):
    text = re.sub(r"[^a-z0-9 ]", " ", text.lower())
    ids = [VOCAB.get(w, 0) for w in text.split()][:SEQ]
    return torch.tensor(ids + [0] * (SEQ - len(ids)))


class Reviews(Dataset):
    def __init__(self, texts, labels):
        self.texts = texts
        self.labels = torch.tensor(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return tokenize(self.texts[i]), self.labels[i]


def main(steps=100):
    rng = random.Random(0)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(20, 60))) for _ in range(20000)]
    labels = [len(t) % 2 for t in texts]
    torch.manual_seed(0)
    loader = DataLoader(Reviews(texts, labels), batch_size=64, shuffle=True)
    model = nn.Sequential(nn.EmbeddingBag(len(VOCAB) + 1, 64, padding_idx=0), nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    batches = iter(loader)
    for step in range(steps):
        t0 = time.perf_counter()
        ids, y = next(batches)
        loss = F.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
