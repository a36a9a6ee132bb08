"""pytorch/examples time_sequence_prediction/train.py, recreated small: sine waves made here, two
LSTMCells and a Linear, LBFGS stepping a closure (forward and backward inside `optimizer.step`),
then the original's prediction of the test sequences under `no_grad` in every step.

Prints the original's losses and its own timing, `[timing] step N: X ms`, per step.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn


class Sequence(nn.Module):
    def __init__(self, hidden: int = 21) -> None:
        super().__init__()
        self.hidden = hidden
        self.lstm1, self.lstm2 = nn.LSTMCell(1, hidden), nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input: torch.Tensor, future: int = 0) -> torch.Tensor:
        outputs = []
        h_t = c_t = h_t2 = c_t2 = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
        output = torch.zeros(input.size(0), 1, dtype=input.dtype)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs.append(output)
        for _ in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs.append(output)
        return torch.cat(outputs, dim=1)


def sine_waves(count: int, length: int, period: int = 20) -> torch.Tensor:
    """The original's generate_sine_wave.py data: shifted sine waves."""
    x = np.arange(length)[None, :] + np.random.randint(-4 * period, 4 * period, count)[:, None]
    return torch.from_numpy(np.sin(x / period).astype("float64"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--length", type=int, default=40)
    parser.add_argument("--max-iter", type=int, default=4, help="LBFGS closure calls per step (original: 20)")
    args = parser.parse_args()
    np.random.seed(0)
    torch.manual_seed(0)
    data = sine_waves(24, args.length)
    input, target = data[3:, :-1], data[3:, 1:]
    test_input, test_target = data[:3, :-1], data[:3, 1:]
    seq = Sequence().double()
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=args.max_iter)
    end = time.perf_counter()
    for i in range(args.steps):
        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            loss = criterion(seq(input), target)
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            pred = seq(test_input, future=10)
            loss = criterion(pred[:, :-10], test_target)
        now = time.perf_counter()
        print(f"STEP: {i} test loss: {loss.item():.6f}")
        print(f"[timing] step {i}: {(now - end) * 1e3:.3f} ms", flush=True)
        end = now


if __name__ == "__main__":
    main()
