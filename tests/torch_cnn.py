"""ResNet v1.5 in plain ``torch.nn`` and what it saves for backward, for tests/test_torch_cnn.py.

torchvision is not usable here, so :func:`resnet` rebuilds its ResNet the way
torchvision's ``models/resnet.py`` does: a 7x7/2 stem conv, BatchNorm, in-place
ReLU and a 3x3/2 max-pool; bottleneck blocks (1x1, 3x3, 1x1 convs without
bias, expansion 4) with the stride on the 3x3 conv (v1.5) and a 1x1 conv +
BatchNorm shortcut where the shape changes; ``out += identity`` then an
in-place ReLU; global average pool and a 1000-way linear layer. Stages
[3, 4, 6, 3] are ResNet-50 (25,557,032 parameters), [3, 8, 36, 3] ResNet-152
(60,192,808). :func:`vgg16` is torchvision's VGG-16 (138,357,544).

:func:`saved_bytes_per_sample` runs one training forward pass (with the
cross-entropy loss) under ``torch.autograd.graph.saved_tensors_hooks`` and
counts every saved tensor's storage once, parameters and buffers excluded:
in-place ReLU outputs share the BatchNorm output's storage, as on a GPU.
"""

from __future__ import annotations

import torch
from torch import nn

RESNET_STAGES = {"resnet-50": (3, 4, 6, 3), "resnet-152": (3, 8, 36, 3)}
WIDTHS = (64, 128, 256, 512)
EXPANSION = 4


class Bottleneck(nn.Module):
    """torchvision's v1.5 bottleneck: stride on the 3x3 conv, in-place add and ReLU."""

    def __init__(self, in_ch: int, width: int, stride: int):
        super().__init__()
        out_ch = width * EXPANSION
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_ch != out_ch:
            self.downsample = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_ch))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, stages: tuple[int, ...], num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        blocks, in_ch = [], 64
        for i, (n, width) in enumerate(zip(stages, WIDTHS)):
            for j in range(n):
                blocks.append(Bottleneck(in_ch, width, 2 if (j == 0 and i > 0) else 1))
                in_ch = width * EXPANSION
        self.layers = nn.Sequential(*blocks)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.avgpool(self.layers(x)), 1))


def resnet(model_id: str) -> ResNet:
    """ResNet-50 or ResNet-152 v1.5 (random initialisation), as torchvision builds it."""
    return ResNet(RESNET_STAGES[model_id])


VGG16_CONFIG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def vgg16(num_classes: int = 1000) -> nn.Sequential:
    """VGG-16 (configuration D) as torchvision's ``vgg16`` builds it: 3x3 convs with bias and
    in-place ReLU, 2x2 max-pools, 7x7 adaptive average pool, three linear layers with
    in-place ReLU and dropout 0.5 (138,357,544 parameters)."""
    layers: list[nn.Module] = []
    in_ch = 3
    for v in VGG16_CONFIG:
        if v == "M":
            layers.append(nn.MaxPool2d(2, stride=2))
        else:
            layers += [nn.Conv2d(in_ch, v, 3, padding=1), nn.ReLU(inplace=True)]
            in_ch = v
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(7), nn.Flatten(),
                         nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
                         nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
                         nn.Linear(4096, num_classes))


def build(model_id: str) -> nn.Module:
    """A catalog CNN rebuilt in plain torch.nn: resnet-50, resnet-152 or vgg16."""
    return vgg16() if model_id == "vgg16" else resnet(model_id)


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _storage(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def saved_bytes(model: nn.Module, images: torch.Tensor) -> dict[str, int]:
    """Bytes autograd keeps for backward after one training forward pass with the loss [B].

    Returns ``{"total": ..., "<dtype>": ...}``: unique storages, parameters and
    buffers (BatchNorm running statistics) excluded, split by dtype (the max-pool
    keeps int64 indices, BatchNorm fp32 per-channel statistics).
    """
    model.train()
    fixed = {_storage(t)[0] for t in list(model.parameters()) + list(model.buffers())}
    seen: dict[int, tuple[int, str]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr, nbytes = _storage(t)
        if ptr not in fixed and nbytes and ptr not in seen:
            seen[ptr] = (nbytes, str(t.dtype).removeprefix("torch."))
        return t

    labels = torch.zeros(images.shape[0], dtype=torch.long)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = nn.functional.cross_entropy(model(images), labels)
    del loss  # the graph and its saved tensors go with it; only the numbers are kept
    out: dict[str, int] = {"total": sum(n for n, _ in seen.values())}
    for n, dtype in seen.values():
        out[dtype] = out.get(dtype, 0) + n
    return out


def saved_bytes_per_sample(model_id: str, batch: int, *, dtype: torch.dtype = torch.bfloat16,
                           image_size: int = 224) -> dict[str, float]:
    """:func:`saved_bytes` of a fresh ``model_id`` in ``dtype`` at ``batch``, divided by the batch [B]."""
    torch.manual_seed(0)
    model = build(model_id).to(dtype)
    images = torch.randn(batch, 3, image_size, image_size, dtype=dtype)
    return {k: v / batch for k, v in saved_bytes(model, images).items()}
