#!/usr/bin/env python3
"""The PyTorch twin of bench_gru_nmt: gru_nmt's RnnSearch (examples/gru_nmt/model.h), the same
training step, on the same batches, printing the same JSON line.

    bench_gru_nmt --preset cpu --write-batches BATCHES      # once: the batches' token ids
    python3 bench/bench_gru_nmt_torch.py --batches BATCHES --preset cpu --norm none --steps 20

The model, as Nematus v0.3 codes it and model.h describes it:
  encoder  embedding -> bidirectional GRU in Nematus's form, four norm slots per GRU:
             [r, u] = sigmoid(N1(W_g x + b_g) + N2(U_g h)),  h~ = tanh(N3(W_c x + b_c) + r N4(U_c h)),
             h' = u h + (1 - u) h~;  a row keeps its state at padded steps, outputs 0 there
  init     s_0 = tanh(N(W mean_j C_j + b)) over the real positions
  decoder  conditional GRU: s' = GRU1(E y_{t-1}, s) (E y_0 = 0), c = attention(C, s'),
           s = GRU2(c, s') with GRU2's bias on the state side
  attention e_j = v . tanh(N(U_c C_j + b) + N(W_s s')), softmax over the real positions
  output   logits = W_o tanh(N(W_e E y + b_e) + N(W_s s + b_s) + N(W_c c + b_c)) + b_o
Norms: none, layernorm (torch.nn.functional.layer_norm, eps 1e-5, gain and bias) or rmsnorm
(torch.nn.functional.rms_norm, as torch.nn.RMSNorm computes it: eps 1e-5 inside the square
root, gain, no bias; --rmsnorm composed uses x * rsqrt(mean(x^2) + eps) * g instead). Loss:
cross-entropy with label smoothing 0.1 summed over the real target tokens and divided by the
sentences; clip_grad_norm_ to 1; Adam (the preset's learning rate; fused=True, which on 2 cores
took 26 ms a step for the paper preset's parameters where the default for-loop took 270 ms and
foreach=True 190 ms). Initialisation as Nematus's:
N(0, 0.01^2), orthogonal square blocks, zero biases.

Written for speed as a PyTorch user would, without torch.compile or TorchScript: the input
side of every GRU is one product over all steps before the loop; the encoder runs both
directions in the same loop, their state products as one bmm; the decoder's two products of s'
(the attention's query and GRU2's state side) are one; the deep output and the logits are
computed for all steps at once. With norm none, the encoder is torch.nn.GRU over packed
sequences (--encoder gru; --encoder loop uses the loop above for every norm): the same
function, with an extra state-side bias that PyTorch's GRU always has.

--weights FILE starts from the weights bench_gru_nmt --write-weights FILE saved (the same
norm, --encoder loop for norm none): the losses and gradient norms of the first steps then
equal bench_gru_nmt's to float32 rounding (cpu preset, 3 steps: losses to 6 digits, gradient
norms to 5, for none, layernorm and rmsnorm), so the two are the same model.

peak_rss_growth_bytes: the peak resident set minus the resident set after reading the batches
and before building the model, as bench_gru_nmt measures it.
"""

import argparse
import json
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F

from torch_twin import (add_run_arguments, peak_resident_bytes, read_batches, read_safetensors, resident_bytes,
                        start_run)

PRESETS = {"cpu": (128, 256, 8000, 5e-4), "paper": (512, 1024, 32000, 1e-4)}


def nematus_weight(rows, columns):
    weight = torch.empty(rows, columns)
    return nn.init.orthogonal_(weight) if rows == columns else nn.init.normal_(weight, 0.0, 0.01)


def gru_weight(hidden, inputs):
    """[3H, inputs]: the reset, update and candidate blocks, each initialised on its own."""
    return torch.cat([nematus_weight(hidden, inputs) for _ in range(3)])


class Norm(nn.Module):
    """One norm slot over the last dimension, with `copies` sets of parameters for inputs whose
    leading dimension indexes the copy (the encoder's two directions, stacked)."""

    def __init__(self, kind, features, copies=0, composed_rms=False):
        super().__init__()
        self.kind, self.features, self.copies, self.composed_rms = kind, features, copies, composed_rms
        shape = (copies, 1, features) if copies else (features,)
        self.gain = nn.Parameter(torch.ones(shape)) if kind != "none" else None
        self.bias = nn.Parameter(torch.zeros(shape)) if kind == "layernorm" else None

    def forward(self, x):
        if self.kind == "none":
            return x
        shape = (self.features,)
        if self.kind == "layernorm":
            if not self.copies:
                return F.layer_norm(x, shape, self.gain, self.bias, 1e-5)
            return torch.addcmul(self.bias, F.layer_norm(x, shape, eps=1e-5), self.gain)
        if self.composed_rms:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.gain
        if not self.copies:
            return F.rms_norm(x, shape, self.gain, 1e-5)
        return F.rms_norm(x, shape, eps=1e-5) * self.gain


