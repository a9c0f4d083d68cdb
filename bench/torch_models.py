#!/usr/bin/env python3
"""torch_models: whole-model forward time of torchvision models with PyTorch eager, torch.compile(max-autotune) and
convgen's converted model (launched from Python, and replayed as a CUDA graph), each verified against eager, with the
tuning time of both tuners.

Usage: PYTHONPATH=build/python bench/torch_models.py [--models resnet50,densenet121] [--batch 1,8]
           [--precision fp32,fp16] [--out DIR] [--runs 50] [--budget 4] [--database FILE] [--no-compile] [--sparse]
           [--no-fuse] [--frozen-weights] [--frozen-ab] [--profile-host]
       bench/torch_models.py --merge DIR1,DIR2,... --out DIR    (one report of several runs' rows, e.g. one per GPU:
                                                                 bench/torch_models_lanes.sh)

Per model, batch and precision (random weights, torch.manual_seed(0), nothing downloaded; eval, inference_mode):
  eager          the model as it is: PyTorch's convolutions (cuDNN) with its dispatch; no graph
  compiled       torch.compile(mode="max-autotune"), which replays CUDA graphs of its own (inductor's cudagraphs);
                 its tuning time is the first call's wall time (compile + autotune). Measured last: while it tunes
                 the report is rewritten every 10 s with the time spent so far, so a run cut short by a time limit
                 keeps the row's other columns and says "not finished (tuning > T)"
  convgen        convgen.torch.convert(copy) then convgen.torch.tune(converted, x) (its tuning time), then run:
                 every kernel launched from Python on each call; no graph. Each convolution fused with its BatchNorm,
                 residual add and ReLU (convert's fusion), unless --no-fuse
  convgen+graph  the same converted model captured once in a torch.cuda.CUDAGraph after warm-up, then replayed
                 (a new input is copied into the graph's static input, as a server would)
fp32 is strict for all (TF32 off in cuDNN and matmul), fp16 runs channels-last for all. --sparse declares each
convolution's observed input zero fraction (convgen.torch.observe_act_sparsity) to convgen.
Times: CUDA events around each forward (or replay) after 10 warm-up calls, the median of --runs. Verification:
relative L2 against eager, limits fp32 1e-4 (a deep network's accumulated rounding), fp16 2e-2; convgen+graph is
verified on a second input copied into its static input, against eager on that input. A model that fails is reported
FAILED and has no speedup. --profile-host adds the host time of the forward and of each convolution call, eager and
convgen (below). Writes DIR/torch_models.md and .json (with the GPU, versions and command) after each
model, batch and precision, so a run cut short (a time limit) keeps the rows it finished.

Host time (--profile-host): the CPU time of a call with the GPU work left out: each call is timed alone with
time.perf_counter_ns, the device synchronized between calls and outside the timing, so the launch queue never fills
and no call waits for the GPU. Per forward: the model's forward (median of --runs). Per convolution: every Conv2d
module called on its own recorded input, eager's torch.nn.Conv2d and convgen's module on the same tensor (median per
layer, then the median over layers; a fused module is called with its residual, so its call is the convolution's
with the BatchNorm, add and ReLU it stands for).
"""
import argparse
import copy
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

LIMITS = {"fp32": 1e-4, "fp16": 2e-2}
DTYPES = {"fp32": "float32", "fp16": "float16"}  # torch's names
# PyTorch, torchvision and convgen, imported by import_frameworks() where a run measures (--merge needs none of them)
torch = torchvision = convgen = ct = None


def import_frameworks():
    global torch, torchvision, convgen, ct
    import torch
    import torchvision

    import convgen
    import convgen.torch as ct


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def time_forward(model, x, runs):
    return time_call(lambda: model(x), runs)


def time_call(call, runs):
    with torch.inference_mode():
        for _ in range(10):
            call()
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)  # µs
    return statistics.median(times)


def capture(model, x):
    """The model's forward captured in a CUDA graph after warm-up on a side stream (PyTorch's recipe): the graph,
    its static input (a copy of x, same memory format) and its static output."""
    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.inference_mode(), torch.cuda.stream(side):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(graph):
        static_y = model(static_x)
    return graph, static_x, static_y


