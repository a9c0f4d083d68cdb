"""Tensors checked against a problem before a launch (device, dtype, shape, layout, contiguity), without a GPU:
objects with __cuda_array_interface__ stand in for CUDA tensors, NumPy's DLPack arrays for CPU ones."""
import numpy as np
import pytest

import convgen
from convgen import _tensors


class CudaArray:
    """An object exposing only __cuda_array_interface__ (as Numba's device arrays do)."""

    def __init__(self, shape, typestr="<f4", strides=None, pointer=0x7000_0000):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (pointer, False),
                                         "version": 3, "strides": strides}


class RecordingOp:
    def __init__(self, problem, device=0):
        self.problem = problem
        self.device = device
        self.calls = []

    def run_pointers(self, activation, filter, output, stream, bias=0, residual=0):
        self.calls.append((activation, filter, output, stream, bias, residual))


def nchw_problem(**kw):
    return convgen.Problem(2, 8, 16, input=(10, 12), filter=(3, 3), padding=(1, 1), **kw)


def test_dense_tensors_of_the_problem_run_with_their_pointers_on_the_default_stream():
    op = RecordingOp(nchw_problem())
    convgen.run_op(op, CudaArray((2, 8, 10, 12), pointer=0x1000), CudaArray((16, 8, 3, 3), pointer=0x2000),
                   CudaArray((2, 16, 10, 12), pointer=0x3000))
    assert op.calls == [(0x1000, 0x2000, 0x3000, 0, 0, 0)]


def test_a_stream_is_an_int_or_an_object_with_its_handle():
    op = RecordingOp(nchw_problem())
    args = (CudaArray((2, 8, 10, 12)), CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))

    class TorchLikeStream:
        cuda_stream = 0xBEEF

    class CupyLikeStream:
        ptr = 0xCAFE

    convgen.run_op(op, *args, 0x55)
    convgen.run_op(op, *args, TorchLikeStream())
    convgen.run_op(op, *args, CupyLikeStream())
    assert [call[3] for call in op.calls] == [0x55, 0xBEEF, 0xCAFE]
    with pytest.raises(TypeError, match=r"^stream: expected an int CUstream, a torch.cuda.Stream or a CuPy stream, "
                                        r"got str$"):
        convgen.run_op(op, *args, "default")


def test_a_wrong_shape_names_the_tensor_the_expected_dims_and_the_problem():
    op = RecordingOp(nchw_problem())
    with pytest.raises(ValueError, match=r"^activation: shape \(2, 8, 10, 11\), expected \(2, 8, 10, 12\) "
                                         r"\(n, c, h, w\) for 8->16 3x3 s1 p1 at 10x12 -> 10x12, n2$"):
        convgen.run_op(op, CudaArray((2, 8, 10, 11)), CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))
    with pytest.raises(ValueError, match=r"^filter: shape \(16, 8, 1, 1\), expected \(16, 8, 3, 3\) "
                                         r"\(k, c/groups, r, s\)"):
        convgen.run_op(op, CudaArray((2, 8, 10, 12)), CudaArray((16, 8, 1, 1)), CudaArray((2, 16, 10, 12)))
    with pytest.raises(ValueError, match=r"^output: shape \(2, 16, 12, 10\), expected \(2, 16, 10, 12\) "
                                         r"\(n, k, p, q\)"):
        convgen.run_op(op, CudaArray((2, 8, 10, 12)), CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 12, 10)))
    assert op.calls == []


def test_a_wrong_dtype_names_the_precisions_dtype():
    op = RecordingOp(nchw_problem(precision="fp16"))
    with pytest.raises(ValueError, match=r"^activation: float32, expected float16 for a fp16 problem$"):
        convgen.run_op(op, CudaArray((2, 8, 10, 12)), CudaArray((16, 8, 3, 3), "<f2"),
                       CudaArray((2, 16, 10, 12), "<f2"))


def test_a_tf32_problem_takes_float32_tensors():
    op = RecordingOp(nchw_problem(precision="tf32"))
    convgen.run_op(op, CudaArray((2, 8, 10, 12)), CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))
    assert len(op.calls) == 1


def test_a_strided_view_is_refused_not_copied():
    op = RecordingOp(nchw_problem())
    # (2, 8, 10, 12) viewed out of a (2, 8, 10, 24) buffer: rows 24 apart.
    strided = CudaArray((2, 8, 10, 12), strides=(8 * 10 * 24 * 4, 10 * 24 * 4, 24 * 4, 4))
    with pytest.raises(ValueError, match=r"^activation: strides \(1920, 240, 24, 1\) are not those of a dense nchw "
                                         r"tensor of shape \(2, 8, 10, 12\): expected \(960, 120, 12, 1\) "
                                         r"\(x.contiguous\(\) in PyTorch\)$"):
        convgen.run_op(op, strided, CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))


