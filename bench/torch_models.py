#!/usr/bin/env python3
"""torch_models: whole-model forward time of torchvision models with PyTorch eager, torch.compile(max-autotune) and
convgen's converted model, each verified against eager, with the tuning time of both tuners.

Usage: PYTHONPATH=build/python bench/torch_models.py [--models resnet50,densenet121] [--batch 1,8]
           [--precision fp32,fp16] [--out DIR] [--runs 50] [--budget 4] [--database FILE] [--no-compile] [--sparse]

Per model, batch and precision (random weights, torch.manual_seed(0), nothing downloaded; eval, inference_mode):
  eager     the model as it is: PyTorch's convolutions (cuDNN) with its dispatch
  compiled  torch.compile(mode="max-autotune"); its tuning time is the first call's wall time (compile + autotune)
  convgen   convgen.torch.convert(copy) then convgen.torch.tune(copy, x) (its tuning time), then run
fp32 is strict for all three (TF32 off in cuDNN and matmul), fp16 runs channels-last for all three. --sparse
declares each convolution's observed input zero fraction (convgen.torch.observe_act_sparsity) to convgen.
Times: CUDA events around each forward after 10 warm-up calls, the median of --runs. Verification: relative L2
against eager, limits fp32 1e-4 (a deep network's accumulated rounding), fp16 2e-2; a model that fails is
reported FAILED and has no speedup. Writes DIR/torch_models.md and .json (with the GPU, versions and command).
"""
import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torchvision

import convgen
import convgen.torch as ct

LIMITS = {"fp32": 1e-4, "fp16": 2e-2}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16}


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def time_forward(model, x, runs):
    with torch.inference_mode():
        for _ in range(10):
            model(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)  # µs
    return statistics.median(times)


def build(name, precision):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).cuda().eval().to(DTYPES[precision])
    if precision == "fp16":
        model = model.to(memory_format=torch.channels_last)
    return model


def example(batch, precision):
    torch.manual_seed(1)
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=DTYPES[precision])
    return x.to(memory_format=torch.channels_last) if precision == "fp16" else x


def measure(name, batch, precision, args):
    row = {"model": name, "batch": batch, "precision": precision}
    model = build(name, precision)
    x = example(batch, precision)
    with torch.inference_mode():
        want = model(x)
    row["eager_us"] = time_forward(model, x, args.runs)

    if not args.no_compile:
        torch._dynamo.reset()
        compiled = torch.compile(copy.deepcopy(model), mode="max-autotune")
        start = time.perf_counter()
        with torch.inference_mode():
            got = compiled(x)
        torch.cuda.synchronize()
        row["compile_tuning_s"] = time.perf_counter() - start
        row["compiled_rel_l2"] = rel_l2(got, want)
        row["compiled_us"] = time_forward(compiled, x, args.runs)

    converted = copy.deepcopy(model)
    sparsity = ct.observe_act_sparsity(converted, x) if args.sparse else None
    ct.convert(converted, act_sparsity=sparsity)
    start = time.perf_counter()
    summary = ct.tune(converted, x, database=args.database, budget=args.budget)
    row["convgen_tuning_s"] = time.perf_counter() - start
    with torch.inference_mode():
        got = converted(x)
    row["convgen_rel_l2"] = rel_l2(got, want)
    row["convgen_us"] = time_forward(converted, x, args.runs)
    row["convgen_layers"] = len(summary)
    row["convgen_fallbacks"] = sum(1 for s in summary if s["chosen_by"] == "pytorch")
    row["convgen_kernels"] = summary
    limit = LIMITS[precision]
    row["verified"] = row["convgen_rel_l2"] <= limit and row.get("compiled_rel_l2", 0.0) <= limit
    return row


def table(rows):
    lines = ["| model | batch | precision | eager µs | max-autotune µs (tuning s) | convgen µs (tuning s) | "
             "eager / convgen | max-autotune / convgen | tuning ratio | rel L2 convgen | verified |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        compiled = f"{r['compiled_us']:.1f} ({r['compile_tuning_s']:.0f})" if "compiled_us" in r else "—"
        ok = r["verified"]
        vs_eager = f"{r['eager_us'] / r['convgen_us']:.2f}×" if ok else "FAILED"
        vs_compiled = f"{r['compiled_us'] / r['convgen_us']:.2f}×" if ok and "compiled_us" in r else "—"
        tuning = f"{r['convgen_tuning_s'] / r['compile_tuning_s']:.2f}" if "compile_tuning_s" in r else "—"
        lines.append(f"| {r['model']} | {r['batch']} | {r['precision']} | {r['eager_us']:.1f} | {compiled} | "
                     f"{r['convgen_us']:.1f} ({r['convgen_tuning_s']:.0f}) | {vs_eager} | {vs_compiled} | {tuning} | "
                     f"{r['convgen_rel_l2']:.1e} | {'yes' if ok else 'NO'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnet50,densenet121")
    parser.add_argument("--batch", default="1,8")
    parser.add_argument("--precision", default="fp32,fp16")
    parser.add_argument("--out", default="bench-results")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--budget", type=int, default=4, help="convgen candidates measured per layer")
    parser.add_argument("--database", default=None, help="tuning database (default: the CLI's)")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--sparse", action="store_true", help="declare observed activation sparsity to convgen")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_models: no CUDA device")
    for precision in args.precision.split(","):
        if precision not in LIMITS:
            sys.exit(f"torch_models: --precision {precision}: expected fp32 or fp16")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        for precision in args.precision.split(","):
            for batch in (int(b) for b in args.batch.split(",")):
                print(f"== {name} batch {batch} {precision}", flush=True)
                rows.append(measure(name, batch, precision, args))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    provenance = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                  "torchvision": torchvision.__version__, "cudnn": torch.backends.cudnn.version(),
                  "convgen": convgen.version(), "commit": convgen.commit(), "command": " ".join(sys.argv)}
    (out / "torch_models.json").write_text(json.dumps({"provenance": provenance, "rows": rows}, indent=1))
    header = (f"# torchvision models: PyTorch eager, torch.compile(max-autotune), convgen\n\n"
              f"{provenance['gpu']}, PyTorch {provenance['torch']}, cuDNN {provenance['cudnn']}, convgen "
              f"{provenance['convgen']} ({provenance['commit']}). Command: `{provenance['command']}`\n\n")
    (out / "torch_models.md").write_text(header + table(rows))
    print(f"wrote {out / 'torch_models.md'}")


if __name__ == "__main__":
    main()