def host_us(call, runs):
    """Median host time of one call (µs), the GPU synchronized between calls and outside the timing."""
    times = []
    with torch.inference_mode():
        for _ in range(10):
            call()
        torch.cuda.synchronize()
        for _ in range(runs):
            start = time.perf_counter_ns()
            call()
            times.append((time.perf_counter_ns() - start) / 1000.0)
            torch.cuda.synchronize()
    return statistics.median(times)


def profile_host(model, converted, x, runs):
    """Host µs per forward (eager, convgen) and per convolution call (median over layers), as profile-host says."""
    inputs, converted_inputs, hooks = {}, {}, []
    for name, module in model.named_modules():
        if type(module) is torch.nn.Conv2d:
            hooks.append(module.register_forward_pre_hook(lambda m, args, name=name: inputs.setdefault(name, args)))
    for name, module in converted.named_modules():
        if isinstance(module, ct.Conv2d):  # a fused one's arguments: the input and the residual
            hooks.append(module.register_forward_pre_hook(
                lambda m, args, name=name: converted_inputs.setdefault(name, args)))
    try:
        with torch.inference_mode():
            model(x)
            converted(x)
    finally:
        for hook in hooks:
            hook.remove()
    eager_conv, convgen_conv = [], []
    for name, args in inputs.items():
        eager_conv.append(host_us(lambda m=model.get_submodule(name), a=args: m(*a), runs))
    for name, args in converted_inputs.items():
        convgen_conv.append(host_us(lambda m=converted.get_submodule(name), a=args: m(*a), runs))
    return {"host_eager_forward_us": host_us(lambda: model(x), runs),
            "host_convgen_forward_us": host_us(lambda: converted(x), runs),
            "host_convs": len(inputs),
            "host_eager_conv_us": statistics.median(eager_conv),
            "host_convgen_conv_us": statistics.median(convgen_conv)}


def build(name, precision):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).cuda().eval().to(getattr(torch, DTYPES[precision]))
    if precision == "fp16":
        model = model.to(memory_format=torch.channels_last)
    return model


def example(batch, precision):
    torch.manual_seed(1)
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=getattr(torch, DTYPES[precision]))
    return x.to(memory_format=torch.channels_last) if precision == "fp16" else x


def measure(name, batch, precision, args, checkpoint):
    """One row: eager, convgen (tuned, plain and graph), then max-autotune. `checkpoint(row)` writes the report with
    the row as it stands: after convgen's part, and every few seconds while max-autotune tunes (with the time spent
    so far as a lower bound), so a run cut short keeps what it measured and how long max-autotune had run."""
    row = {"model": name, "batch": batch, "precision": precision}
    model = build(name, precision)
    x = example(batch, precision)
    with torch.inference_mode():
        want = model(x)
    row["eager_us"] = time_forward(model, x, args.runs)
    limit = LIMITS[precision]
    if args.compile_only:
        row["compile_only"] = True
        row["verified"] = True  # the compiled model's check below
    else:
        measure_convgen(row, model, x, want, precision, args)
    if not args.no_compile:
        measure_compiled(row, model, x, want, limit, args, checkpoint)
    return row


