"""An inference loop: the model is called, nothing is trained."""
import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).eval()
postprocess = torch.nn.Softmax(dim=-1)
with torch.inference_mode():
    for _ in range(100):
        probs = postprocess(model(torch.randn(8, 64)))
