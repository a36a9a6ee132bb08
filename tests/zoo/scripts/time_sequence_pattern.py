"""The pattern of pytorch/examples `time_sequence_prediction/train.py`, recreated (not copied): two
float64 nn.LSTMCell layers unrolled over time in Python, trained with LBFGS through a closure that
prints `loss.item()`, then a no_grad prediction of future values. Sine-wave data is generated here
(the original loads a file made by a separate script) and sequences are shorter, to stay quick."""

import argparse

import torch
from torch import nn, optim

HIDDEN = 51


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell1, self.cell2 = nn.LSTMCell(1, HIDDEN), nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, x, future=0):
        h1 = c1 = h2 = c2 = torch.zeros(x.size(0), HIDDEN, dtype=torch.double)
        outputs = []
        for x_t in x.split(1, dim=1):
            h1, c1 = self.cell1(x_t, (h1, c1))
            h2, c2 = self.cell2(h1, (h2, c2))
            outputs.append(self.linear(h2))
        for _ in range(future):
            h1, c1 = self.cell1(outputs[-1], (h1, c1))
            h2, c2 = self.cell2(h1, (h2, c2))
            outputs.append(self.linear(h2))
        return torch.cat(outputs, dim=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(0)
    shift = torch.randint(-80, 80, (12, 1))
    data = torch.sin((torch.arange(30).view(1, -1) + shift).double() / 20.0)
    inputs, targets = data[3:, :-1], data[3:, 1:]
    model = Sequence().double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(model.parameters(), lr=0.8, max_iter=2)
    for step in range(args.steps):
        def closure():
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            print("loss:", loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            prediction = model(data[:3, :-1], future=20)
            print("test loss:", criterion(prediction[:, :-20], data[:3, 1:]).item())
