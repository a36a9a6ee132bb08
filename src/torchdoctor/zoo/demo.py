"""Demo workload: fine-tuning a small BERT-style text classifier whose data pipeline is the bottleneck.

The classic case from the tuning guides: every sample is cleaned and tokenised in Python inside
`Dataset.__getitem__` (regular expressions, Unicode normalisation, character n-gram hashing), the
DataLoader runs it in the training process (`num_workers=0`), and the model waits. Text is
generated from a seed, so nothing is downloaded.

Known problem: data loading takes the largest share of each step (rule family TD-DATA).
The model trains on the GPU when CUDA is available (then the GPU idles while the main process
loads), else on the CPU; `--device` chooses. Run it alone with `python demo.py [--epochs N]`.
"""

from __future__ import annotations

import argparse
import random
import re
import unicodedata
import zlib

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

VOCAB_SIZE = 4096
SEQ_LEN = 64
NUM_CLASSES = 4
_WORDS = [
    "model", "tensor", "gradient", "kernel", "batch", "layer", "loss", "token", "device", "memory",
    "Attention", "SPEED", "profile", "compile", "optimiser", "fusion", "cache", "thread", "queue",
    "stream", "latency", "throughput", "café", "naïve", "résumé", "data", "loader", "worker",
]
_PUNCT = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


def generate_text(index: int) -> tuple[str, int]:
    """A reproducible noisy 'document' and its label (the label is readable from the words)."""
    rng = random.Random(index)
    label = index % NUM_CLASSES
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1100, 1400))]
    words[:: 7] = [_WORDS[label * 3]] * len(words[:: 7])
    return " ".join(w + rng.choice(["", ",", ".", "!", " ;"]) for w in words), label


def clean(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return _SPACES.sub(" ", _PUNCT.sub(" ", text.lower())).strip()


def tokenise(text: str) -> list[int]:
    """Word ids from hashed character trigrams: deliberately per-character Python work.

    crc32 rather than hash(): the same ids in every process (hash() is salted per process).
    """
    ids = []
    for word in text.split():
        padded = f"#{word}#"
        grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
        ids.append(sum(zlib.crc32(g.encode()) % 7919 for g in grams) % (VOCAB_SIZE - 1) + 1)
    return ids


class NoisyTextDataset(Dataset):
    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        text, label = generate_text(index)
        ids = tokenise(clean(text))[:SEQ_LEN]
        ids += [0] * (SEQ_LEN - len(ids))
        return torch.tensor(ids, dtype=torch.long), label


class TextClassifier(nn.Module):
    """Embedding + a 2-layer Transformer encoder + mean pooling + a linear head."""

    def __init__(self, d_model: int = 64, layers: int = 2, heads: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB_SIZE, d_model, padding_idx=0)
        self.position = nn.Parameter(torch.zeros(1, SEQ_LEN, d_model))
        block = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=4 * d_model, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, NUM_CLASSES)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(self.embed(ids) + self.position)
        return self.head(hidden.mean(dim=1))


def model_and_example(batch_size: int = 8) -> tuple[nn.Module, torch.Tensor]:
    """The demo model (eval mode) and a batch of token ids, for `torchdoctor infer --demo`."""
    torch.manual_seed(0)
    dataset = NoisyTextDataset(batch_size)
    batch = torch.stack([dataset[i][0] for i in range(batch_size)])
    return TextClassifier().eval(), batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device(args.device)
    loader = DataLoader(NoisyTextDataset(args.samples), batch_size=args.batch_size, shuffle=True)
    model = TextClassifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        for step, (ids, labels) in enumerate(loader):
            ids, labels = ids.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(ids), labels)
            loss.backward()
            optimizer.step()
            if step % 50 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
