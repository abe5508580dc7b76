#!/usr/bin/env python3
"""The PyTorch twin of bench_transformer_nmt: transformer_nmt's Transformer
(examples/transformer_nmt/model.h) built from PyTorch's own layers, the same training step, on
the same batches, printing the same JSON line.

    bench_transformer_nmt --preset cpu --write-batches BATCHES      # once: the token ids
    python3 bench/bench_transformer_nmt_torch.py --batches BATCHES --preset cpu --norm layernorm

The model, as model.h describes it:
  embed    x = sqrt(d) E[token] + PE[position] (sinusoids interleaved: sin at even columns, cos
           at odd), then dropout
  stacks   torch.nn.TransformerEncoder and TransformerDecoder of TransformerEncoderLayer and
           TransformerDecoderLayer (batch_first, ReLU, dropout on attention weights, inside the
           feed-forward network and on every sublayer's output), post-norm or norm_first; a
           final norm after each stack only when pre-norm (nn.Transformer would add one after a
           post-norm stack too, which model.h does not have)
  masks    the source's padding for the encoder's self-attention and the decoder's attention
           over it; a causal mask for the decoder's self-attention
  output   logits = states E^T, one table for source, target and output (tied)
Norms in every slot: torch.nn.LayerNorm (eps 1e-5), torch.nn.RMSNorm (eps 1e-5 inside the
square root, gain only), pRMSNorm (the statistic from the first ceil(p d) features, composed
of PyTorch operations), or none (torch.nn.Identity). Loss: cross-entropy with label smoothing
0.1 summed over the real target tokens and divided by their number; the global gradient norm
(clip_grad_norm_ with an infinite bound, which measures it as normgrad's step does); Adam with
betas (0.9, 0.98), eps 1e-9, fused=True (the fastest on a CPU). Initialisation as model.h's:
Xavier uniform for every weight matrix of the layers, biases 0, gains 1, embeddings N(0, 1/d).

Written as a PyTorch user would, without torch.compile or TorchScript.

--weights FILE starts from the weights bench_transformer_nmt --write-weights saved; with
--dropout 0 on both sides, the losses and gradient norms of the first steps then equal
bench_transformer_nmt's to float32 rounding, so the two are the same model.

peak_rss_growth_bytes: the peak resident set minus the resident set after reading the batches
and before building the model, as bench_transformer_nmt measures it.
"""

import argparse
import json
import math
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F

from torch_twin import (add_run_arguments, peak_resident_bytes, read_batches, read_safetensors, resident_bytes,
                        start_run)

# d_model, feed-forward, heads, layers, vocabulary, peak learning rate: settings.h's presets.
PRESETS = {"cpu": (256, 1024, 4, 3, 8000, 1e-3), "small": (128, 512, 4, 2, 4000, 1.5e-3),
           "base": (512, 2048, 8, 6, 32000, 1.0 / math.sqrt(512 * 4000))}


class PartialRMSNorm(nn.Module):
    """pRMSNorm: x / sqrt(mean(x[..., :k]^2) + eps) * gain, k = ceil(p d)."""

    def __init__(self, features, partial, eps=1e-5):
        super().__init__()
        self.k, self.eps = math.ceil(features * partial), eps
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        statistic = x[..., :self.k].pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(statistic + self.eps) * self.weight


def make_norm(spec, features):
    if spec == "none":
        return nn.Identity()
    if spec == "layernorm":
        return nn.LayerNorm(features, eps=1e-5)
    if spec == "rmsnorm":
        return nn.RMSNorm(features, eps=1e-5)
    if spec.startswith("prmsnorm:"):
        return PartialRMSNorm(features, float(spec.split(":", 1)[1]))
    raise SystemExit(f"bench_transformer_nmt_torch: unknown norm '{spec}'")


def sinusoids(length, d):
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    pair = torch.arange(d, dtype=torch.float64) // 2
    angle = position / torch.pow(10000.0, 2 * pair / d)
    table = torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.float()


