"""A Hugging Face Trainer on a tiny GPT-2 built from a config (no download), random tokens made
here, no logging or reporting: the Trainer loop as a user writes it for causal-LM training.

Prints its own timing, `[timing] step N: X ms`, between optimisation steps (a TrainerCallback of its
own). `--sleep-in forward|backward|data` puts a known sleep in one part of every step.
`main(argv, callbacks)` lets tests add callbacks in-process.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any, Sequence

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, size: int, length: int, vocab: int, item_sleep_s: float) -> None:
        self.ids = torch.randint(0, vocab, (size, length))
        self.item_sleep_s = item_sleep_s

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if self.item_sleep_s:
            time.sleep(self.item_sleep_s)
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class StepTimer(TrainerCallback):
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        now = time.perf_counter()
        if state.global_step > 1:
            print(f"[timing] step {state.global_step - 1}: {(now - self.last) * 1e3:.3f} ms", flush=True)
        self.last = now


def main(argv: Sequence[str] | None = None, callbacks: Sequence[Any] = ()) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sleep-in", choices=["none", "forward", "backward", "data"], default="none")
    parser.add_argument("--sleep-s", type=float, default=0.05)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=1, n_head=2,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    sleep = {args.sleep_in: args.sleep_s}
    if "forward" in sleep:  # inside the model's call: its only block sleeps
        model.transformer.h[0].register_forward_pre_hook(lambda module, inputs: time.sleep(args.sleep_s))
    if "backward" in sleep:
        model.transformer.wte.weight.register_hook(lambda grad: time.sleep(args.sleep_s))
    data = Tokens(args.steps * args.batch_size, 32, 128, sleep.get("data", 0.0) / args.batch_size)
    with tempfile.TemporaryDirectory() as out:
        training = TrainingArguments(output_dir=out, per_device_train_batch_size=args.batch_size,
                                     max_steps=args.steps, report_to=[], logging_strategy="no",
                                     save_strategy="no", disable_tqdm=True, use_cpu=True)
        Trainer(model=model, args=training, train_dataset=data, callbacks=[StepTimer(), *callbacks]).train()


if __name__ == "__main__":
    main()
