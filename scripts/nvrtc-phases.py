#!/usr/bin/env python3
"""nvrtc-phases: where NVRTC's time goes for the kernels of a `convgen generate` output folder, on this machine.

Each kernel is compiled in this process through libnvrtc (ctypes, no build needed) with convgen's own options
(runtime/compiler.cpp's nvrtc_options and conv/conv_kernel.cpp's kernel_compile_options) and with variants of
them, and timed (wall and CPU, median of --repeats, after one warm-up compile) with NVRTC's own phase times
(--time: front end, NVVM optimizer, ptxas): without --minimal, PTX only (compute_XX: no ptxas), and the options
given with --variant added to convgen's; each variant's cubin is compared with convgen's bytes (the same bytes:
the same code). The fixed cost of a program is measured on an empty kernel that includes every template header
a program can include at file scope, and on an empty source; with --together N, the first N kernels of each family (of the whole folder, whatever
--limit) are also compiled as one program
(each in a namespace of its own, the headers included once) against N programs: what compiling a problem's
candidates together would save. Markdown on stdout.

  build/tools/convgen/convgen generate --no-cache --shapes shapes/resnet50.csv --out /tmp/r50
  scripts/nvrtc-phases.py /tmp/r50 --variant=--Ofast-compile=mid "--variant=--split-compile=2"
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import re
import statistics
import sys
import tempfile
import time


def load_nvrtc():
    name = os.environ.get("CONVGEN_NVRTC") or ctypes.util.find_library("nvrtc")
    for candidate in [name, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]:
        if not candidate:
            continue
        try:
            return ctypes.CDLL(candidate)
        except OSError:
            pass
    sys.exit("nvrtc-phases: error: no libnvrtc found (set CONVGEN_NVRTC to its path, or LD_LIBRARY_PATH)")


NVRTC = load_nvrtc()
NVRTC.nvrtcGetErrorString.restype = ctypes.c_char_p


def runtime_options(arch):
    """The option list runtime/compiler.cpp's nvrtc_options writes for `arch`, before any extra option."""
    return [f"--gpu-architecture={arch}", "--std=c++17", "--device-as-default-execution-space", "--fmad=true",
            "--ptxas-options=-v", "--no-cache"]


KERNEL_EXTRA = ["--minimal"]  # what conv/conv_kernel.cpp's kernel_compile_options adds for every kernel


def base_options(arch):
    """convgen's option list for a kernel for `arch`."""
    return runtime_options(arch) + KERNEL_EXTRA


class Compiled:
    def __init__(self, wall_ms, cpu_ms, phases, cubin, log):
        self.wall_ms, self.cpu_ms, self.phases, self.cubin, self.log = wall_ms, cpu_ms, phases, cubin, log


def read_phases(path):
    """NVRTC's --time file: 'file, phase, value, unit' rows; the sum per phase in ms."""
    phases = {}
    if not os.path.exists(path):
        return phases
    with open(path) as f:
        for line in f.read().splitlines()[1:]:
            fields = [x.strip() for x in line.split(",")]
            if len(fields) >= 4 and fields[3] == "ms":
                phases[fields[1]] = phases.get(fields[1], 0.0) + float(fields[2])
    os.remove(path)
    return phases


