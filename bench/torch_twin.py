"""What the PyTorch twins of the translation benchmarks share (bench_gru_nmt_torch.py,
bench_transformer_nmt_torch.py): reading the batches and weights their normgrad side wrote in
safetensors form, without the safetensors package, and the process's memory as the C++ side
measures it (bench/process_memory.h)."""

import json
import resource
import struct

import torch

DTYPES = {"I64": torch.int64, "F32": torch.float32, "F64": torch.float64}


def resident_bytes():
    """/proc/self/statm's resident pages, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def peak_resident_bytes():
    """getrusage's ru_maxrss (KiB on Linux), in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def read_safetensors(path):
    """The tensors and metadata of a safetensors file (an 8-byte header length, a JSON header,
    the raw little-endian data)."""
    with open(path, "rb") as file:
        data = file.read()
    (header_length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_length])
    metadata = header.pop("__metadata__", {})
    body = bytearray(data[8 + header_length:])
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        tensors[name] = torch.frombuffer(body[begin:end], dtype=dtype).reshape(entry["shape"]).clone() \
            if end > begin else torch.empty(entry["shape"], dtype=dtype)
    return tensors, metadata


def read_batches(path, device):
    """The batches a normgrad benchmark's --write-batches saved, as dictionaries of tensors."""
    tensors, metadata = read_safetensors(path)
    keys = ("source", "source_lengths", "target_input", "target_output")
    batches = [{key: tensors[f"batch.{i}.{key}"].to(device) for key in keys}
               for i in range(int(metadata["batches"]))]
    return batches, metadata


def add_run_arguments(parser):
    """The flags every twin takes: timed and untimed steps, threads, device."""
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")


def start_run(arguments):
    """Threads, seed 1 and full float32 products (no TF32 on a GPU), as the normgrad side runs;
    returns the device."""
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch.device(arguments.device)
