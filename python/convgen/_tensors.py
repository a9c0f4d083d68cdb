"""_tensors: what a framework's tensor is (pointer, shape, strides, dtype, device), checked against a problem.

One check for every source: PyTorch tensors are read directly (cheapest), other DLPack tensors (CuPy, JAX, NumPy)
through the extension's `dlpack_info`, objects with only `__cuda_array_interface__` (Numba) from that dictionary.
Nothing is copied: a tensor in the wrong layout or not contiguous is refused with what was expected. The work runs
on the given stream or the framework's current one, and DLPack producers are asked for their tensors on it.
"""
from dataclasses import dataclass

from . import _convgen

# DLPack dtype (kind code, bits) -> name; kinds: 0 int, 1 uint, 2 float, 4 bfloat.
_DLPACK_DTYPES = {(2, 32): "float32", (2, 16): "float16", (4, 16): "bfloat16", (2, 64): "float64",
                  (0, 32): "int32", (0, 64): "int64", (0, 8): "int8", (1, 8): "uint8"}
_DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 13: "cuda_managed"}
_DLPACK_CUDA_DEVICES = (2, 13)  # device memory a stream orders: kDLCUDA, kDLCUDAManaged
_CAI_DTYPES = {"<f4": "float32", "<f2": "float16", "<f8": "float64", "<i4": "int32", "<i8": "int64"}
_TORCH_DTYPES = {"torch.float32": "float32", "torch.float16": "float16", "torch.bfloat16": "bfloat16",
                 "torch.float64": "float64"}

# The element type each precision's tensors hold (tf32 computes on float32 tensors).
PRECISION_DTYPE = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class TensorInfo:
    pointer: int
    shape: tuple
    strides: tuple  # in elements
    dtype: str
    device: str  # "cuda", "cpu", ...
    device_id: int
    is_torch: bool = False


def _is_torch(tensor):
    return (type(tensor).__module__ or "").startswith("torch") and hasattr(tensor, "data_ptr")


def _dlpack_capsule(tensor, stream):
    """The tensor's DLPack capsule. A CUDA tensor is asked for it on the stream the work will run on (`stream`, a
    CUstream as an int; DLPack spells the legacy default stream 1), so that its producer (CuPy, JAX) orders its
    pending writes before that stream's work; other devices take no stream."""
    device = tensor.__dlpack_device__()[0] if hasattr(tensor, "__dlpack_device__") else None
    if stream is None or device not in _DLPACK_CUDA_DEVICES:
        return tensor.__dlpack__()
    try:
        return tensor.__dlpack__(stream=1 if stream == 0 else stream)
    except TypeError:  # a producer older than the stream argument (array API < v2021.12)
        return tensor.__dlpack__()


