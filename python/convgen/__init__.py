"""convgen: specialized CUDA convolution kernels, generated per shape and GPU, compiled with NVRTC, tuned, verified.

    import convgen
    context = convgen.ConvContext()                       # device 0, tune on first use, the CLI's database
    problem = convgen.Problem(1, 64, 64, input=(56, 56), filter=(3, 3), padding=(1, 1))
    op = context.conv(problem)                            # chosen, compiled and loaded once
    op.run(x, w, y)                                       # any DLPack / __cuda_array_interface__ CUDA tensors

A problem's `epilogue` ('bias+add+relu') fuses a bias, a residual add and an activation into the kernel's store:
`op.run(x, w, y, bias=b, residual=r)` then takes them (the residual checked as the output is, the bias as K values).

`convgen.torch` holds drop-in `Conv2d`/`Conv3d` modules, `conv2d`/`conv3d` functions, `convert(model)` (which fuses
each convolution with the BatchNorm, residual add and ReLU after it) and `tune(model, example_input)`. Errors from C++
arrive as `convgen.InputError` (a ValueError), `convgen.NoDeviceError`, `convgen.ApiError` or `convgen.Error`
(RuntimeErrors), with the C++ message.
"""
from pathlib import Path

from ._convgen import (  # noqa: F401 (re-exported)
    ApiError,
    ConvContext,
    ConvOp,
    Error,
    InputError,
    NoDeviceError,
    Problem,
    commit,
    compile_in_worker_processes,
    default_cache_dir,
    default_database,
    version,
)
from ._tensors import check_tensors, run_op, tensor_info  # noqa: F401

__version__ = version()

_build_op = ConvContext.conv


def _conv(context, problem):
    """The op for a problem, built on first ask by the context's policy (compiles, and may tune)."""
    op = _build_op(context, problem)
    op.device = context.device  # the device its tensors must be on
    return op


ConvContext.conv = _conv
# ConvOp.run: tensors in, checked against the problem (device, dtype, shape, layout, contiguity), no copy.
ConvOp.run = run_op

# Kernels compile in NVRTC worker processes (NVRTC does not scale across threads of one process): the worker shipped
# beside this package (a wheel's, or the build folder's staged copy), $CONVGEN_NVRTC_WORKER when set ('none': in this
# process). Without one they compile in this process's threads, as before. (worker path or None, why there is none)
_worker = Path(__file__).with_name("convgen-nvrtc-worker")
worker_compiles = compile_in_worker_processes(str(_worker) if _worker.is_file() else None)
