#!/usr/bin/python3
"""Writes what PyTorch computes for TorchScript models, for torchscript_test.cpp to compare.

    torchscript_reference.py OUT_DIR

For each model (a small CNN with batch normalisation and a residual connection, torchvision's
mobilenet_v2, and a feature MLP) it exports the model with scripts/export-model, loads the
file back with torch.jit.load, runs one training-mode forward/backward on a seeded batch, and
writes NAME.pt (the model), NAME.inputs.f32, NAME.labels.i64, NAME.grads.f32 (every gradient,
flattened in named_parameters order) and NAME.json (shapes and the loss).
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "..", "..", "..", "scripts", "export-model")

MODELS = [
    # name, export arguments, sample shape, classes
    ("small_cnn", ["--module", os.path.join(HERE, "torchscript_models.py") + ":SmallResNet"],
     [3, 16, 16], 10),
    ("mobilenet_v2", ["--torchvision", "mobilenet_v2"], [3, 32, 32], 10),
    ("features_mlp", ["--module", os.path.join(HERE, "torchscript_models.py") + ":FeatureMlp"],
     [32], 10),
]


def main():
    out = sys.argv[1]
    torch.set_num_threads(1)
    for name, source, shape, classes in MODELS:
        path = os.path.join(out, name + ".pt")
        subprocess.run([sys.executable, EXPORT] + source +
                       ["--input-shape", ",".join(map(str, shape)), "--classes", str(classes),
                        "--out", path], check=True, stdout=subprocess.DEVNULL)
        model = torch.jit.load(path)
        model.train()
        g = torch.Generator().manual_seed(7)
        inputs = torch.randn([8] + shape, generator=g)
        labels = torch.randint(0, classes, [8], generator=g)
        # Dropout draws from the global generator: both sides seed it the same way.
        torch.manual_seed(11)
        loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        grads = torch.cat([p.grad.reshape(-1) for _, p in model.named_parameters()])
        inputs.numpy().astype("<f4").tofile(os.path.join(out, name + ".inputs.f32"))
        labels.numpy().astype("<i8").tofile(os.path.join(out, name + ".labels.i64"))
        grads.numpy().astype("<f4").tofile(os.path.join(out, name + ".grads.f32"))
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump({"shape": shape, "classes": classes, "batch": 8, "loss": loss.item(),
                       "numel": grads.numel(),
                       "names": [n for n, _ in model.named_parameters()]}, f)


if __name__ == "__main__":
    main()
