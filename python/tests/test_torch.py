"""convgen.torch: drop-in modules, convert(), tune(); the host part needs PyTorch, the rest (marked gpu) a GPU.

On the GPU every comparison is with torch.nn.functional's convolution on the same tensors, in strict fp32 (TF32 off
for both) or in the half precisions with DESIGN.md's tolerances."""
import pytest

torch = pytest.importorskip("torch")
import convgen.torch as ct  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU()
        self.reflect = nn.Conv2d(8, 8, 3, padding=1, padding_mode="reflect")
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        y = self.reflect(self.act(self.conv(x)))
        return self.head(y.mean((2, 3)))


class MyConv(nn.Conv2d):
    pass


def test_convert_swaps_every_conv_and_shares_its_parameters():
    model = Block()
    weight, bias = model.conv.weight, model.conv.bias
    converted = ct.convert(model, act_sparsity={"reflect": 0.5})
    assert isinstance(converted.conv, ct.Conv2d) and isinstance(converted.reflect, ct.Conv2d)
    assert isinstance(converted.head, nn.Linear) and isinstance(converted.act, nn.ReLU)
    assert converted.conv.weight is weight and converted.conv.bias is bias
    assert converted.conv.act_sparsity == 0.0 and converted.reflect.act_sparsity == 0.5
    assert "act_sparsity=0.5" in repr(converted.reflect)


def test_convert_leaves_subclasses_and_converts_a_bare_conv():
    model = nn.Sequential(MyConv(3, 4, 3), nn.Conv3d(4, 4, 1))
    ct.convert(model)
    assert type(model[0]) is MyConv and isinstance(model[1], ct.Conv3d)
    assert isinstance(ct.convert(nn.Conv2d(3, 4, 1)), ct.Conv2d)


def test_observed_sparsity_is_the_zero_fraction_of_each_convolutions_input():
    model = nn.Sequential(nn.Conv2d(1, 2, 1, bias=False), nn.ReLU(), nn.Conv2d(2, 2, 1))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([1.0, -1.0]).view(2, 1, 1, 1))
    x = torch.arange(1.0, 17.0).view(1, 1, 4, 4)  # positive: channel 0 keeps it, channel 1 is all zeros after ReLU
    assert ct.observe_act_sparsity(model, x) == {"2": 0.5}


def test_act_sparsity_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"^act_sparsity: 1.5, expected a zero fraction in \[0, 1\]$"):
        ct.Conv2d(3, 4, 3, act_sparsity=1.5)


def test_on_the_cpu_the_module_runs_pytorchs_convolution_and_counts_it():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 3, 9, 9)
    want = model(x)
    ct.convert(model)
    got = model(x)
    assert torch.equal(got, want)
    assert model.conv.fallbacks == 1 and model.conv.last_fallback == "input on cpu"
    assert model.reflect.last_fallback == "padding_mode reflect"


def test_the_problem_of_a_call_follows_layout_dtype_and_padding():
    x = torch.empty(2, 16, 20, 22)
    w = torch.empty(32, 8, 3, 5)
    p = ct.problem_for(x, w, (2, 1), (1, 2), (1, 1), 2)
    assert p.key() == f"n2_c16_k32_i1x20x22_f1x3x5_s1x2x1_p0x1x2_d1x1x1_g2_nchw_{'tf32' if torch.backends.cudnn.allow_tf32 else 'fp32'}"
    p = ct.problem_for(x.to(memory_format=torch.channels_last).half(), w.half(), (1, 1), (0, 0), (1, 1), 2)
    assert p.layout == "nhwc" and p.precision == "fp16"
    assert ct._padding("same", 2, (3, 5), (1, 1), (1, 1)) == (1, 2)
    assert ct._padding("same", 2, (2, 2), (1, 1), (1, 1)) is None  # asymmetric: PyTorch's own convolution


class StubOp:
    """Stands in for a ConvOp: records what the module hands to the launch."""

    kernel_name = "stub_kernel"
    chosen_by = "cost model"

    def __init__(self, problem, needs_prepare=False):
        self.problem = problem
        self.needs_prepare = needs_prepare
        self.runs = []
        self.prepares = []

    def run_pointers(self, activation, filter, output, stream):
        self.runs.append((activation, filter, output, stream))

    def prepare_pointer(self, filter, stream):
        self.prepares.append(filter)