class GateNorms(nn.Module):
    """A GRU side's two norm slots: the 2H gate pre-activations and the H candidate ones."""

    def __init__(self, kind, hidden, copies=0, composed_rms=False):
        super().__init__()
        self.kind, self.hidden = kind, hidden
        self.gates = Norm(kind, 2 * hidden, copies, composed_rms)
        self.candidate = Norm(kind, hidden, copies, composed_rms)

    def forward(self, x):
        if self.kind == "none":
            return x
        gates, candidate = x.split([2 * self.hidden, self.hidden], -1)
        return torch.cat([self.gates(gates), self.candidate(candidate)], -1)


def gru_update(gx, gh, h, hidden):
    """Nematus's GRU given both sides' (normalised) pre-activations."""
    reset, update = torch.sigmoid(gx[..., :2 * hidden] + gh[..., :2 * hidden]).chunk(2, -1)
    candidate = torch.tanh(torch.addcmul(gx[..., 2 * hidden:], reset, gh[..., 2 * hidden:]))
    return torch.lerp(candidate, h, update)  # u h + (1 - u) h~


class LoopEncoder(nn.Module):
    """The bidirectional GRU encoder as a loop: both directions advance together, the reverse
    one over the flipped sequence, with their parameters stacked so that one bmm makes both
    state sides."""

    def __init__(self, embedding, hidden, norm, composed_rms):
        super().__init__()
        self.hidden = hidden
        self.input_weight = nn.Parameter(torch.cat([gru_weight(hidden, embedding) for _ in range(2)]))
        self.input_bias = nn.Parameter(torch.zeros(6 * hidden))
        # [2, H, 3H]: each direction's U^T, for bmm with the stacked states [2, B, H].
        self.state_weight = nn.Parameter(torch.stack([gru_weight(hidden, hidden).t() for _ in range(2)]))
        self.input_norms = GateNorms(norm, hidden, 2, composed_rms)
        self.state_norms = GateNorms(norm, hidden, 2, composed_rms)

    def forward(self, embedded, mask):
        """embedded [B, S, E], mask [B, S] (1.0 at real positions) -> C [B, S, 2H]."""
        batch, steps, _ = embedded.shape
        H = self.hidden
        gx = F.linear(embedded, self.input_weight, self.input_bias).view(batch, steps, 2, 3 * H)
        gx = self.input_norms(gx.permute(1, 2, 0, 3))  # [S, 2, B, 3H]
        # Step t holds the forward direction's step t and the reverse direction's step S-1-t.
        gx = torch.stack([gx[:, 0], gx[:, 1].flip(0)], 1)
        time_mask = mask.t()
        keep = torch.stack([time_mask, time_mask.flip(0)], 1).unsqueeze(-1)  # [S, 2, B, 1]
        real = keep > 0
        h = embedded.new_zeros(2, batch, H)
        outputs = []
        for t in range(steps):
            gh = self.state_norms(torch.bmm(h, self.state_weight))
            new = gru_update(gx[t], gh, h, H)
            h = torch.where(real[t], new, h)
            outputs.append(h * keep[t])
        states = torch.stack(outputs)  # [S, 2, B, H]
        return torch.cat([states[:, 0], states[:, 1].flip(0)], -1).transpose(0, 1)