class Transformer(nn.Module):
    def __init__(self, vocabulary, d, feed_forward, heads, layers, dropout, norm, pre_norm):
        super().__init__()
        self.d, self.dropout = d, dropout
        self.embedding = nn.Embedding(vocabulary, d)
        options = dict(d_model=d, nhead=heads, dim_feedforward=feed_forward, dropout=dropout,
                       activation="relu", batch_first=True, norm_first=pre_norm)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**options), layers,
            norm=make_norm(norm, d) if pre_norm else None, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(**options), layers, norm=make_norm(norm, d) if pre_norm else None)
        for layer in list(self.encoder.layers) + list(self.decoder.layers):
            for slot in ("norm1", "norm2", "norm3"):
                if hasattr(layer, slot):
                    setattr(layer, slot, make_norm(norm, d))
        self.register_buffer("positions", sinusoids(1024, d), persistent=False)
        nn.init.normal_(self.embedding.weight, 0.0, 1.0 / math.sqrt(d))
        for stack in (self.encoder, self.decoder):
            for name, parameter in stack.named_parameters():
                if parameter.dim() >= 2:
                    nn.init.xavier_uniform_(parameter)
                elif name.endswith("bias"):
                    nn.init.zeros_(parameter)

    def embed(self, tokens):
        x = self.embedding(tokens) * math.sqrt(self.d) + self.positions[:tokens.shape[1]]
        return F.dropout(x, self.dropout, self.training)

    def forward(self, source, target_input):
        padding = source == 0
        memory = self.encoder(self.embed(source), src_key_padding_mask=padding)
        length = target_input.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(length, device=source.device)
        states = self.decoder(self.embed(target_input), memory, tgt_mask=causal, tgt_is_causal=True,
                              memory_key_padding_mask=padding)
        return states @ self.embedding.weight.t()


def normgrad_state(model, tensors):
    """transformer_nmt's parameter names mapped onto this model's."""
    state = {}
    for name, tensor in tensors.items():
        ours = (name.replace("self_attention", "self_attn").replace("cross_attention", "multihead_attn")
                .replace(".gain", ".weight").replace("final_norm", "norm"))
        state[ours] = tensor
    expected = set(model.state_dict().keys())
    missing, extra = expected - set(state), set(state) - expected
    if missing or extra:
        raise SystemExit(f"bench_transformer_nmt_torch: weights do not match: missing {sorted(missing)[:4]}, "
                         f"extra {sorted(extra)[:4]}")
    return state


def batch_loss(model, batch):
    logits = model(batch["source"], batch["target_input"])
    targets = batch["target_output"]
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=0,
                            label_smoothing=0.1, reduction="sum")
    return total / (targets != 0).sum()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", required=True, help="a file written by bench_transformer_nmt --write-batches")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    parser.add_argument("--norm", default="layernorm", help="none, layernorm, rmsnorm or prmsnorm:p")
    parser.add_argument("--placement", choices=["post", "pre"], default="post")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--weights", help="start from the weights bench_transformer_nmt --write-weights saved")
    add_run_arguments(parser)
    arguments = parser.parse_args()
    device = start_run(arguments)
    d, feed_forward, heads, layers, vocabulary, learning_rate = PRESETS[arguments.preset]
    batches, metadata = read_batches(arguments.batches, device)
    vocabulary = int(metadata.get("vocabulary", vocabulary))

    rss_before = resident_bytes()
    model = Transformer(vocabulary, d, feed_forward, heads, layers, arguments.dropout, arguments.norm,
                        arguments.placement == "pre")
    if arguments.weights:
        model.load_state_dict(normgrad_state(model, read_safetensors(arguments.weights)[0]))
    model.to(device)
    model.train()
    parameters = list(model.parameters())
    adam = torch.optim.Adam(parameters, lr=learning_rate, betas=(0.9, 0.98), eps=1e-9,
                            fused=device.type == "cpu" or device.type == "cuda")
    times, losses, gradient_norms = [], [], []
    for step in range(arguments.warmup + arguments.steps):
        batch = batches[step % len(batches)]
        start = time.perf_counter()
        adam.zero_grad()
        loss = batch_loss(model, batch)
        loss.backward()
        gradient_norm = torch.nn.utils.clip_grad_norm_(parameters, math.inf)
        adam.step()
        losses.append(loss.item())
        gradient_norms.append(gradient_norm.item())
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step >= arguments.warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    extra = {"peak_tensor_bytes": torch.cuda.max_memory_allocated()} if device.type == "cuda" else {}
    print(json.dumps({
        "framework": f"PyTorch {torch.__version__}", "model": "transformer_nmt", "preset": arguments.preset,
        "norm": arguments.norm, "placement": arguments.placement, "device": arguments.device,
        "threads": torch.get_num_threads(), "model_size": d, "feed_forward": feed_forward, "heads": heads,
        "layers": layers, "vocabulary": vocabulary, "dropout": arguments.dropout, "mode": "train",
        "parameters": sum(p.numel() for p in parameters), "batches": len(batches), "losses": losses,
        "gradient_norms": gradient_norms, "step_seconds": times, "median_seconds": median,
        "steps_per_second": 1 / median, "peak_rss_growth_bytes": peak_resident_bytes() - rss_before, **extra,
    }))


if __name__ == "__main__":
    main()
