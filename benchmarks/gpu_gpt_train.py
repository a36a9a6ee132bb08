"""Train the tests' GPT-style model (tests/memory/scripts/gpt.py) at GPU scale, for `torchdoctor memory`.

    torchdoctor memory --snapshot gpt.pickle -- benchmarks/gpu_gpt_train.py [--checkpoint]

8 blocks, width 512, 8 heads, sequence 512, vocabulary 8192, batch 8 (about 27 M parameters): its
explicit T x T attention makes activations dominate the step's peak, as in the PyTorch memory
tutorial's GPT-2 case. On the GPU when CUDA is available (else on the CPU, at `--small` scale for a
quick check). Used by benchmarks/gpu_truth.sh.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "memory" / "scripts"))
from gpt import GPT, GPTConfig  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--checkpoint", action="store_true", help="activation checkpointing of every block")
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--small", action="store_true", help="the tests' CPU size (4 blocks, width 128, sequence 128)")
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
args = parser.parse_args()

config = GPTConfig(block_size=128) if args.small else GPTConfig(vocab_size=8192, block_size=512, n_layer=8,
                                                                 n_head=8, n_embd=512)
torch.manual_seed(0)
device = torch.device(args.device)
model = GPT(config, checkpoint_blocks=args.checkpoint).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(0)
idx = torch.randint(config.vocab_size, (args.batch_size, config.block_size), generator=gen).to(device)
targets = torch.randint(config.vocab_size, (args.batch_size, config.block_size), generator=gen).to(device)
for step in range(args.steps):
    optimizer.zero_grad(set_to_none=True)
    loss = model(idx, targets)
    loss.backward()
    optimizer.step()
    if step % 4 == 0:
        print(f"step {step} loss {loss.item():.3f}", flush=True)
