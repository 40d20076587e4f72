#!/usr/bin/python3
"""Writes what PyTorch computes for ResNet-20, for zoo_test.cpp to compare with gradwire's.

    resnet20_reference.py OUT_DIR

Defines the CIFAR ResNet-20 of He et al. 2016 with option A shortcuts (stride-2 subsampling and
zero-padded channels, centred) the way gradwire's resnet20 builds it, seeds it, and writes:
resnet20.pt (the model as TorchScript: weights and batch-norm buffers before any step),
resnet20.inputs.f32 and resnet20.labels.i64 (a seeded batch of 8 3x32x32 images),
resnet20.grads.f32 (every gradient of one training-mode forward/backward, flattened in
named_parameters order), resnet20.eval.f32 (evaluation-mode logits of the same batch after that
step, which read the running statistics it updated) and resnet20.json (loss, parameter names).
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SHAPE = [3, 32, 32]
CLASSES = 10


class BasicBlock(nn.Module):
    def __init__(self, inp: int, out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.stride = stride
        self.pad_before = (out - inp) // 2
        self.pad_after = out - inp - self.pad_before

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x[:, :, ::self.stride, ::self.stride]
        if self.pad_before + self.pad_after > 0:
            shortcut = F.pad(shortcut, [0, 0, 0, 0, self.pad_before, self.pad_after])
        return F.relu(y + shortcut)


class ResNetCifar(nn.Module):
    def __init__(self, depth: int, classes: int):
        super().__init__()
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        channels = 16
        stages = []
        for stage in range(3):
            out = 16 << stage
            blocks = []
            for i in range(n):
                blocks.append(BasicBlock(channels, out, 2 if stage > 0 and i == 0 else 1))
                channels = out
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = stages
        self.fc = nn.Linear(channels, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def main():
    out = sys.argv[1]
    torch.set_num_threads(1)
    torch.manual_seed(3)
    model = ResNetCifar(20, CLASSES)
    # Batch norms away from their 1/0 start, so that a parameter or buffer copied to the wrong
    # layer shows in the gradients or the evaluation logits.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    torch.jit.script(model).save(os.path.join(out, "resnet20.pt"))

    g = torch.Generator().manual_seed(7)
    inputs = torch.randn([BATCH] + SHAPE, generator=g)
    labels = torch.randint(0, CLASSES, [BATCH], generator=g)
    model.train()
    loss = F.cross_entropy(model(inputs), labels)
    loss.backward()
    grads = torch.cat([p.grad.reshape(-1) for _, p in model.named_parameters()])
    model.eval()
    with torch.no_grad():
        logits = model(inputs)

    inputs.numpy().astype("<f4").tofile(os.path.join(out, "resnet20.inputs.f32"))
    labels.numpy().astype("<i8").tofile(os.path.join(out, "resnet20.labels.i64"))
    grads.numpy().astype("<f4").tofile(os.path.join(out, "resnet20.grads.f32"))
    logits.numpy().astype("<f4").tofile(os.path.join(out, "resnet20.eval.f32"))
    with open(os.path.join(out, "resnet20.json"), "w") as f:
        json.dump({"shape": SHAPE, "classes": CLASSES, "batch": BATCH, "loss": loss.item(),
                   "numel": grads.numel(),
                   "parameters": sum(p.numel() for p in model.parameters()),
                   "names": [n for n, _ in model.named_parameters()]}, f)


if __name__ == "__main__":
    main()