def measure_convgen(row, model, x, want, precision, args):
    sparsity = ct.observe_act_sparsity(model, x) if args.sparse else None
    converted = ct.convert(copy.deepcopy(model), act_sparsity=sparsity, fuse=not args.no_fuse,
                           frozen_weights=args.frozen_weights)
    row["fused"] = not args.no_fuse
    row["frozen_weights"] = args.frozen_weights
    start = time.perf_counter()
    summary = ct.tune(converted, x, database=args.database, budget=args.budget)
    row["convgen_tuning_s"] = time.perf_counter() - start
    with torch.inference_mode():
        got = converted(x)
    row["convgen_rel_l2"] = rel_l2(got, want)
    row["convgen_us"] = time_forward(converted, x, args.runs)

    graph, static_x, static_y = capture(converted, x)
    torch.manual_seed(2)
    x2 = torch.randn_like(x)
    with torch.inference_mode():
        want2 = model(x2)
        static_x.copy_(x2)
    graph.replay()
    row["convgen_graph_rel_l2"] = rel_l2(static_y, want2)
    row["convgen_graph_us"] = time_call(graph.replay, args.runs)
    if args.frozen_ab and not args.frozen_weights:
        # The same converted model with its weights declared frozen (each plan's flag, as convert(frozen_weights=True)
        # would have set it): captured again, its replays read the filter copies prepared before the capture.
        del graph
        for module in converted.modules():
            for plan in getattr(module, "_plans", {}).values():
                plan.frozen = True
        frozen_graph, frozen_x, frozen_y = capture(converted, x)
        with torch.inference_mode():
            frozen_x.copy_(x2)
        frozen_graph.replay()
        row["convgen_frozen_graph_rel_l2"] = rel_l2(frozen_y, want2)
        row["convgen_frozen_graph_us"] = time_call(frozen_graph.replay, args.runs)
    if args.profile_host:
        row.update(profile_host(model, converted, x, args.runs))
        print(host_table([row]).splitlines()[-1], flush=True)
    row["convgen_layers"] = len(summary)
    row["convgen_fallbacks"] = sum(1 for s in summary if s["chosen_by"] == "pytorch")
    row["convgen_kernels"] = summary
    # The pre-activation passes (concatenation → BatchNorm → ReLU as one kernel) and the calls PyTorch ran instead.
    passes = [m for m in converted.modules() if isinstance(m, ct.AffineConcat)]
    row["convgen_passes"] = len(passes)
    row["convgen_pass_fallbacks"] = sum(m.fallbacks for m in passes)
    limit = LIMITS[precision]
    row["verified"] = (row["convgen_rel_l2"] <= limit and row["convgen_graph_rel_l2"] <= limit
                       and row.get("convgen_frozen_graph_rel_l2", 0.0) <= limit)


def measure_compiled(row, model, x, want, limit, args, checkpoint):
    """max-autotune's columns of `row`. With --compile-only its caches may hold an earlier run's work (TORCHINDUCTOR_
    CACHE_DIR and TRITON_CACHE_DIR kept): its tuning time is then this run's part, which --merge adds to the time the
    earlier run had spent."""
    torch._dynamo.reset()
    compiled = torch.compile(copy.deepcopy(model), mode="max-autotune")
    start = time.perf_counter()
    done = threading.Event()

    def watch():  # the time spent so far, for a run cut short while max-autotune tunes
        while not done.wait(10.0):
            row["compile_tuning_s_so_far"] = time.perf_counter() - start
            checkpoint(row)

    checkpoint(row)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with torch.inference_mode():
            got = compiled(x)
        torch.cuda.synchronize()
    finally:
        done.set()
        watcher.join()
    row["compile_tuning_s"] = time.perf_counter() - start
    row.pop("compile_tuning_s_so_far", None)
    row["compiled_rel_l2"] = rel_l2(got, want)
    row["compiled_us"] = time_forward(compiled, x, args.runs)
    row["verified"] = row["verified"] and row["compiled_rel_l2"] <= limit


