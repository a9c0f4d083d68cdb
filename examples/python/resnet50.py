# A torchvision ResNet-50 on convgen's kernels: convert, tune once into the tuning database, run, compare.
import os

import torch
import torchvision

import convgen.torch

batch = int(os.environ.get("CONVGEN_EXAMPLE_BATCH", "8"))
model = torchvision.models.resnet50(weights=None).cuda().eval()  # random weights: nothing is downloaded
x = torch.randn(batch, 3, 224, 224, device="cuda")
with torch.inference_mode():
    want = model(x)
    converted = convgen.torch.convert(model)  # each Conv2d with its BatchNorm, add and ReLU: one convgen kernel
    for layer in convgen.torch.tune(converted, x, budget=4):  # measured once, then read from the database
        print(layer["layer"], layer["kernel"], layer["chosen_by"])
    got = converted(x)
error = ((got - want).norm() / want.norm()).item()
print(f"max |convgen - pytorch| = {(got - want).abs().max().item():.2e}, relative L2 error {error:.2e}")
