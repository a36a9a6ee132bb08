"""REINFORCE returns computed with a reverse Python loop over every token.

Thread: "perf(rl): vectorize default REINFORCE returns",
https://github.com/NVIDIA-NeMo/labs-molt/pull/29

Problem: with the default discount of 1, the return at each position is the sum
of all later rewards. The update computes it with the textbook recurrence
``for t in reversed(range(T)): running = rewards[:, t] + gamma * running;
returns[:, t] = running`` over 2,048 positions, i.e. thousands of tiny tensor
operations (each a slice, a multiply, an add and an indexed write) per update,
far more time than the policy-gradient step itself.
Expected fix: vectorise: for ``gamma == 1`` the returns are a reversed
cumulative sum, ``rewards.flip(-1).cumsum(-1).flip(-1)`` (a discount can be
applied with a matrix of powers or a scan).
"""
import sys
import time

import torch
from torch import nn

STEPS = 40
T = 2048
GAMMA = 1.0


def discounted_returns(rewards):
    returns = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + GAMMA * running
        returns[:, t] = running
    return returns


def main(steps=STEPS):
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 16))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    obs = torch.randn(4, T, 32)
    actions = torch.randint(0, 16, (4, T))
    times = []
    for _ in range(steps):
        rewards = torch.randn(4, T) * 0.01
        t0 = time.perf_counter()
        returns = discounted_returns(rewards)
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        logp = torch.log_softmax(policy(obs), -1).gather(-1, actions[..., None]).squeeze(-1)
        loss = -(logp * returns).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