def test_channels_last_tensors_are_taken_in_logical_or_physical_order():
    op = RecordingOp(nchw_problem(layout="nhwc"))
    # PyTorch's channels_last: logical (n, c, h, w) shape, NHWC strides.
    logical = CudaArray((2, 8, 10, 12), strides=tuple(4 * s for s in (10 * 12 * 8, 1, 12 * 8, 8)))
    filter_logical = CudaArray((16, 8, 3, 3), strides=tuple(4 * s for s in (9 * 8, 1, 3 * 8, 8)))
    convgen.run_op(op, logical, filter_logical, CudaArray((2, 10, 12, 16)))
    # Physical (n, h, w, c) order, contiguous.
    convgen.run_op(op, CudaArray((2, 10, 12, 8)), CudaArray((16, 3, 3, 8)), CudaArray((2, 10, 12, 16)))
    assert len(op.calls) == 2
    with pytest.raises(ValueError, match=r"^activation: strides .* are not those of a dense nhwc tensor of shape "
                                         r"\(2, 8, 10, 12\): expected \(960, 1, 96, 8\) \(x.contiguous\("
                                         r"memory_format=torch.channels_last\) in PyTorch\)$"):
        convgen.run_op(op, CudaArray((2, 8, 10, 12)), CudaArray((16, 3, 3, 8)), CudaArray((2, 10, 12, 16)))


def test_the_epilogues_bias_and_residual_are_checked_and_their_pointers_passed():
    op = RecordingOp(nchw_problem(epilogue="bias+add+relu"))
    tensors = (CudaArray((2, 8, 10, 12)), CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))
    convgen.run_op(op, *tensors, bias=CudaArray((16,), pointer=0x4000),
                   residual=CudaArray((2, 16, 10, 12), pointer=0x5000))
    assert op.calls[0][4:] == (0x4000, 0x5000)
    with pytest.raises(ValueError, match=r"^bias: shape \(8,\) with strides \(1,\), expected 16 contiguous values "
                                         r"\(k\) for 8->16 3x3 s1 p1 at 10x12 -> 10x12, n2, epilogue bias\+add\+relu$"):
        convgen.run_op(op, *tensors, bias=CudaArray((8,)), residual=tensors[2])
    with pytest.raises(ValueError, match=r"^bias: float16, expected float32 for a fp32 problem$"):
        convgen.run_op(op, *tensors, bias=CudaArray((16,), "<f2"), residual=tensors[2])
    with pytest.raises(ValueError, match=r"^residual: shape \(2, 16, 10, 11\), expected \(2, 16, 10, 12\) "
                                         r"\(n, k, p, q\)"):
        convgen.run_op(op, *tensors, bias=CudaArray((16,)), residual=CudaArray((2, 16, 10, 11)))
    relu_only = RecordingOp(nchw_problem(epilogue="relu"))
    with pytest.raises(ValueError, match=r"^residual: given, but the problem's epilogue 'relu' reads none \(its "
                                         r"term 'add'\)$"):
        convgen.run_op(relu_only, *tensors, residual=tensors[2])
    assert len(op.calls) == 1 and relu_only.calls == []


def test_a_cpu_array_and_an_object_that_is_no_tensor_are_refused():
    op = RecordingOp(nchw_problem())
    host = np.zeros((2, 8, 10, 12), np.float32)  # DLPack, on the CPU
    with pytest.raises(ValueError, match=r"^activation: on cpu, expected a CUDA tensor on device 0 \(the context's\)$"):
        convgen.run_op(op, host, CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))
    with pytest.raises(TypeError, match=r"^expected a CUDA tensor with __dlpack__ or __cuda_array_interface__ "
                                        r"\(PyTorch, CuPy, JAX, Numba\), got builtins.list$"):
        convgen.run_op(op, [1.0], CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))


def test_dlpack_reports_pointer_shape_strides_dtype_and_device_without_a_copy():
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, :, ::2]
    info = convgen.tensor_info(host)
    assert info.pointer == host.__array_interface__["data"][0]
    assert (info.shape, info.strides, info.dtype, info.device) == ((2, 3, 2), (12, 4, 2), "float32", "cpu")


