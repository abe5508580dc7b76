#!/usr/bin/env python3
"""The PyTorch twin of bench_convpool_cnn_c: examples/convpool_cnn_c's ConvPool-CNN-C with the
same normaliser in the same place, the same step (zero_grad, forward with noise and dropout,
mean cross-entropy, backward, Adam), the same JSON line.

    bench_convpool_cnn_c --write-inputs INPUTS                # once: the batches
    python3 bench/bench_convpool_cnn_c_torch.py --inputs INPUTS --norm rmsnorm --steps 10

The model (model.h): noise 0.15, three 3x3 convolutions of 96, pool, dropout, three of 192,
pool, dropout, a 3x3 of 192 without padding, two 1x1 of 192, global average pooling, dense 10.
Each convolution is followed by its normaliser and leaky ReLU 0.1; the dense layer by its
normaliser. Normalisers, as written for speed by a PyTorch user:
  none        (scale W) x + bias, the bias added by the convolution (the code's baseline: a
              fixed scale and a trained bias)
  weightnorm  torch.nn.utils.parametrizations.weight_norm on the product's weight, the bias
              added by the convolution
  batchnorm   torch.nn.BatchNorm2d / BatchNorm1d, eps 1e-6
  layernorm   F.layer_norm over each (sample, channel) map's H x W, then gain and bias per channel
  rmsnorm     F.rms_norm over the same, eps 1e-8 (the paper's code's), then gain and bias
  prmsnorm:p  the root mean square of the first ceil(p H W) positions of each map
For the dense layer the map is its 10 outputs. PyTorch's Adam has eps outside the square root
only (normgrad's step puts it inside, as the paper's code): the same work either way. Adam is
fused=True, the fastest on a CPU.

peak_rss_growth_bytes: the peak resident set minus the resident set before the model was
built, as bench_convpool_cnn_c measures it.
"""

import argparse
import json
import math
import resource
import statistics
import struct
import time

import torch
from torch import nn
from torch.nn import functional as F


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def read_inputs(path):
    """The batches bench_convpool_cnn_c --write-inputs saved (safetensors, F32 and I64)."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = {"F32": torch.float32, "I64": torch.int64}[entry["dtype"]]
        tensors[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype).reshape(entry["shape"])
    count = int(header["__metadata__"]["batches"])
    return [(tensors[f"batch.{i}.images"], tensors[f"batch.{i}.labels"]) for i in range(count)]


class Normalized(nn.Module):
    """A convolution (kernel > 0) or the dense layer, and its normaliser."""

    def __init__(self, inputs, outputs, kernel, padding, norm):
        super().__init__()
        self.norm, self.kernel, self.padding = norm.split(":")[0], kernel, padding
        self.partial = float(norm.split(":")[1]) if ":" in norm else 0.0625
        self.product = (nn.Conv2d(inputs, outputs, kernel, padding=padding, bias=False) if kernel
                        else nn.Linear(inputs, outputs, bias=False))
        if self.norm == "weightnorm":
            self.product = nn.utils.parametrizations.weight_norm(self.product)
        if self.norm == "batchnorm":
            self.batch_norm = (nn.BatchNorm2d if kernel else nn.BatchNorm1d)(outputs, eps=1e-6)
        else:
            self.bias = nn.Parameter(torch.zeros(outputs))
            if self.norm != "weightnorm":  # weight_norm has its own gain
                # The baseline's scale is fixed; the normalisers' gain is trained.
                self.gain = nn.Parameter(torch.ones(outputs), requires_grad=self.norm != "none")

    def channels(self, values):
        return values[None, :, None, None] if self.kernel else values

    def forward(self, x):
        if self.norm in ("none", "weightnorm"):
            # The bias added by the product itself, and none's fixed scale folded into the weight
            # (g (W x) = (g W) x), as normgrad computes them: no pass over the outputs.
            weight = self.product.weight
            if self.norm == "none":
                weight = weight * self.gain.view(-1, *([1] * (weight.dim() - 1)))
            if self.kernel:
                return F.conv2d(x, weight, self.bias, padding=self.padding)
            return F.linear(x, weight, self.bias)
        y = self.product(x)
        if self.norm == "batchnorm":
            return self.batch_norm(y)
        shape = y.shape[2:] if self.kernel else y.shape[1:]
        if self.norm == "layernorm":
            z = F.layer_norm(y, shape, eps=1e-5)
        elif self.norm == "rmsnorm":
            z = F.rms_norm(y, shape, eps=1e-8)
        else:  # prmsnorm: the first ceil(p n) positions of each flattened map
            flat = y.flatten(2) if self.kernel else y
            k = math.ceil(self.partial * flat.shape[-1])
            rms = torch.sqrt(flat[..., :k].square().mean(-1, keepdim=True) + 1e-8)
            z = (flat / rms).reshape(y.shape)
        return z * self.channels(self.gain) + self.channels(self.bias)


class ConvPoolCnnC(nn.Module):
    def __init__(self, channels, width, norm):
        super().__init__()
        narrow, wide = round(96 * width), round(192 * width)
        shapes = [(channels, narrow, 3, 1), (narrow, narrow, 3, 1), (narrow, narrow, 3, 1),
                  (narrow, wide, 3, 1), (wide, wide, 3, 1), (wide, wide, 3, 1),
                  (wide, wide, 3, 0), (wide, wide, 1, 0), (wide, wide, 1, 0), (wide, 10, 0, 0)]
        self.layers = nn.ModuleList(Normalized(*shape, norm) for shape in shapes)

    def forward(self, x):
        if self.training:
            x = x + 0.15 * torch.randn_like(x)
        for i, layer in enumerate(self.layers[:9]):
            x = F.leaky_relu(layer(x), 0.1)
            if i in (2, 5):
                x = F.dropout(F.max_pool2d(x, 2), 0.5, self.training)
        return self.layers[9](x.mean((2, 3)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", required=True, help="a file written by bench_convpool_cnn_c --write-inputs")
    parser.add_argument("--norm", default="none")
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(1)
    device = torch.device(arguments.device)
    torch.backends.cudnn.allow_tf32 = False
    batches = [(x.to(device), y.to(device)) for x, y in read_inputs(arguments.inputs)]
    rss_before = resident_bytes()
    model = ConvPoolCnnC(batches[0][0].shape[1], arguments.width, arguments.norm).to(device)
    parameters = [p for p in model.parameters() if p.requires_grad]
    adam = torch.optim.Adam(parameters, lr=3e-4 if arguments.norm == "none" else 3e-3, eps=1e-8,
                            fused=True)
    times, losses = [], []
    for step in range(arguments.warmup + arguments.steps):
        images, labels = batches[step % len(batches)]
        start = time.perf_counter()
        adam.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        adam.step()
        losses.append(loss.item())
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step >= arguments.warmup:
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    median = statistics.median(times)
    print(json.dumps({
        "framework": f"PyTorch {torch.__version__}", "model": "convpool_cnn_c", "norm": arguments.norm,
        "width": arguments.width, "batch": batches[0][0].shape[0], "device": arguments.device,
        "threads": torch.get_num_threads(), "parameters": sum(p.numel() for p in parameters),
        "losses": losses, "step_seconds": times, "median_seconds": median, "steps_per_second": 1 / median,
        "peak_rss_growth_bytes": peak - rss_before,
    }))


if __name__ == "__main__":
    main()
