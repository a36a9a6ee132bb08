"""Prints the settings its DataLoader ends up with (for `torchdoctor run --apply`)."""

import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.zeros(4)), batch_size=2)
print(f"num_workers={loader.num_workers} threads={torch.get_num_threads()} args={sys.argv[1:]}")