class PackedEncoder(nn.Module):
    """Norm none: torch.nn.GRU over packed sequences, the same function as LoopEncoder's."""

    def __init__(self, embedding, hidden):
        super().__init__()
        self.gru = nn.GRU(embedding, hidden, batch_first=True, bidirectional=True)
        with torch.no_grad():
            for name, parameter in self.gru.named_parameters():
                if name.startswith("weight_ih"):
                    parameter.copy_(gru_weight(hidden, embedding))
                elif name.startswith("weight_hh"):
                    parameter.copy_(gru_weight(hidden, hidden))
                else:
                    parameter.zero_()

    def forward(self, embedded, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(embedded, lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        output, _ = self.gru(packed)
        return nn.utils.rnn.pad_packed_sequence(output, batch_first=True,
                                                total_length=embedded.shape[1])[0]


class NormalizedLinear(nn.Module):
    """Nematus's feed-forward layer: N(W x + b)."""

    def __init__(self, inputs, outputs, norm, composed_rms):
        super().__init__()
        self.weight = nn.Parameter(nematus_weight(outputs, inputs))
        self.bias = nn.Parameter(torch.zeros(outputs))
        self.norm = Norm(norm, outputs, 0, composed_rms)

    def forward(self, x):
        return self.norm(F.linear(x, self.weight, self.bias))


class RnnSearch(nn.Module):
    def __init__(self, vocabulary, embedding, hidden, norm, encoder, composed_rms):
        super().__init__()
        V, E, H = vocabulary, embedding, hidden
        self.hidden = H
        self.source_embedding = nn.Parameter(nematus_weight(V, E))
        self.target_embedding = nn.Parameter(nematus_weight(V, E))
        self.packed = encoder == "gru"
        self.encoder = PackedEncoder(E, H) if self.packed else LoopEncoder(E, H, norm, composed_rms)
        self.init_state = NormalizedLinear(2 * H, H, norm, composed_rms)
        # GRU1: bias on the input side.
        self.gru1_input_weight = nn.Parameter(gru_weight(H, E))
        self.gru1_input_bias = nn.Parameter(torch.zeros(3 * H))
        self.gru1_state_weight = nn.Parameter(gru_weight(H, H))
        self.gru1_input_norms = GateNorms(norm, H, 0, composed_rms)
        self.gru1_state_norms = GateNorms(norm, H, 0, composed_rms)
        # The attention (size 2H): U_c, b, W_s, v.
        self.attention_context_weight = nn.Parameter(nematus_weight(2 * H, 2 * H))
        self.attention_context_bias = nn.Parameter(torch.zeros(2 * H))
        self.attention_score = nn.Parameter(nematus_weight(2 * H, 1).view(2 * H))
        self.attention_context_norm = Norm(norm, 2 * H, 0, composed_rms)
        self.attention_query_norm = Norm(norm, 2 * H, 0, composed_rms)
        # s' feeds the attention's query (W_s, no bias) and GRU2's state side (U_2, its bias):
        # one product [2H + 3H, H].
        self.query_and_gru2_state_weight = nn.Parameter(torch.cat([nematus_weight(2 * H, H),
                                                                   gru_weight(H, H)]))
        self.gru2_state_bias = nn.Parameter(torch.zeros(3 * H))
        self.register_buffer("query_no_bias", torch.zeros(2 * H))
        self.gru2_input_weight = nn.Parameter(gru_weight(H, 2 * H))
        self.gru2_input_norms = GateNorms(norm, H, 0, composed_rms)
        self.gru2_state_norms = GateNorms(norm, H, 0, composed_rms)
        self.output_from_embedding = NormalizedLinear(E, E, norm, composed_rms)
        self.output_from_state = NormalizedLinear(H, E, norm, composed_rms)
        self.output_from_context = NormalizedLinear(2 * H, E, norm, composed_rms)
        self.logits = nn.Linear(E, V)
        with torch.no_grad():
            self.logits.weight.copy_(nematus_weight(V, E))
            self.logits.bias.zero_()

    def forward(self, source, source_lengths, target_input):
        H = self.hidden
        real = source != 0  # pad_id
        embedded = F.embedding(source, self.source_embedding)
        if self.packed:
            context = self.encoder(embedded, source_lengths)
        else:
            context = self.encoder(embedded, real.to(embedded.dtype))
        mean_context = context.sum(1) / source_lengths.unsqueeze(1).to(context.dtype)
        state = torch.tanh(self.init_state(mean_context))
        projected = self.attention_context_norm(
            F.linear(context, self.attention_context_weight, self.attention_context_bias))
        blocked = ~real

        # The first step reads a zero vector where bos stands, as Nematus does.
        target_embedded = F.embedding(target_input, self.target_embedding) \
            * (target_input != 2).unsqueeze(-1).to(context.dtype)  # bos_id
        gru1_input = self.gru1_input_norms(
            F.linear(target_embedded, self.gru1_input_weight, self.gru1_input_bias)).unbind(1)
        shared_bias = torch.cat([self.query_no_bias, self.gru2_state_bias])
        states, contexts = [], []
        for gx in gru1_input:
            intermediate = gru_update(gx, self.gru1_state_norms(F.linear(state, self.gru1_state_weight)),
                                      state, H)
            query, gru2_state = F.linear(intermediate, self.query_and_gru2_state_weight,
                                         shared_bias).split([2 * H, 3 * H], -1)
            scores = torch.tanh(projected + self.attention_query_norm(query).unsqueeze(1)) \
                @ self.attention_score  # [B, S]
            weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), -1)
            attended = torch.bmm(weights.unsqueeze(1), context).squeeze(1)
            state = gru_update(self.gru2_input_norms(F.linear(attended, self.gru2_input_weight)),
                               self.gru2_state_norms(gru2_state), intermediate, H)
            states.append(state)
            contexts.append(attended)
        hidden = torch.tanh(self.output_from_embedding(target_embedded)
                            + self.output_from_state(torch.stack(states, 1))
                            + self.output_from_context(torch.stack(contexts, 1)))
        return self.logits(hidden)


