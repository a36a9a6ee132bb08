"""A DQN replay buffer kept in a ``collections.deque`` and sampled at random.

Thread: "Ch 16. Using native python list instead of deque for storing
experience, increases sampling performance considerably.",
https://github.com/ageron/handson-ml/pull/204

Problem: the agent stores its last 1,000,000 transitions in
``deque(maxlen=1_000_000)`` and draws each minibatch with
``random.sample(buffer, 128)``. A deque is a linked list of blocks: indexing
into its middle walks the blocks from the nearer end, so every one of the 128
draws costs time proportional to the buffer size, and sampling ends up costing
more than the Q-network update itself.
Expected fix: store transitions in a list used as a ring buffer (or in
preallocated arrays/tensors) and sample random indices, which is O(1) per draw.
"""
import random
import sys
import time
from collections import deque

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

STEPS = 40
CAPACITY = 1_000_000
BATCH = 128


class ReplayBuffer:
    def __init__(self, capacity):
        self.buffer = deque(maxlen=capacity)

    def push(self, transition):
        self.buffer.append(transition)

    def sample(self, n):
        batch = random.sample(self.buffer, n)
        s, a, r, s2, d = zip(*batch)
        return (torch.from_numpy(np.stack(s)), torch.tensor(a), torch.tensor(r),
                torch.from_numpy(np.stack(s2)), torch.tensor(d, dtype=torch.float32))


def main(steps=STEPS):
    torch.manual_seed(0)
    random.seed(0)
    states = np.random.randn(1000, 8).astype(np.float32)
    buffer = ReplayBuffer(CAPACITY)
    for i in range(CAPACITY):
        buffer.push((states[i % 1000], i % 4, 1.0, states[(i + 1) % 1000], i % 200 == 0))
    q = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 4))
    target = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 4))
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        s, a, r, s2, d = buffer.sample(BATCH)
        with torch.no_grad():
            y = r + 0.99 * (1 - d) * target(s2).max(1).values
        loss = F.smooth_l1_loss(q(s).gather(1, a[:, None]).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)

    t = sorted(times[5:])
    print(f"median step time: {t[len(t) // 2] * 1e3:.2f} ms over {len(t)} steps")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