def compile_once(name, source, headers, options, time_file=None):
    program = ctypes.c_void_p()
    header_texts = (ctypes.c_char_p * len(headers))(*[text.encode() for _, text in headers])
    header_names = (ctypes.c_char_p * len(headers))(*[n.encode() for n, _ in headers])
    check(NVRTC.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), len(headers),
                                   header_texts, header_names), "nvrtcCreateProgram")
    opts = options + ([f"--time={time_file}"] if time_file else [])
    array = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    wall, cpu = time.perf_counter(), time.process_time()
    result = NVRTC.nvrtcCompileProgram(program, len(opts), array)
    wall_ms, cpu_ms = (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3
    size = ctypes.c_size_t()
    check(NVRTC.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
    log = ctypes.create_string_buffer(size.value)
    check(NVRTC.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
    if result != 0:
        sys.exit(f"nvrtc-phases: error: {name} with {' '.join(opts)}: "
                 f"{NVRTC.nvrtcGetErrorString(result).decode()}\n{log.value.decode()}")
    cubin = b""
    if not any(o.startswith("--gpu-architecture=compute_") for o in options):
        check(NVRTC.nvrtcGetCUBINSize(program, ctypes.byref(size)), "nvrtcGetCUBINSize")
        image = ctypes.create_string_buffer(size.value)
        check(NVRTC.nvrtcGetCUBIN(program, image), "nvrtcGetCUBIN")
        cubin = image.raw
    NVRTC.nvrtcDestroyProgram(ctypes.byref(program))
    return Compiled(wall_ms, cpu_ms, read_phases(time_file) if time_file else {}, cubin, log.value.decode())


def check(result, what):
    if result != 0:
        sys.exit(f"nvrtc-phases: error: {what} failed: {NVRTC.nvrtcGetErrorString(result).decode()}")


def median_compile(name, source, headers, options, repeats, time_file):
    runs = [compile_once(name, source, headers, options, time_file) for _ in range(repeats)]
    phases = {p: statistics.median(r.phases.get(p, 0.0) for r in runs) for p in runs[0].phases}
    return Compiled(statistics.median(r.wall_ms for r in runs), statistics.median(r.cpu_ms for r in runs), phases,
                    runs[0].cubin, runs[0].log)


def one_program(sources, headers):
    """The kernels' sources as one program: every header included once, each source (its includes and #line
    dropped) in a namespace of its own; the entries keep their extern "C" names."""
    text = "".join(f'#include "{name}"\n' for name, _ in headers)
    for i, source in enumerate(sources):
        body = re.sub(r'^#(include ".*"|line .*)$', "", source, flags=re.M)
        text += f"#undef CONVGEN_ENTRY\n#undef CONVGEN_PRELUDE\nnamespace kernel{i} {{\n{body}\n}}\n"
    return text


def together_rows(kernels, folder, headers, options, count, repeats, time_file):
    """Per family: CPU ms of its first `count` kernels as separate programs and as one."""
    rows = []
    for family in sorted({k["family"] for k in kernels}):
        chosen = [k for k in kernels if k["family"] == family][:count]
        if len(chosen) < 2:
            continue
        sources = [open(os.path.join(folder, k["source"])).read() for k in chosen]
        apart = sum(median_compile(k["kernel"] + ".cu", s, headers, options, repeats, time_file).cpu_ms
                    for k, s in zip(chosen, sources))
        joint = median_compile("together.cu", one_program(sources, headers), headers, options, repeats, time_file)
        rows.append((family, len(chosen), apart, joint.cpu_ms))
    return rows


def quantile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="output folder of `convgen generate` (manifest.json and the .cu files)")
    parser.add_argument("--templates", default=os.path.join(os.path.dirname(__file__), "..", "templates"),
                        help="folder of the template headers (*.cuh) the kernels include (default: templates/)")
    parser.add_argument("--repeats", type=int, default=3, help="compiles per kernel and variant (the median)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N kernels (0: all)")
    parser.add_argument("--together", type=int, default=0,
                        help="also compile the first N kernels of each family as one program (0: not)")
    parser.add_argument("--variant", action="append", default=[],
                        help="options added to convgen's, space-separated (repeatable), e.g. "
                             "--variant=--Ofast-compile=mid")
    args = parser.parse_args()

    manifest = json.load(open(os.path.join(args.folder, "manifest.json")))
    kernels = manifest["kernels"][: args.limit or None]
    headers = [(n, open(os.path.join(args.templates, n)).read())
               for n in sorted(os.listdir(args.templates)) if n.endswith(".cuh")]
    arch = manifest["arch"]
    compute = arch.replace("sm_", "compute_")
    time_file = os.path.join(tempfile.mkdtemp(prefix="nvrtc-phases-"), "time.csv")
    ptx_only = [f"--gpu-architecture={compute}"] + [o for o in base_options(arch)[1:] if "ptxas" not in o]
    variants = [("convgen's options", base_options(arch)), ("without --minimal", runtime_options(arch)),
                ("PTX only (" + compute + ")", ptx_only)] + [(v, base_options(arch) + v.split()) for v in args.variant]

    # Warm-up: NVRTC's first compile in a process loads its builtins.
    compile_once("warm.cu", 'extern "C" __global__ void k() {}\n', [], base_options(arch))
    # The headers a program can include at file scope: those with an include guard or `#pragma once`; the others
    # (conv_gather.cuh, simt_gemm.cuh, ...) are fragments a template includes inside its namespace after its own
    # constants. wgmma.cuh only where the architecture is sm_90a's.
    standalone = [n for n, text in headers
                  if re.search(r"^#ifndef CONVGEN_\w+_CUH|^#pragma once", text, re.MULTILINE)
                  and (n != "wgmma.cuh" or arch.endswith("a"))]
    empty_all = "".join(f'#include "{n}"\n' for n in standalone) + 'extern "C" __global__ void k() {}\n'
    fixed = {
        "empty source": median_compile("empty.cu", 'extern "C" __global__ void k() {}\n', headers,
                                       base_options(arch), args.repeats, time_file),
        "empty kernel, every file-scope header included": median_compile("headers.cu", empty_all, headers, base_options(arch),
                                                              args.repeats, time_file),
    }

    rows = {label: [] for label, _ in variants}
    for k in kernels:
        source = open(os.path.join(args.folder, k["source"])).read()
        base = None
        for label, options in variants:
            c = median_compile(k["kernel"] + ".cu", source, headers, options, args.repeats, time_file)
            if base is None:
                base = c
            same = "—" if not c.cubin else ("same" if c.cubin == base.cubin else "differs")
            rows[label].append((k, c, same))
        print(f"{k['layer']}: {base.wall_ms:.0f} ms", file=sys.stderr)

    phase_names = ["CUDA C++ Frontend", "NVVM Optimizer", "PTX Translation"]
    print(f"# NVRTC phases: {len(kernels)} kernels of {manifest.get('suite', args.folder)} for {arch}\n")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; median of {args.repeats} "
          f"compiles each, after a warm-up; CPU time is the process's (every NVRTC thread).\n")
    print("| what | wall p50 ms | wall p90 ms | CPU p50 ms | front end p50 | NVVM p50 | ptxas p50 | "
          "cubin vs convgen's |")
    print("|---|--:|--:|--:|--:|--:|--:|---|")
    for label, c in fixed.items():
        print(f"| {label} | {c.wall_ms:.0f} | | {c.cpu_ms:.0f} | "
              + " | ".join(f"{c.phases.get(p, 0):.0f}" for p in phase_names) + " | |")
    for label, _ in variants:
        r = rows[label]
        walls, cpus = [c.wall_ms for _, c, _ in r], [c.cpu_ms for _, c, _ in r]
        phases = [statistics.median(c.phases.get(p, 0) for _, c, _ in r) for p in phase_names]
        same = sorted({s for _, _, s in r})
        print(f"| {label} | {statistics.median(walls):.0f} | {quantile(walls, 0.9):.0f} | "
              f"{statistics.median(cpus):.0f} | " + " | ".join(f"{p:.0f}" for p in phases) +
              f" | {', '.join(f'{s} {sum(1 for _, _, x in r if x == s)}' for s in same)} |")
    print("\n| layer | kernel | " + " | ".join(f"{label} ms" for label, _ in variants) + " |")
    print("|---|---|" + "--:|" * len(variants))
    for i, k in enumerate(kernels):
        print(f"| {k['layer']} | {k['kernel']} | " +
              " | ".join(f"{rows[label][i][1].wall_ms:.0f}" for label, _ in variants) + " |")
    if args.together:
        print("\n| family | kernels | CPU ms as separate programs | CPU ms as one program | saved |")
        print("|---|--:|--:|--:|--:|")
        together = together_rows(manifest["kernels"], args.folder, headers, base_options(arch), args.together,
                                 args.repeats, time_file)
        for family, count, apart, joint in together:
            print(f"| {family} | {count} | {apart:.0f} | {joint:.0f} | {100 * (1 - joint / apart):.0f}% |")


if __name__ == "__main__":
    main()