def normgrad_state(model, tensors):
    """The twin's state dict from the names of a file bench_gru_nmt --write-weights saved."""
    state = {"query_no_bias": model.query_no_bias}

    def gate_norms(prefix, source, copies=None):
        for part, name in (("gates", "gates_norm"), ("candidate", "candidate_norm")):
            for kind in ("gain", "bias"):
                if copies:
                    keys = [f"{copy}.{source}_{name}.{kind}" for copy in copies]
                    if keys[0] in tensors:
                        state[f"{prefix}.{part}.{kind}"] = torch.stack([tensors[k] for k in keys]).unsqueeze(1)
                elif f"{source}_{name}.{kind}" in tensors:
                    state[f"{prefix}.{part}.{kind}"] = tensors[f"{source}_{name}.{kind}"]

    directions = ("encoder.forward", "encoder.reverse")
    if model.packed:
        for suffix, direction in (("l0", directions[0]), ("l0_reverse", directions[1])):
            state[f"encoder.gru.weight_ih_{suffix}"] = tensors[f"{direction}.weight_ih"]
            state[f"encoder.gru.weight_hh_{suffix}"] = tensors[f"{direction}.weight_hh"]
            state[f"encoder.gru.bias_ih_{suffix}"] = tensors[f"{direction}.bias_ih"]
            state[f"encoder.gru.bias_hh_{suffix}"] = torch.zeros_like(tensors[f"{direction}.bias_ih"])
    else:
        state["encoder.input_weight"] = torch.cat([tensors[f"{d}.weight_ih"] for d in directions])
        state["encoder.input_bias"] = torch.cat([tensors[f"{d}.bias_ih"] for d in directions])
        state["encoder.state_weight"] = torch.stack([tensors[f"{d}.weight_hh"].t() for d in directions])
        gate_norms("encoder.input_norms", "input", directions)
        gate_norms("encoder.state_norms", "state", directions)
    state["source_embedding"] = tensors["source_embedding.weight"]
    state["target_embedding"] = tensors["target_embedding.weight"]
    state["gru1_input_weight"] = tensors["decoder_gru1.weight_ih"]
    state["gru1_input_bias"] = tensors["decoder_gru1.bias_ih"]
    state["gru1_state_weight"] = tensors["decoder_gru1.weight_hh"]
    state["attention_context_weight"] = tensors["attention.context_weight"]
    state["attention_context_bias"] = tensors["attention.context_bias"]
    state["attention_score"] = tensors["attention.score_weight"]
    state["query_and_gru2_state_weight"] = torch.cat([tensors["attention.query_weight"],
                                                      tensors["decoder_gru2.weight_hh"]])
    state["gru2_state_bias"] = tensors["decoder_gru2.bias_hh"]
    state["gru2_input_weight"] = tensors["decoder_gru2.weight_ih"]
    for layer in ("decoder_gru1", "decoder_gru2"):
        short = layer.replace("decoder_", "")
        gate_norms(f"{short}_input_norms", f"{layer}.input")
        gate_norms(f"{short}_state_norms", f"{layer}.state")
    for norm in ("context_norm", "query_norm"):
        for kind in ("gain", "bias"):
            if f"attention.{norm}.{kind}" in tensors:
                state[f"attention_{norm}.{kind}"] = tensors[f"attention.{norm}.{kind}"]
    for name, tensor in tensors.items():
        if name.split(".")[0] in ("init_state", "output_from_embedding", "output_from_state",
                                  "output_from_context", "logits"):
            state[name] = tensor
    return state


def batch_loss(model, batch):
    logits = model(batch["source"], batch["source_lengths"], batch["target_input"])
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["target_output"].reshape(-1),
                            ignore_index=0, label_smoothing=0.1, reduction="sum")
    return total / batch["source"].shape[0]


