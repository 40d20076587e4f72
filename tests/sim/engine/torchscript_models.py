"""Small modules for the TorchScript tests: what a user's own model file looks like."""
from typing import Tuple

import torch
from torch import nn


class SmallResNet(nn.Module):
    """Convolution, batch normalisation, a residual block and a linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.stem(x)))
        x = torch.relu(x + self.bn2(self.conv(x)))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class FeatureMlp(nn.Module):
    """For gradwire's synthetic feature data (32 features, 10 classes)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class NoParameters(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class TupleOutput(nn.Module):
    """Loads, but returns (logits, features): gradwire trains on one tensor of logits."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.head(x), x


class FrozenMlp(nn.Module):
    """Loads and runs forward, but no parameter requires a gradient: backward fails."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(32, 10)
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x)


def features_mlp(features: int, outputs: int) -> nn.Module:
    """A linear classifier from `features` inputs to `outputs` logits."""
    return nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, outputs))
