#!/usr/bin/env python3
"""Times torchvision's own networks through PyTorch, the ways a user runs them for
inference: eager NCHW, eager channels-last, and TorchScript frozen and optimized for
inference; each under torch.inference_mode at torch.set_num_threads(N). The other side
of bench/torch_baseline_bench.cc, which runs it.

Usage: torchvision_baseline.py NAME... [--threads N] [--image-size N] [--runs N]
                               [--profile N]

NAME is resnet18 or mobilenet_v2, built as tests/onnx/export_torchvision.py exports it
(random weights, randomized batch-norm statistics). Prints one line per network and way,
"time NAME WAY SECONDS": the median of --runs timed calls after 5 untimed ones. With
--profile N, then each way's N operators of the largest self CPU time over 10 calls
(torch.autograd.profiler), one line each: "op NAME WAY OPERATOR CALLS SECONDS".
"""
import argparse
import copy
import os
import statistics
import sys
import time

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "onnx"))
from export_torchvision import SEED, randomize_batch_norm  # noqa: E402

NETWORKS = ("resnet18", "mobilenet_v2")


def median_seconds(model, x, runs):
    with torch.inference_mode():
        for _ in range(5):
            model(x)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def profile(model, x, top):
    """The `top` operators of the largest self CPU time over 10 calls: (name, calls, s)."""
    with torch.inference_mode():
        model(x)
        with torch.autograd.profiler.profile() as prof:
            for _ in range(10):
                model(x)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    return [(e.key, e.count // 10, e.self_cpu_time_total / 10 / 1e6) for e in events[:top]]


def ways(name, image_size, generator):
    """(way, model, input) for each way the network runs."""
    model = getattr(torchvision.models, name)(weights=None)
    randomize_batch_norm(model, generator)
    model.eval()
    x = torch.rand((1, 3, image_size, image_size), generator=generator) * 2 - 1
    frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model)))
    channels_last = copy.deepcopy(model).to(memory_format=torch.channels_last)
    return [("nchw", model, x), ("channels_last", channels_last,
                                 x.contiguous(memory_format=torch.channels_last)),
            ("frozen", frozen, x)]


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("names", nargs="+", choices=NETWORKS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(SEED)
    for name in args.names:
        for way, model, x in ways(name, args.image_size, generator):
            print(f"time {name} {way} {median_seconds(model, x, args.runs):.6e}", flush=True)
            if args.profile:
                for op, calls, seconds in profile(model, x, args.profile):
                    print(f"op {name} {way} {op} {calls} {seconds:.6e}", flush=True)


if __name__ == "__main__":
    main()