def count_flops(model, batches, preset):
    """The matrix products' floating-point operations (2 per multiply-add) of one pass over the
    batches, forward and backward, and the token counts they cover."""
    from torch.utils.flop_counter import FlopCounterMode
    flops = 0
    for batch in batches:
        with FlopCounterMode(display=False) as counter:
            batch_loss(model, batch).backward()
        flops += counter.get_total_flops()
    return {"framework": f"PyTorch {torch.__version__}", "model": "gru_nmt", "preset": preset,
            "mode": "count-flops", "batches": len(batches), "matrix_product_flops_per_pass": flops,
            "parameters": sum(p.numel() for p in model.parameters()),
            "target_tokens": sum(int((b["target_output"] != 0).sum()) for b in batches),
            "target_positions": sum(b["target_output"].numel() for b in batches),
            "source_tokens": sum(int(b["source_lengths"].sum()) for b in batches)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", required=True, help="a file written by bench_gru_nmt --write-batches")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    parser.add_argument("--norm", choices=["none", "layernorm", "rmsnorm"], default="none")
    parser.add_argument("--encoder", choices=["auto", "gru", "loop"], default="auto",
                        help="auto: torch.nn.GRU with norm none, the loop otherwise")
    parser.add_argument("--rmsnorm", choices=["functional", "composed"], default="functional")
    parser.add_argument("--adam", choices=["fused", "foreach", "loop"], default="fused",
                        help="Adam's implementation (fused: the fastest on a CPU)")
    parser.add_argument("--weights", help="start from the weights bench_gru_nmt --write-weights saved "
                        "(a check that both compute the same function: compare first_loss and gradient_norms)")
    add_run_arguments(parser)
    parser.add_argument("--count-flops", action="store_true",
                        help="count the floating-point operations of the matrix products in the forward and "
                        "backward passes over every batch once (torch.utils.flop_counter), print them and stop")
    arguments = parser.parse_args()
    device = start_run(arguments)
    embedding, hidden, vocabulary, learning_rate = PRESETS[arguments.preset]
    batches, metadata = read_batches(arguments.batches, device)
    vocabulary = int(metadata.get("vocabulary", vocabulary))
    if int(metadata.get("embedding", embedding)) != embedding or int(metadata.get("hidden", hidden)) != hidden:
        parser.error(f"{arguments.batches} was written for another preset")
    encoder = arguments.encoder
    if encoder == "auto":
        encoder = "gru" if arguments.norm == "none" else "loop"
    if encoder == "gru" and arguments.norm != "none":
        parser.error("--encoder gru has no norm slots: use --norm none")

    rss_before = resident_bytes()
    model = RnnSearch(vocabulary, embedding, hidden, arguments.norm, encoder,
                      arguments.rmsnorm == "composed")
    if arguments.weights:
        model.load_state_dict(normgrad_state(model, read_safetensors(arguments.weights)[0]))
    model.to(device)
    parameters = list(model.parameters())
    if arguments.count_flops:
        print(json.dumps(count_flops(model, batches, arguments.preset)))
        return
    adam = torch.optim.Adam(parameters, lr=learning_rate, fused=arguments.adam == "fused",
                            foreach=arguments.adam == "foreach")
    times, losses, gradient_norms = [], [], []
    for step in range(arguments.warmup + arguments.steps):
        batch = batches[step % len(batches)]
        start = time.perf_counter()
        adam.zero_grad()
        loss = batch_loss(model, batch)
        loss.backward()
        gradient_norm = torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        adam.step()
        losses.append(loss.item())
        gradient_norms.append(gradient_norm.item())
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step >= arguments.warmup:
            times.append(time.perf_counter() - start)
    peak = peak_resident_bytes()
    first = batches[0]
    first_tokens = int((first["target_output"] != 0).sum())
    median = statistics.median(times)
    extra = {"peak_tensor_bytes": torch.cuda.max_memory_allocated()} if device.type == "cuda" else {}
    print(json.dumps({
        "framework": f"PyTorch {torch.__version__}", "model": "gru_nmt", "preset": arguments.preset,
        "norm": arguments.norm, "device": arguments.device, "threads": torch.get_num_threads(),
        "embedding": embedding, "hidden": hidden, "vocabulary": vocabulary, "encoder": encoder,
        "rmsnorm": arguments.rmsnorm, "adam": arguments.adam, "mode": "train", "batches": len(batches),
        "first_loss": losses[0], "first_token_loss": losses[0] * first["source"].shape[0] / first_tokens,
        "losses": losses, "gradient_norms": gradient_norms, "step_seconds": times, "median_seconds": median, "steps_per_second": 1 / median,
        "peak_rss_growth_bytes": peak - rss_before, **extra,
    }))


if __name__ == "__main__":
    main()