class StubContext:
    def __init__(self, needs_prepare=False, error=None):
        self.asked = []
        self.needs_prepare = needs_prepare
        self.error = error

    def conv(self, problem):
        self.asked.append(problem.key())
        if self.error:
            raise self.error
        return StubOp(problem, self.needs_prepare)


@pytest.fixture
def stub_device(monkeypatch):
    """CPU tensors pass for CUDA ones and the device calls are stubbed: convgen's own path, checks and plans as they
    are, runs without a GPU (the launch is a StubOp's record; capture is off unless a test says otherwise)."""
    stub = StubContext()
    state = {"capturing": False}
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(ct, "context", lambda device=None: stub)
    monkeypatch.setattr(ct, "_raw_stream", lambda index: 0x5EED)
    monkeypatch.setattr(ct, "_functional_plans", {})  # each test sees the functional form's plans of its own
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: state["capturing"])
    stub.state = state
    return stub


def test_a_module_builds_its_op_once_per_input_signature_and_passes_pointers_without_a_copy(stub_device):
    conv = ct.Conv2d(8, 16, 3, padding=1, bias=False).eval()
    x = torch.randn(2, 8, 10, 12)
    with torch.no_grad():
        for _ in range(3):
            y = conv(x)
    assert stub_device.asked == ["n2_c8_k16_i1x10x12_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_"
                                 + ("tf32" if torch.backends.cudnn.allow_tf32 else "fp32")]
    (op,) = [plan.op for plan in conv._plans.values()]
    assert len(op.runs) == 3 and conv.fallbacks == 0
    activation, filter, output, stream = op.runs[-1]
    assert (activation, filter, output, stream) == (x.data_ptr(), conv.weight.data_ptr(), y.data_ptr(), 0x5EED)
    assert y.shape == (2, 16, 10, 12) and y.is_contiguous() and y.dtype == x.dtype


def test_a_new_input_shape_builds_a_new_op_and_the_old_one_is_kept(stub_device):
    conv = ct.Conv2d(8, 16, 3, stride=2, padding=1).eval()
    with torch.no_grad():
        a = conv(torch.randn(1, 8, 10, 12))
        b = conv(torch.randn(4, 8, 20, 20))
        conv(torch.randn(1, 8, 10, 12))
    assert a.shape == (1, 16, 5, 6) and b.shape == (4, 16, 10, 10)
    assert [key.split("_")[0] + "_" + key.split("_")[3] for key in stub_device.asked] == ["n1_i1x10x12", "n4_i1x20x20"]
    assert len(conv.ops()) == 2 and {kernel for _, kernel, _ in conv.ops()} == {"stub_kernel"}


def test_layout_dtype_and_the_tf32_setting_are_part_of_the_signature(stub_device, monkeypatch):
    conv = ct.Conv2d(8, 16, 3, padding=1, bias=False).eval()
    x = torch.randn(1, 8, 6, 6)
    with torch.no_grad():
        conv(x)
        y = conv(x.to(memory_format=torch.channels_last))
        monkeypatch.setattr(ct, "_allow_tf32", lambda: not torch.backends.cudnn.allow_tf32)
        conv(x)
    layouts = [key.split("_")[-2:] for key in stub_device.asked]
    fp32 = "tf32" if torch.backends.cudnn.allow_tf32 else "fp32"
    assert layouts == [["nchw", fp32], ["nhwc", fp32], ["nchw", "fp32" if fp32 == "tf32" else "tf32"]]
    assert y.is_contiguous(memory_format=torch.channels_last)
    # The nchw weight is copied into the nhwc problem's layout for that call only; the input never is.
    plans = list(conv._plans.values())
    assert [(p.copy_input, p.copy_weight) for p in plans] == [(False, False), (False, True), (False, False)]
    assert plans[1].op.runs[0][1] != conv.weight.data_ptr()


def test_a_strided_input_is_copied_dense_and_a_half_input_runs_half(stub_device):
    conv = ct.Conv2d(8, 16, 3, padding=1, bias=False).eval()
    wide = torch.randn(1, 8, 10, 24)
    with torch.no_grad():
        y = conv(wide[:, :, :, ::2])
        z = conv.half()(torch.randn(1, 8, 10, 12).half())
    assert y.shape == (1, 16, 10, 12) and z.dtype == torch.float16
    assert stub_device.asked[-1].endswith("_nchw_fp16")
    assert [p.copy_input for p in conv._plans.values()] == [True, False]