def table(rows):
    lines = ["| model | batch | precision | eager µs | max-autotune µs, graphs (tuning s) | convgen µs (tuning s) | "
             "convgen+graph µs | eager / convgen | eager / convgen+graph | max-autotune / convgen+graph | "
             "tuning ratio | rel L2 convgen, +graph | verified |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "verified" not in r:  # a row whose convgen part did not finish: nothing to show
            continue
        if r.get("compile_only"):  # max-autotune alone (a resumed tune); --merge joins it to its convgen row
            done = (f"{r['compiled_us']:.1f} ({r['compile_tuning_s']:.0f} this run)" if "compiled_us" in r else
                    f"not finished (tuning > {r.get('compile_tuning_s_so_far', 0):.0f} this run)")
            lines.append(f"| {r['model']} | {r['batch']} | {r['precision']} | {r['eager_us']:.1f} | {done} | — | — | "
                         f"— | — | — | — | — | {'yes' if r['verified'] else 'NO'} |")
            continue
        runs = f" in {r['compile_runs']} runs" if r.get("compile_runs", 1) > 1 else ""
        if "compiled_us" in r:
            compiled = f"{r['compiled_us']:.1f} ({r['compile_tuning_s']:.0f}{runs})"
        elif "compile_tuning_s_so_far" in r:
            compiled = f"not finished (tuning > {r['compile_tuning_s_so_far']:.0f}{runs})"
        else:
            compiled = "—"
        ok = r["verified"]
        frozen = (f" (frozen: {r['convgen_frozen_graph_us']:.1f})" if "convgen_frozen_graph_us" in r else "")
        vs_eager = f"{r['eager_us'] / r['convgen_us']:.2f}×" if ok else "FAILED"
        vs_eager_graph = f"{r['eager_us'] / r['convgen_graph_us']:.2f}×" if ok else "FAILED"
        vs_compiled = f"{r['compiled_us'] / r['convgen_graph_us']:.2f}×" if ok and "compiled_us" in r else "—"
        if "compile_tuning_s" in r:
            tuning = f"{r['convgen_tuning_s'] / r['compile_tuning_s']:.2f}"
        elif "compile_tuning_s_so_far" in r:
            tuning = f"< {r['convgen_tuning_s'] / r['compile_tuning_s_so_far']:.2f}"
        else:
            tuning = "—"
        lines.append(f"| {r['model']} | {r['batch']} | {r['precision']} | {r['eager_us']:.1f} | {compiled} | "
                     f"{r['convgen_us']:.1f} ({r['convgen_tuning_s']:.0f}) | {r['convgen_graph_us']:.1f}{frozen} | "
                     f"{vs_eager} | {vs_eager_graph} | {vs_compiled} | {tuning} | {r['convgen_rel_l2']:.1e}, "
                     f"{r['convgen_graph_rel_l2']:.1e} | {'yes' if ok else 'NO'} |")
    return "\n".join(lines) + "\n"


FROZEN_NOTE = ("convgen+graph here converts with frozen_weights=True (--frozen-weights): its replays read the filter "
               "copies (winograd's transformed filters, packed ones) prepared before the capture.\n\n")
GRAPHS_NOTE = ("Graphs: max-autotune and convgen+graph replay CUDA graphs (max-autotune its own, inductor's "
               "cudagraphs; convgen+graph the converted model captured with torch.cuda.graph after warm-up); eager "
               "and convgen launch every kernel from Python on each call.\n\n")


def host_table(rows):
    lines = ["| model | batch | precision | host µs per forward: eager | convgen | convolutions | "
             "host µs per convolution call: eager | convgen |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "host_convs" in r:
            lines.append(f"| {r['model']} | {r['batch']} | {r['precision']} | {r['host_eager_forward_us']:.1f} | "
                         f"{r['host_convgen_forward_us']:.1f} | {r['host_convs']} | {r['host_eager_conv_us']:.1f} | "
                         f"{r['host_convgen_conv_us']:.1f} |")
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
    parser.add_argument("--no-fuse", action="store_true",
                        help="convert module by module: no BatchNorm, add or ReLU fused into the convolutions")
    parser.add_argument("--frozen-weights", action="store_true",
                        help="convert with frozen_weights=True: the CUDA graph replays the filter copies prepared "
                             "before capture instead of preparing them in every replay")
    parser.add_argument("--frozen-ab", action="store_true",
                        help="also capture and time the converted model with its weights declared frozen (a column "
                             "of its own): the graph with and without preparing the filters in every replay")
    parser.add_argument("--profile-host", action="store_true",
                        help="also time the host side of each forward and convolution call, eager and convgen")
    parser.add_argument("--compile-only", action="store_true",
                        help="measure eager and max-autotune only (resuming a tune cut short: --merge joins the rows)")
    parser.add_argument("--merge", default=None,
                        help="comma-separated folders of earlier runs: write one report of their rows to --out")
    args = parser.parse_args()
    if args.merge:
        merge(args.merge.split(","), Path(args.out), args)
        return
    import_frameworks()
    if not torch.cuda.is_available():
        sys.exit("torch_models: no CUDA device")
    for precision in args.precision.split(","):
        if precision not in LIMITS:
            sys.exit(f"torch_models: --precision {precision}: expected fp32 or fp16")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    provenance = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                  "torchvision": torchvision.__version__, "cudnn": torch.backends.cudnn.version(),
                  "convgen": convgen.version(), "commit": convgen.commit(), "command": " ".join(sys.argv),
                  "cores": len(os.sched_getaffinity(0)),
                  "inductor_compile_threads": os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "default")}
    rows = []
    for name in args.models.split(","):
        for precision in args.precision.split(","):
            for batch in (int(b) for b in args.batch.split(",")):
                print(f"== {name} batch {batch} {precision}", flush=True)
                rows.append({"model": name, "batch": batch, "precision": precision})

                def checkpoint(row):  # the rows so far, this one as it stands
                    rows[-1] = row
                    write_report(out, provenance, rows, args)

                rows[-1] = measure(name, batch, precision, args, checkpoint)
                print(table(rows[-1:]).splitlines()[-1], flush=True)
                write_report(out, provenance, rows, args)  # after each row: a run cut short keeps what it measured
    print(f"wrote {out / 'torch_models.md'}")


