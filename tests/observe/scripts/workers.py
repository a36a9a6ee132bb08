"""A DataLoader with worker processes; the workers must not record anything themselves."""
import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        return torch.full((8,), float(i % 7)), torch.tensor([float(i % 3)])


if __name__ == "__main__":
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    loader = DataLoader(Squares(), batch_size=16, num_workers=2, persistent_workers=True)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