def test_the_gradient_check_runs_on_every_call_not_once_per_signature(stub_device):
    conv = ct.Conv2d(3, 4, 3).eval()
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        conv(x)
    want = F.conv2d(x, conv.weight, conv.bias)
    got = conv(x)  # grad enabled and the weight wants one: PyTorch's forward, counted
    assert conv.fallbacks == 1 and conv.last_fallback == "a gradient is wanted (convgen runs the forward pass only)"
    assert got.requires_grad and torch.allclose(got, want)
    with torch.no_grad():
        conv(x)
    assert conv.fallbacks == 1 and len(stub_device.asked) == 1


def test_a_mismatched_input_still_gets_pytorchs_error_and_a_failed_build_is_not_cached(stub_device):
    conv = ct.Conv2d(8, 16, 3).eval()
    with torch.no_grad(), pytest.raises(RuntimeError, match=r"expected input\[1, 6, 8, 8\] to have 8 channels"):
        conv(torch.randn(1, 6, 8, 8))
    assert conv.last_fallback == "input of 6 channels for a weight of shape (16, 8, 3, 3), groups 1"
    stub_device.error = ValueError("no kernel")
    x = torch.randn(1, 8, 8, 8)
    for _ in range(2):
        with torch.no_grad(), pytest.raises(ValueError, match=r"^no kernel$"):
            conv(x)
    assert len(stub_device.asked) == 2  # asked again: nothing cached for a signature whose build failed


def test_a_new_signature_during_graph_capture_is_refused_and_a_known_one_runs(stub_device):
    conv = ct.Conv2d(8, 16, 3, padding=1, bias=False).eval()
    x = torch.randn(1, 8, 10, 12)
    with torch.no_grad():
        conv(x)
        stub_device.state["capturing"] = True
        conv(x)
        with pytest.raises(RuntimeError, match=r"^convgen.torch: input of shape \(2, 8, 10, 12\) \(torch.float32, "
                                               r"strides \(960, 120, 12, 1\)\) is new to this Conv2d during CUDA "
                                               r"graph capture: its kernel would be chosen and compiled inside the "
                                               r"capture; call it once on such an input before capturing$"):
            conv(torch.randn(2, 8, 10, 12))
        with pytest.raises(RuntimeError, match=r"is new to convgen.torch.conv2d during CUDA graph capture"):
            ct.conv2d(torch.randn(3, 8, 10, 12), conv.weight, None, 1, 1)
    assert len(stub_device.asked) == 1 and len(next(iter(conv._plans.values())).op.runs) == 2


def test_a_filter_with_one_time_work_is_prepared_again_when_changed_in_place_and_in_every_capture(stub_device):
    stub_device.needs_prepare = True
    conv = ct.Conv2d(8, 16, 3, padding=1, bias=False).eval()
    x = torch.randn(1, 8, 10, 12)
    with torch.no_grad():
        conv(x)
        conv(x)
        (op,) = [plan.op for plan in conv._plans.values()]
        assert op.prepares == [conv.weight.data_ptr()]  # the first call only
        conv.weight.mul_(2.0)
        conv(x)
        assert len(op.prepares) == 2
        stub_device.state["capturing"] = True
        conv(x)
        conv(x)
    assert len(op.prepares) == 4 and len(op.runs) == 5


def test_filters_sharing_an_op_are_each_prepared_once_and_a_new_tensor_at_a_known_pointer_again(stub_device):
    stub_device.needs_prepare = True
    x, w1, w2 = torch.randn(1, 8, 10, 12), torch.randn(16, 8, 3, 3), torch.randn(16, 8, 3, 3)
    with torch.no_grad():
        for _ in range(3):
            ct.conv2d(x, w1, None, 1, 1)
            ct.conv2d(x, w2, None, 1, 1)
        (plan,) = ct._functional_plans.values()
        assert plan.op.prepares == [w1.data_ptr(), w2.data_ptr()]
        # A tensor sharing w1's storage (so its pointer) is another tensor: its values may differ from what was
        # prepared, so it is prepared again.
        w3 = w1.view_as(w1)
        ct.conv2d(x, w3, None, 1, 1)
    assert plan.op.prepares == [w1.data_ptr(), w2.data_ptr(), w1.data_ptr()] and len(plan.op.runs) == 7