def join_resumed_compile(rows, row):
    """Appends `row` to `rows`, except a --compile-only row whose (model, batch, precision) is there already: its
    max-autotune columns then complete that row, whose tune it resumed: the tuning times add up (the earlier run's
    time so far, and this one's), the forward time and error are this run's."""
    key = (row["model"], row["batch"], row["precision"])
    earlier = next((r for r in rows if (r["model"], r["batch"], r["precision"]) == key and not r.get("compile_only")),
                   None)
    if not row.get("compile_only") or earlier is None:
        rows.append(row)
        return
    spent_before = earlier.pop("compile_tuning_s_so_far", 0.0) + earlier.get("compile_tuning_s_before", 0.0)
    earlier["compile_runs"] = earlier.get("compile_runs", 1) + 1
    earlier["eager_us_compile_run"] = row["eager_us"]
    if "compiled_us" in row:
        earlier["compile_tuning_s"] = spent_before + row["compile_tuning_s"]
        earlier["compiled_us"] = row["compiled_us"]
        earlier["compiled_rel_l2"] = row["compiled_rel_l2"]
        earlier["verified"] = earlier["verified"] and row["verified"]
    else:
        earlier["compile_tuning_s_so_far"] = spent_before + row.get("compile_tuning_s_so_far", 0.0)


def merge(folders, out, args):
    """One report of the rows of several runs (the first run's provenance, every run's command)."""
    provenance, rows, commands = None, [], []
    for folder in folders:
        path = Path(folder) / "torch_models.json"
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            sys.exit(f"torch_models: --merge: {path}: {error}")
        provenance = provenance or dict(report["provenance"])
        commands.append(report["provenance"]["command"])
        for row in report["rows"]:
            join_resumed_compile(rows, row)
    provenance["command"] = " ; ".join(commands)
    out.mkdir(parents=True, exist_ok=True)
    args.profile_host = any("host_convs" in r for r in rows)
    write_report(out, provenance, rows, args)
    print(f"wrote {out / 'torch_models.md'} ({len(rows)} rows from {len(folders)} runs)")


def write_report(out, provenance, rows, args):
    (out / "torch_models.json").write_text(json.dumps({"provenance": provenance, "rows": rows}, indent=1))
    header = (f"# torchvision models: PyTorch eager, torch.compile(max-autotune), convgen, convgen+graph\n\n"
              f"{provenance['gpu']}, PyTorch {provenance['torch']}, cuDNN {provenance['cudnn']}, convgen "
              f"{provenance['convgen']} ({provenance['commit']}); {provenance.get('cores', '?')} cores, inductor "
              f"compile threads {provenance.get('inductor_compile_threads', 'default')}. "
              f"Command: `{provenance['command']}`\n\n")
    host = ("\nHost time with the GPU work left out (--profile-host; how: bench/torch_models.py's doc):\n\n"
            + host_table(rows)) if args.profile_host else ""
    frozen = FROZEN_NOTE if any(r.get("frozen_weights") for r in rows) else ""
    (out / "torch_models.md").write_text(header + GRAPHS_NOTE + frozen + table(rows) + host)


if __name__ == "__main__":
    main()
