#!/usr/bin/python3
"""The same training step as step_bench.cpp, in PyTorch eager: each built-in model written the
way a PyTorch user writes it (torchvision where it has the architecture), batch 32, forward,
cross-entropy, backward, gradients concatenated into one vector.

    step_bench.py [--threads N] [--steps N] [--models resnet20,lstm_lm,...] [--batch N]
                  [--device cpu|cuda]

prints one JSON object per model: {"model", "parameters", "step_ms"} (the median of N timed
steps after 3 warm-up steps; on a GPU each step ends when its kernels have run). Runs under
Debian's /usr/bin/python3 (python3-torch, python3-torchvision), the PyTorch whose kernels
gradwire's LibTorch shares; on a GPU machine, under the Python whose PyTorch carries the
LibTorch gradwire was built with.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nodes", "training"))
from resnet20_reference import ResNetCifar  # noqa: E402  (the cross-checked ResNet-20)

BATCH = 32
VOCAB = 10000
BPTT = 35


def resnet18():
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    model.maxpool = nn.Identity()
    return model


def vgg16():
    from torchvision.models.vgg import cfgs, make_layers
    return nn.Sequential(make_layers(cfgs["D"], batch_norm=True), nn.Flatten(), nn.Linear(512, 10))


def mobilenetv2():
    model = torchvision.models.mobilenet_v2(num_classes=10)
    model.features[0][0].stride = (1, 1)          # CIFAR: the stem keeps 32x32
    model.features[2].conv[1][0].stride = (1, 1)  # and so does the second stage
    return model


class LstmLm(nn.Module):
    def __init__(self, size=650, layers=2, dropout=0.5):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, size)
        self.drop = nn.Dropout(dropout)
        self.lstm = nn.LSTM(size, size, layers, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(size, VOCAB)

    def forward(self, x):
        y, _ = self.lstm(self.drop(self.embedding(x)))
        return self.decoder(self.drop(y))


class TransformerLm(nn.Module):
    def __init__(self, d_model=128, heads=4, ff=512, layers=2, dropout=0.1):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model)
        self.positions = nn.Embedding(BPTT, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.decoder = nn.Linear(d_model, VOCAB)
        self.register_buffer("mask", torch.triu(torch.full((BPTT, BPTT), float("-inf")), 1))

    def forward(self, x):
        h = self.tokens(x) + self.positions(torch.arange(x.size(1), device=x.device))
        return self.decoder(self.norm(self.encoder(h, mask=self.mask)))


MODELS = {
    "resnet20": (lambda: ResNetCifar(20, 10), False),
    "resnet56": (lambda: ResNetCifar(56, 10), False),
    "resnet18": (resnet18, False),
    "vgg16": (vgg16, False),
    "mobilenetv2": (mobilenetv2, False),
    "lstm_lm": (LstmLm, True),
    "transformer": (TransformerLm, True),
}


def time_step(name, steps, batch=BATCH, device="cpu"):
    build, tokens = MODELS[name]
    torch.manual_seed(1)
    model = build().to(device)
    model.train()
    if tokens:
        x = torch.randint(VOCAB, (batch, BPTT))
        y = torch.randint(VOCAB, (batch, BPTT))
    else:
        x = torch.randn(batch, 3, 32, 32)
        y = torch.randint(10, (batch,))
    x, y = x.to(device), y.to(device)
    times = []
    for i in range(steps + 3):
        start = time.perf_counter()
        model.zero_grad(set_to_none=True)
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        if device == "cuda":
            torch.cuda.synchronize()
        del flat
        if i >= 3:
            times.append((time.perf_counter() - start) * 1000.0)
    times.sort()
    return {"model": name, "parameters": sum(p.numel() for p in model.parameters()),
            "step_ms": times[len(times) // 2]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.device == "cuda":
        # The fp32 arithmetic gradwire's LibTorch does by default (TF32 off for matrix products).
        torch.backends.cuda.matmul.allow_tf32 = False
    for name in args.models.split(","):
        print(json.dumps(time_step(name, args.steps, args.batch, args.device)), flush=True)


if __name__ == "__main__":
    main()