def test_the_functional_form_caches_by_signature_and_arguments(stub_device):
    x, w = torch.randn(1, 8, 10, 12), torch.randn(16, 8, 3, 3)
    with torch.no_grad():
        a = ct.conv2d(x, w, None, 1, 1)
        ct.conv2d(x, w, None, 1, 1)
        b = ct.conv2d(x, w, torch.zeros(16), [2, 2], 1)
        c = ct.conv2d(x, w, None, 1, "same")
    assert a.shape == (1, 16, 10, 12) and b.shape == (1, 16, 5, 6) and c.shape == a.shape
    assert len(stub_device.asked) == 3  # 'same' is an argument of its own (the context's cache knows its problem)
    with torch.no_grad(), pytest.raises(RuntimeError, match=r"expected input\[1, 8, 10, 12\] to have 16 channels"):
        ct.conv2d(x, torch.randn(16, 16, 3, 3), None, 1, 1)


# Edge cases: (n, c, k, input, filter, stride, padding, dilation, groups).
EDGE_CASES = [
    (1, 3, 8, (17, 19), (3, 3), 1, 1, 1, 1),
    (2, 16, 32, (14, 14), (1, 1), 2, 0, 1, 1),
    (1, 32, 32, (9, 11), (3, 3), 1, 1, 1, 32),
    (3, 12, 24, (10, 10), (3, 3), 2, 1, 1, 4),
    (1, 8, 5, (13, 7), (5, 3), (2, 1), (2, 1), 1, 1),
    (1, 4, 4, (16, 16), (3, 3), 1, 2, 2, 1),
    (1, 1, 1, (1, 1), (1, 1), 1, 0, 1, 1),
    (4, 64, 64, (7, 7), (3, 3), 1, 1, 1, 1),
]


