#!/usr/bin/env python3
"""torch_forward_profile: where the host time of a converted torchvision model's forward goes (cProfile).

Usage: PYTHONPATH=build/python bench/torch_forward_profile.py [--model resnet50] [--batch 1] [--precision fp32]
           [--forwards 200] [--top 25]
Converts the model with convgen.torch.convert (default choices, no tuning), runs it 10 times to compile and warm
up, then profiles --forwards forwards (the GPU synchronized once at the end) and prints the functions with the most
own time and the most time including callees, with their call counts per forward. Random weights; nothing is
downloaded.
"""
import argparse
import cProfile
import io
import pstats

import torch
import torchvision

import convgen.torch as ct

DTYPES = {"fp32": torch.float32, "fp16": torch.float16}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--precision", choices=sorted(DTYPES), default="fp32")
    parser.add_argument("--forwards", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    dtype = DTYPES[args.precision]
    model = getattr(torchvision.models, args.model)(weights=None).cuda().eval().to(dtype)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda", dtype=dtype)
    if args.precision == "fp16":
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    converted = ct.convert(model)
    with torch.inference_mode():
        for _ in range(10):
            converted(x)
        torch.cuda.synchronize()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.forwards):
            converted(x)
        torch.cuda.synchronize()
        profiler.disable()
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats(key)
        stats.print_stats(args.top)
        print(f"== {args.model} batch {args.batch} {args.precision}, {args.forwards} forwards, by {key}")
        print(out.getvalue())


if __name__ == "__main__":
    main()