def tensor_info(tensor, stream=None):
    """The TensorInfo of a PyTorch tensor, a DLPack tensor or an object with __cuda_array_interface__. `stream`: the
    CUstream (an int) the work will run on, passed to a DLPack producer as the array API says (see _dlpack_capsule)."""
    if _is_torch(tensor):
        return TensorInfo(tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()),
                          _TORCH_DTYPES.get(str(tensor.dtype), str(tensor.dtype).removeprefix("torch.")),
                          tensor.device.type, tensor.device.index or 0, True)
    if hasattr(tensor, "__dlpack__"):
        pointer, shape, strides, dtype, device_type, device_id = _convgen.dlpack_info(_dlpack_capsule(tensor, stream))
        return TensorInfo(pointer, tuple(shape), tuple(strides), _DLPACK_DTYPES.get(tuple(dtype), f"dlpack{dtype}"),
                          _DLPACK_DEVICES.get(device_type, f"device type {device_type}"), device_id)
    cai = getattr(tensor, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        itemsize = int(cai["typestr"][2:])
        strides = cai.get("strides")
        strides = _contiguous_strides(shape) if strides is None else tuple(s // itemsize for s in strides)
        # The interface names no device: the driver says whose memory the pointer is (-1 where it cannot: no driver).
        pointer = int(cai["data"][0])
        device_id = _convgen.pointer_device(pointer)
        return TensorInfo(pointer, shape, strides, _CAI_DTYPES.get(cai["typestr"], cai["typestr"]), "cuda",
                          -1 if device_id is None else device_id)
    raise TypeError(f"expected a CUDA tensor with __dlpack__ or __cuda_array_interface__ (PyTorch, CuPy, JAX, "
                    f"Numba), got {type(tensor).__module__}.{type(tensor).__qualname__}")


def _contiguous_strides(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _channels_last_strides(logical):
    """Strides, in the logical (n, c, spatial...) order, of a tensor stored (n, spatial..., c)."""
    physical = (logical[0], *logical[2:], logical[1])
    s = _contiguous_strides(physical)
    return (s[0], s[-1], *s[1:-1])


def _same_strides(shape, strides, expected):
    # Extents of 1 make their stride meaningless (PyTorch and DLPack exporters write anything there).
    return all(extent == 1 or a == b for extent, a, b in zip(shape, strides, expected))


def expected_shapes(problem):
    """Logical (n, c, spatial...) shapes of activation, filter and output, and the names of their dims."""
    letters = {1: ("w",), 2: ("h", "w"), 3: ("d", "h", "w")}[problem.rank]
    return {
        "activation": ((problem.n, problem.c, *problem.input), ("n", "c", *letters)),
        "filter": ((problem.k, problem.c // problem.groups, *problem.filter), ("k", "c/groups",
                                                                              *(x.replace("d", "t").replace("h", "r")
                                                                                .replace("w", "s") for x in letters))),
        "output": ((problem.n, problem.k, *problem.output), ("n", "k", *(x.replace("d", "o").replace("h", "p")
                                                                         .replace("w", "q") for x in letters))),
    }


def check_tensor(role, info, problem, device_id):
    """Raises ValueError (or TypeError) naming the role, what was expected and what was given. A residual is checked
    as the output is: it has the output's shape, layout and type."""
    check_device_and_dtype(role, info, problem, device_id)
    logical, names = expected_shapes(problem)["output" if role == "residual" else role]
    channels_last = problem.layout in ("nwc", "nhwc", "ndhwc")
    physical = (logical[0], *logical[2:], logical[1]) if channels_last else logical
    if info.shape == logical:
        # The framework's logical order; the memory must be in the problem's layout (torch.channels_last for nhwc).
        want = _channels_last_strides(logical) if channels_last else _contiguous_strides(logical)
        if not _same_strides(info.shape, info.strides, want):
            hint = " (x.contiguous(memory_format=torch.channels_last) in PyTorch)" if channels_last else \
                " (x.contiguous() in PyTorch)"
            raise ValueError(f"{role}: strides {info.strides} are not those of a dense {problem.layout} tensor of "
                             f"shape {logical}: expected {want}{hint}")
    elif channels_last and info.shape == physical:
        if not _same_strides(info.shape, info.strides, _contiguous_strides(physical)):
            raise ValueError(f"{role}: shape {physical} ({problem.layout} order) with strides {info.strides}: "
                             f"expected a contiguous tensor, strides {_contiguous_strides(physical)}")
    else:
        order = ", ".join(names)
        also = f", or {physical} stored in that order" if channels_last else ""
        raise ValueError(f"{role}: shape {info.shape}, expected {logical} ({order}) for {problem.describe()}{also}")


def check_device_and_dtype(role, info, problem, device_id):
    if info.device != "cuda":
        raise ValueError(f"{role}: on {info.device}, expected a CUDA tensor on device {device_id} (the context's)")
    if info.device_id not in (-1, device_id):
        raise ValueError(f"{role}: on CUDA device {info.device_id}, expected device {device_id} (the context's)")
    dtype = PRECISION_DTYPE[problem.precision]
    if info.dtype != dtype:
        raise ValueError(f"{role}: {info.dtype}, expected {dtype} for a {problem.precision} problem")


def check_bias(info, problem, device_id):
    """The epilogue's bias: K contiguous values of the problem's data type."""
    check_device_and_dtype("bias", info, problem, device_id)
    if info.shape != (problem.k,) or not _same_strides(info.shape, info.strides, (1,)):
        raise ValueError(f"bias: shape {info.shape} with strides {info.strides}, expected {problem.k} contiguous "
                         f"values (k) for {problem.describe()}")


def check_epilogue_tensors(op, bias, residual, device_id=0, stream=None):
    """The pointers of the epilogue's bias and residual (0 where not given), each checked against the problem; one
    its epilogue does not read is refused (its absence where read is the C++ run's error)."""
    epilogue = op.problem.epilogue
    terms = set() if epilogue == "none" else {term.split(":")[0] for term in epilogue.split("+")}
    pointers = []
    for role, tensor, term in (("bias", bias, "bias"), ("residual", residual, "add")):
        if tensor is None:
            pointers.append(0)
            continue
        if term not in terms:
            raise ValueError(f"{role}: given, but the problem's epilogue '{epilogue}' reads none (its term '{term}')")
        info = tensor_info(tensor, stream)
        if role == "bias":
            check_bias(info, op.problem, device_id)
        else:
            check_tensor(role, info, op.problem, device_id)
        pointers.append(info.pointer)
    return pointers


def check_tensors(op, activation, filter, output, device_id=0, stream=None):
    """The TensorInfos of the three tensors, each checked against the op's problem (`stream`: the one the work will
    run on, for DLPack producers)."""
    infos = []
    for role, tensor in (("activation", activation), ("filter", filter), ("output", output)):
        info = tensor_info(tensor, stream)
        check_tensor(role, info, op.problem, device_id)
        infos.append(info)
    return infos


def resolve_stream(stream, tensors):
    """The CUstream (an int) to run on: the given one (an int, a torch.cuda.Stream, a CuPy stream), else the current
    stream of the tensors' framework: PyTorch's, CuPy's, or the stream an object's __cuda_array_interface__ names
    (Numba's), else 0 (the legacy default stream; a JAX array is exported to it, see _dlpack_capsule)."""
    if stream is None:
        for tensor in tensors:
            if _is_torch(tensor):
                import torch

                return torch.cuda.current_stream(tensor.device.index).cuda_stream
            if (type(tensor).__module__ or "").startswith("cupy"):
                import cupy

                return int(cupy.cuda.get_current_stream().ptr)
            cai = getattr(tensor, "__cuda_array_interface__", None) if not hasattr(tensor, "__dlpack__") else None
            if cai is not None and cai.get("stream") is not None:
                return int(cai["stream"])  # 1 and 2 are the driver's CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
        return 0
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    raise TypeError(f"stream: expected an int CUstream, a torch.cuda.Stream or a CuPy stream, got "
                    f"{type(stream).__qualname__}")


def run_op(op, activation, filter, output, stream=None, *, bias=None, residual=None):
    """op.run(activation, filter, output, stream=None, *, bias=None, residual=None): enqueues the convolution on
    tensors checked against the problem (device, dtype, shape, layout, contiguity; nothing copied). The stream: the
    given one, else the tensors' framework's current one (resolve_stream); DLPack producers are asked for their
    tensors on it. `bias` (K values) and
    `residual` (the output's shape and layout) are for a problem whose epilogue reads them ('bias+add+relu')."""
    device_id = getattr(op, "device", 0)
    handle = resolve_stream(stream, [t for t in (activation, filter, output, bias, residual) if t is not None])
    infos = check_tensors(op, activation, filter, output, device_id, handle)
    bias_pointer, residual_pointer = check_epilogue_tensors(op, bias, residual, device_id, handle)
    op.run_pointers(infos[0].pointer, infos[1].pointer, infos[2].pointer, handle, bias_pointer, residual_pointer)