@pytest.fixture(scope="module")
def strict_fp32(tmp_path_factory):
    """A convgen context of its own (cost model only: no tuning, no shared database) with TF32 off."""
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    ct.configure(policy="cost_model_only", database=str(tmp_path_factory.mktemp("db") / "tuning.sqlite"))
    yield
    torch.backends.cudnn.allow_tf32 = tf32
    ct.configure()


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("case", EDGE_CASES, ids=[f"case{i}" for i in range(len(EDGE_CASES))])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_conv2d_matches_pytorch_on_the_edge_cases(strict_fp32, case, channels_last):
    n, c, k, size, kernel, stride, padding, dilation, groups = case
    torch.manual_seed(1)
    x = torch.randn(n, c, *size, device="cuda")
    w = torch.randn(k, c // groups, *kernel, device="cuda")
    b = torch.randn(k, device="cuda")
    if channels_last:
        x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
    with torch.no_grad():
        want = F.conv2d(x, w, b, stride, padding, dilation, groups)
        got = ct.conv2d(x, w, b, stride, padding, dilation, groups)
    torch.cuda.synchronize()
    assert got.shape == want.shape
    assert rel_l2(got, want) < 1e-5


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("dtype,tolerance", [(torch.float16, 1e-2), (torch.bfloat16, 1e-2)])
def test_half_precisions_match_pytorch(strict_fp32, dtype, tolerance):
    torch.manual_seed(2)
    x = torch.randn(2, 32, 14, 14, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    w = torch.randn(64, 32, 3, 3, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    with torch.no_grad():
        got = ct.conv2d(x, w, None, 1, 1)
        want = F.conv2d(x.double(), w.double(), None, 1, 1)
    assert got.dtype == dtype and rel_l2(got, want) < tolerance


@pytest.mark.gpu
@cuda
def test_a_3d_convolution_matches_pytorch(strict_fp32):
    torch.manual_seed(3)
    x = torch.randn(1, 4, 6, 8, 8, device="cuda")
    w = torch.randn(8, 4, 3, 3, 3, device="cuda")
    with torch.no_grad():
        got, want = ct.conv3d(x, w, None, 1, 1), F.conv3d(x, w, None, 1, 1)
    assert rel_l2(got, want) < 1e-5


@pytest.mark.gpu
@cuda
def test_work_queued_on_a_side_stream_runs_in_that_streams_order(strict_fp32):
    torch.manual_seed(4)
    conv = ct.Conv2d(64, 64, 3, padding=1).cuda().eval()
    x = torch.randn(8, 64, 56, 56, device="cuda")
    with torch.no_grad():
        want = F.conv2d(x, conv.weight, conv.bias, 1, 1)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = torch.zeros_like(x)
            torch.cuda._sleep(50_000_000)  # the side stream is busy: a launch on another stream would race ahead
            y.copy_(x)
            got = conv(y)  # must read y after the copy: same stream
        torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert rel_l2(got, want) < 1e-5


@pytest.mark.gpu
@cuda
def test_a_converted_resnet50_matches_the_original(strict_fp32):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(5)
    model = torchvision.models.resnet50(weights=None).cuda().eval()
    x = torch.randn(2, 3, 224, 224, device="cuda")
    with torch.no_grad():
        want = model(x)
        ct.convert(model)
        got = model(x)
    convs = [m for m in model.modules() if isinstance(m, ct.Conv2d)]
    assert len(convs) == 53 and all(m.fallbacks == 0 for m in convs)
    assert rel_l2(got, want) < 1e-4


@pytest.mark.gpu
@cuda
def test_tune_records_every_convolution_in_the_database(tmp_path):
    database = tmp_path / "tuning.sqlite"
    model = ct.convert(nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 1)).cuda().eval())
    summary = ct.tune(model, torch.randn(1, 8, 12, 12, device="cuda"), database=database, budget=3)
    assert [s["layer"] for s in summary] == ["0", "2"]
    assert all(s["chosen_by"] in ("tuned now", "database") and s["kernel"] for s in summary)
    assert database.is_file()


class SmallNet(nn.Module):
    """Two layers of one shape (one op, two filters), a strided 1x1 with bias, a ReLU between."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.b = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.down = nn.Conv2d(16, 32, 1, stride=2)

    def forward(self, x):
        return self.down(torch.relu(self.b(torch.relu(self.a(x)))))


def captured(model, static_x):
    """PyTorch's recipe: warm up on a side stream, then capture one forward; the graph and its static output."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(2):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_y = model(static_x)
    return graph, static_y


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("act_sparsity", [0.0, 0.9], ids=["dense", "sparse"])
def test_a_converted_model_replays_in_a_cuda_graph_on_new_inputs(strict_fp32, act_sparsity):
    torch.manual_seed(6)
    eager = SmallNet().cuda().eval()
    model = ct.convert(SmallNet().cuda().eval(), act_sparsity={"b": act_sparsity, "down": act_sparsity})
    model.load_state_dict(eager.state_dict())
    static_x = torch.randn(2, 16, 14, 14, device="cuda")
    graph, static_y = captured(model, static_x)
    for seed in (7, 8):
        torch.manual_seed(seed)
        x = torch.randn_like(static_x)
        static_x.copy_(x)
        graph.replay()
        with torch.no_grad():
            want = eager(x)
        torch.cuda.synchronize()
        assert rel_l2(static_y, want) < 1e-5
    assert all(m.fallbacks == 0 for m in model.modules() if isinstance(m, ct.Conv2d))
    # Another model sharing the ops (same problems, other filters) runs eagerly in between: the replay must not
    # depend on what that left in an op's prepared copy of its filter.
    other = ct.convert(SmallNet().cuda().eval(), act_sparsity={"b": act_sparsity, "down": act_sparsity})
    with torch.no_grad():
        other(static_x)
    static_x.copy_(x)
    graph.replay()
    torch.cuda.synchronize()
    assert rel_l2(static_y, want) < 1e-5


@pytest.mark.gpu
@cuda
def test_a_graph_sees_the_static_inputs_new_values_and_a_new_shape_in_capture_is_refused(strict_fp32):
    torch.manual_seed(9)
    conv = ct.Conv2d(8, 8, 3, padding=1).cuda().eval()
    static_x = torch.zeros(1, 8, 9, 9, device="cuda")
    graph, static_y = captured(conv, static_x)
    x = torch.randn_like(static_x)
    static_x.copy_(x)
    graph.replay()
    torch.cuda.synchronize()
    assert rel_l2(static_y, F.conv2d(x, conv.weight, conv.bias, 1, 1)) < 1e-5
    batch_of_two = torch.zeros(2, 8, 9, 9, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=r"is new to this Conv2d during CUDA graph capture"):
        with torch.cuda.graph(graph), torch.no_grad():
            conv(batch_of_two)