def test_a_tensor_on_another_device_is_refused():
    op = RecordingOp(nchw_problem(), device=1)
    info = _tensors.TensorInfo(0x1000, (2, 8, 10, 12), (960, 120, 12, 1), "float32", "cuda", 0)
    with pytest.raises(ValueError, match=r"^activation: on CUDA device 0, expected device 1 \(the context's\)$"):
        _tensors.check_tensor("activation", info, op.problem, op.device)


class DlpackCudaArray:
    """A DLPack producer on a CUDA device, recording the stream it is asked to export on (as CuPy and JAX are); its
    capsule is a NumPy array's, so the exported tensor reads as on the CPU."""

    def __init__(self, shape, device_type=2, takes_stream=True):
        self.array = np.zeros(shape, np.float32)
        self.device_type = device_type
        self.takes_stream = takes_stream
        self.streams = []

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, **kwargs):
        if "stream" in kwargs and not self.takes_stream:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'stream'")
        self.streams.append(kwargs.get("stream", "none"))
        return self.array.__dlpack__()


def test_a_dlpack_producer_on_cuda_is_asked_for_its_tensor_on_the_stream_the_work_runs_on():
    cuda = DlpackCudaArray((2, 3))
    _tensors.tensor_info(cuda, 0)  # the legacy default stream, which DLPack spells 1
    _tensors.tensor_info(cuda, 0xCAFE)
    _tensors.tensor_info(cuda)  # no stream to order against
    assert cuda.streams == [1, 0xCAFE, "none"]
    host = DlpackCudaArray((2, 3), device_type=1)  # a CPU producer takes no stream
    _tensors.tensor_info(host, 0xCAFE)
    old = DlpackCudaArray((2, 3), takes_stream=False)  # a producer older than the stream argument
    info = _tensors.tensor_info(old, 0xCAFE)
    assert host.streams == ["none"] and old.streams == ["none"] and info.shape == (2, 3)


def test_run_asks_every_dlpack_tensor_for_the_stream_it_runs_on():
    op = RecordingOp(nchw_problem())
    tensors = [DlpackCudaArray(shape) for shape in ((2, 8, 10, 12), (16, 8, 3, 3), (2, 16, 10, 12))]
    with pytest.raises(ValueError, match=r"^activation: on cpu"):  # the stand-ins export NumPy's CPU capsules
        convgen.run_op(op, *tensors, 0xBEEF)
    assert tensors[0].streams == [0xBEEF]


def test_without_a_stream_the_work_runs_on_the_stream_a_cuda_array_interface_names():
    op = RecordingOp(nchw_problem())
    activation = CudaArray((2, 8, 10, 12))
    activation.__cuda_array_interface__["stream"] = 0xF00D  # the producer's stream (Numba's current)
    convgen.run_op(op, activation, CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))
    per_thread = CudaArray((2, 8, 10, 12))
    per_thread.__cuda_array_interface__["stream"] = 2  # CU_STREAM_PER_THREAD, taken as the driver takes it
    convgen.run_op(op, per_thread, CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))
    convgen.run_op(op, activation, CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)), 0x55)  # given: it wins
    assert [call[3] for call in op.calls] == [0xF00D, 2, 0x55]


def test_without_a_stream_cupy_arrays_run_on_cupys_current_stream(monkeypatch):
    import sys
    import types

    class Stream:
        ptr = 0xC0FFEE

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: Stream())
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    CupyArray = type("ndarray", (CudaArray,), {"__module__": "cupy._core.core"})  # CuPy's array type, by module
    op = RecordingOp(nchw_problem())
    convgen.run_op(op, CupyArray((2, 8, 10, 12)), CupyArray((16, 8, 3, 3)), CupyArray((2, 16, 10, 12)))
    assert op.calls[0][3] == 0xC0FFEE


def test_a_cuda_array_interface_tensor_is_on_the_device_the_driver_says_its_pointer_is(monkeypatch):
    op = RecordingOp(nchw_problem())
    args = (CudaArray((2, 8, 10, 12)), CudaArray((16, 8, 3, 3)), CudaArray((2, 16, 10, 12)))
    assert convgen._convgen.pointer_device(0x7000_0000) is None  # no driver here, or no such allocation
    convgen.run_op(op, *args)  # the device unknown: not refused
    monkeypatch.setattr(_tensors._convgen, "pointer_device", lambda pointer: 1)
    with pytest.raises(ValueError, match=r"^activation: on CUDA device 1, expected device 0 \(the context's\)$"):
        convgen.run_op(op, *args)
    assert len(op.calls) == 1
