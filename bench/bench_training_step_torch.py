#!/usr/bin/env python3
"""The PyTorch twin of bench_training_step: the same two models (the GRU language model of
training_models.h, and ConvPool-CNN-C as bench_convpool_cnn_c_torch.py builds it), the same
step (zero_grad, forward, cross-entropy, backward, Adam), the same JSON line.

    python3 bench/bench_training_step_torch.py --model gru --steps 5 --threads 2

peak_rss_growth_bytes is the peak resident set minus the resident set after importing torch and
before building the model, as bench_training_step measures it. Only the plain models (norm
"none") exist here: PyTorch has no normalised GRU cell.
"""

import argparse
import json
import resource
import statistics
import time

import torch
from torch import nn

from bench_convpool_cnn_c_torch import ConvPoolCnnC


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


class GruLanguageModel(nn.Module):
    def __init__(self, vocabulary, embedding_size, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, embedding_size)
        self.gru = nn.GRU(embedding_size, hidden)
        self.output = nn.Linear(hidden, vocabulary)

    def loss(self, tokens, targets):
        states, _ = self.gru(self.embedding(tokens))
        logits = self.output(states)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["gru", "cnn"], default="gru")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(1)
    device = torch.device(arguments.device)
    # Like normgrad's default: full float32 products, no TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rss_before = resident_bytes()
    if arguments.model == "gru":
        sentences, length, vocabulary = arguments.batch or 80, 50, 8000
        model = GruLanguageModel(vocabulary, 256, 512).to(device)
        tokens = torch.randint(0, vocabulary, (length, sentences)).to(device)
        targets = torch.randint(0, vocabulary, (length, sentences)).to(device)

        def loss():
            return model.loss(tokens, targets)
    else:
        images = arguments.batch or 64
        model = ConvPoolCnnC(3, 1.0, "none").to(device)
        x = torch.randn(images, 3, 32, 32).to(device)
        labels = torch.randint(0, 10, (images,)).to(device)

        def loss():
            return nn.functional.cross_entropy(model(x), labels)
    adam = torch.optim.Adam(model.parameters(), lr=1e-4)
    times = []
    for step in range(arguments.warmup + arguments.steps):
        start = time.perf_counter()
        adam.zero_grad()
        loss().backward()
        adam.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step >= arguments.warmup:
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    extra = {"peak_tensor_bytes": torch.cuda.max_memory_allocated()} if device.type == "cuda" else {}
    print(json.dumps({**extra, "device": arguments.device,
        "framework": f"PyTorch {torch.__version__}", "model": arguments.model, "norm": "none",
        "threads": torch.get_num_threads(), "step_seconds": times,
        "median_seconds": statistics.median(times), "peak_rss_growth_bytes": peak - rss_before,
    }))


if __name__ == "__main__":
    main()
