#!/usr/bin/env python3
"""torch_host_path: host time per call of convgen.torch's Conv2d forward on a machine without a GPU, the launch stubbed.

Usage: PYTHONPATH=build/python bench/torch_host_path.py [--calls 20000] [--repeats 7]

What it times: `module(x)` of a convgen.torch.Conv2d on CPU tensors made to pass for CUDA ones (torch.Tensor.is_cuda
patched to True), so that the module takes convgen's path, with the device-side pieces stubbed: the context hands
out a stand-in op whose run_pointers does nothing (the nanobind call and ConvOp::run's launch are left out), the
current-stream getters return 0, graph-capture queries say no. Everything else is the package's own code: the
signature and plan lookup, the checks, the output allocation (CPU allocator, small tensors: the CUDA caching
allocator's cost is of the same order), the bias and residual pointers of the epilogue where the module fuses them.
PyTorch's own convolution has no such
stubbed path to compare with here: bench/torch_models.py --profile-host measures both on the GPU machine. Prints the
median, min and max over --repeats of the mean time per call, in µs.
"""
import argparse
import statistics
import time

import torch

import convgen.torch as ct


class _StubOp:
    needs_prepare = False
    kernel_name = "stub"
    chosen_by = "stub"

    def run_pointers(self, activation, filter, output, stream, bias=0, residual=0):
        pass

    def prepare_pointer(self, filter, stream):
        pass


class _StubContext:
    device = 0

    def conv(self, problem):
        return _StubOp()


def patch():
    """Makes CPU tensors take convgen's path with the device calls stubbed (this process only)."""
    torch.Tensor.is_cuda = property(lambda self: True)
    ct.context = lambda device=None: _StubContext()
    ct._raw_stream = lambda index: 0
    torch.cuda.current_stream = lambda device=None: type("Stream", (), {"cuda_stream": 0})()
    torch.cuda.current_device = lambda: 0
    torch.cuda.is_current_stream_capturing = lambda: False


def per_call_us(module, inputs, calls, repeats):
    samples = []
    with torch.inference_mode():
        for _ in range(100):
            module(*inputs)
        for _ in range(repeats):
            start = time.perf_counter_ns()
            for _ in range(calls):
                module(*inputs)
            samples.append((time.perf_counter_ns() - start) / calls / 1000.0)
    return statistics.median(samples), min(samples), max(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    patch()
    x = torch.randn(1, 64, 8, 8)
    cases = [("64->64 3x3, no bias, nchw", ct.Conv2d(64, 64, 3, padding=1, bias=False), (x,)),
             ("64->64 3x3, bias, nchw", ct.Conv2d(64, 64, 3, padding=1), (x,)),
             ("64->64 3x3, bias+relu (fused), nchw", ct.Conv2d(64, 64, 3, padding=1, act="relu"), (x,)),
             ("64->64 3x3, bias+add+relu (fused), nchw",
              ct.Conv2d(64, 64, 3, padding=1, act="relu", add_residual=True), (x, torch.randn(1, 64, 8, 8))),
             ("64->64 1x1, no bias, nhwc fp16",
              ct.Conv2d(64, 64, 1, bias=False).half().to(memory_format=torch.channels_last),
              (x.half().to(memory_format=torch.channels_last),))]
    print("| module | µs per call (median, min–max) |\n|---|---|")
    for name, module, inputs in cases:
        module.eval()
        median, low, high = per_call_us(module, inputs, args.calls, args.repeats)
        assert module.fallbacks == 0, module.last_fallback
        print(f"| {name} | {median:.2f} ({low:.2f}–{high:.2f}) |")


if __name__ == "__main__":
    main()
