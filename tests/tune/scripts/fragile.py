"""A tiny training loop that breaks under DataLoader workers and sets its own thread count."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class OnlyInProcess(Dataset):
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if get_worker_info() is not None:
            raise RuntimeError("this dataset cannot run in a worker process")
        return torch.full((8,), float(index % 7)), torch.tensor(float(index % 3))


torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(OnlyInProcess(), batch_size=16, shuffle=True):
    optimizer.zero_grad()
    loss = ((model(x).squeeze(1) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
