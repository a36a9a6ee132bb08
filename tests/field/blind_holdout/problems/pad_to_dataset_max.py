"""Every batch padded to the longest sequence in the dataset, not in the batch.

Thread: "Dynamic Padding Strategies" (padding every sequence to a fixed
global maximum wastes most of each batch on padding tokens; padding to the
longest sequence of each batch cuts computation time),
https://theneuralbase.com/tokenization/learn/advanced/dynamic-padding-strategies/

Problem: the collate function pads every batch of token sequences to
the dataset's maximum length (256) although most sequences are a few dozen
tokens long, so the Transformer encoder spends most of each step on padding.
Expected fix: dynamic padding: pad each batch to its own longest sequence
(``pad_sequence`` in ``collate_fn``), keeping the key padding mask.
"""
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

VOCAB = 1000
MAX_LEN = 256


def collate(batch):
    seqs, labels = zip(*batch)
    width = MAX_LEN
    tokens = torch.zeros(len(seqs), width, dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, :len(s)] = s
    return tokens, tokens == 0, torch.stack(labels)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64, padding_idx=0)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 2)

    def forward(self, tokens, pad):
        h = self.encoder(self.embed(tokens), src_key_padding_mask=pad)
        h = h.masked_fill(pad.unsqueeze(-1), 0.0).sum(1) / (~pad).sum(1, keepdim=True)
        return self.head(h)


def main(steps=40):
    torch.manual_seed(0)
    lengths = (torch.distributions.Exponential(1 / 30).sample((4000,)) + 4).clamp(max=MAX_LEN).long()
    data = [(torch.randint(1, VOCAB, (int(n),)), torch.tensor(int(n) % 2)) for n in lengths]
    loader = DataLoader(data, batch_size=32, shuffle=True, collate_fn=collate)
    model = Encoder()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    batches = iter(loader)
    for step in range(steps):
        t0 = time.perf_counter()
        tokens, pad, labels = next(batches)
        loss = F.cross_entropy(model(tokens, pad), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
