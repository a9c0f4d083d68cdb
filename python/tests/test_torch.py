"""convgen.torch: drop-in modules, convert(), tune(); the host part needs PyTorch, the rest (marked gpu) a GPU.

On the GPU every comparison is with torch.nn.functional's convolution on the same tensors, in strict fp32 (TF32 off
for both) or in the half precisions with DESIGN.md's tolerances."""
import copy

import pytest

torch = pytest.importorskip("torch")
import convgen  # noqa: E402
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


def test_relu_on_load_convolves_the_inputs_relu_where_pytorch_runs_the_call():
    torch.manual_seed(5)
    x = torch.randn(2, 8, 9, 9)  # on the CPU: PyTorch runs the call, with the ReLU the kernel would apply on load
    conv = ct.Conv2d(8, 4, 3, padding=1, relu_on_load=True).eval()
    with torch.no_grad():
        want = F.conv2d(torch.relu(x), conv.weight, conv.bias, 1, 1)
        assert torch.equal(conv(x), want) and not torch.equal(F.conv2d(x, conv.weight, conv.bias, 1, 1), want)
        assert conv.fallbacks == 1
        assert torch.equal(ct.conv2d(x, conv.weight, conv.bias, 1, 1, relu_on_load=True), want)
        assert torch.equal(ct.conv2d(x, conv.weight, conv.bias, 1, 1), F.conv2d(x, conv.weight, conv.bias, 1, 1))
    assert "relu_on_load=True" in repr(conv) and "relu_on_load" not in repr(ct.Conv2d(8, 4, 3))
    assert ct.Conv2d.from_module(nn.Conv2d(8, 4, 3), relu_on_load=True).relu_on_load
    problem = ct.problem_for(x, conv.weight, (1, 1), (1, 1), (1, 1), 1, 0.5, relu_on_load=True)
    assert problem.relu_on_load and problem.key().endswith("_z50_relu")


class ReluThenConvs(nn.Module):
    """A ReLU whose users are two convolutions, one whose user is a convolution and the output, and an in-place
    ReLU of a tensor the output reads too."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = (nn.Conv2d(4, 4, 3, padding=1) for _ in range(4))

    def forward(self, x):
        r = torch.relu(x)
        y = self.a(r) + self.b(r)       # r: two convolutions, nothing else
        s = F.relu(y)
        z = self.c(s) + s               # s: a convolution and the add
        t = y * 2
        u = torch.relu_(t)              # in place on t, which nothing else reads: fine
        return z + self.d(u)


def _relus(graph_module):
    return [n for n in graph_module.graph.nodes
            if n.target in (torch.relu, F.relu, torch.relu_) or (n.op == "call_method" and n.target == "relu")]


def test_convert_with_relu_on_load_drops_the_relus_whose_users_are_all_convolutions():
    torch.manual_seed(7)
    model = ReluThenConvs().eval()
    x = torch.randn(2, 4, 8, 8)
    with torch.no_grad():
        want = model(x)
        converted = ct.convert(model, relu_on_load=True)
        got = converted(x)  # on the CPU: each module's fallback applies the ReLU it took over
    assert [m.relu_on_load for m in (converted.a, converted.b, converted.c, converted.d)] == [True, True, False, True]
    assert len(_relus(converted)) == 1  # s's: the add reads it too
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    named = ct.convert(model, relu_on_load={"a", "b"})
    assert [m.relu_on_load for m in (named.a, named.b, named.c, named.d)] == [True, True, False, False]
    assert len(_relus(named)) == 2
    plain = ct.convert(model)
    assert not any(m.relu_on_load for m in (plain.a, plain.b, plain.c, plain.d)) and len(_relus(plain)) == 3
    with pytest.warns(UserWarning, match="relu_on_load drops ReLUs from a fused model only"):
        ct.convert(ReluThenConvs(), relu_on_load=True)  # training mode: swapped one by one, nothing fused


def test_an_in_place_relu_of_a_tensor_read_elsewhere_stays():
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 1)

        def forward(self, x):
            y = x * 1
            r = torch.relu_(y)   # y is rectified in place: the add below reads the rectified values
            return self.conv(r) + y

    model = Shared().eval()
    converted = ct.convert(model, relu_on_load=True)
    assert not converted.conv.relu_on_load and len(_relus(converted)) == 1
    x = torch.randn(1, 4, 5, 5)
    with torch.no_grad():
        assert torch.allclose(converted(x), model(x), rtol=1e-5, atol=1e-5)


def test_act_sparsity_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"^act_sparsity: 1.5, expected a zero fraction in \[0, 1\]$"):
        ct.Conv2d(3, 4, 3, act_sparsity=1.5)


def test_on_the_cpu_the_module_runs_pytorchs_convolution_and_counts_it():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 3, 9, 9)
    want = model(x)
    model = ct.convert(model)  # conv and act fused: one module
    got = model(x)
    assert torch.equal(got, want)
    assert model.conv.fallbacks == 1 and model.conv.last_fallback == "input on cpu" and model.conv.act == "relu"
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

    def run_pointers(self, activation, filter, output, stream, bias=0, residual=0):
        self.runs.append((activation, filter, output, stream, bias, residual))  # computes nothing

    def prepare_pointer(self, filter, stream):
        self.prepares.append(filter)


class StubContext:
    def __init__(self, needs_prepare=False, error=None):
        self.asked = []
        self.prepared = []  # the problem keys of each prepare() call
        self.needs_prepare = needs_prepare
        self.error = error
        self.epilogue_error = None  # raised for problems with an epilogue only
        self.passes = []  # the arguments of each affine_concat_pointers call

    def conv(self, problem):
        self.asked.append(problem.key())
        if self.error:
            raise self.error
        if self.epilogue_error and problem.epilogue != "none":
            raise self.epilogue_error
        return StubOp(problem, self.needs_prepare)

    def affine_concat_pointers(self, *args):
        self.passes.append(args)  # computes nothing

    def prepare(self, problems):
        self.prepared.append([problem.key() for problem in problems])
        return len(problems)

    def epilogues(self):
        return [convgen.Problem.from_key(key).epilogue for key in self.asked]


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
    # Outputs start as zeros, so that what PyTorch would have added after the kernel shows (the StubOp adds nothing).
    empty_strided = torch.empty_strided
    monkeypatch.setattr(torch, "empty_strided", lambda *args, **kwargs: empty_strided(*args, **kwargs).zero_())
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
    assert op.runs[-1] == (x.data_ptr(), conv.weight.data_ptr(), y.data_ptr(), 0x5EED, 0, 0)
    assert y.shape == (2, 16, 10, 12) and y.is_contiguous() and y.dtype == x.dtype


def test_a_pruned_module_asks_for_a_problem_carrying_its_filters_pattern_in_the_problems_layout(stub_device):
    conv = ct.Conv2d(8, 16, 3, padding=1, bias=False, weight_sparse=True).eval()
    with torch.no_grad():
        conv.weight.mul_((torch.rand_like(conv.weight) < 0.1).float())  # about 90% zeros
        x = torch.randn(2, 8, 10, 12)
        conv(x)
        conv(x)  # the same filter: the same plan
        conv(x.contiguous(memory_format=torch.channels_last))
    plain = ct.problem_for(x, conv.weight, (1, 1), (1, 1), (1, 1), 1)
    nchw = plain.with_weights(conv.weight.detach().numpy()).key()
    nhwc_plain = ct.problem_for(x.contiguous(memory_format=torch.channels_last), conv.weight, (1, 1), (1, 1), (1, 1), 1)
    nhwc = nhwc_plain.with_weights(conv.weight.detach().permute(0, 2, 3, 1).contiguous().numpy()).key()
    assert stub_device.asked == [nchw, nhwc] and "_w" in nchw and nchw.split("_w")[1] != nhwc.split("_w")[1]
    assert conv.fallbacks == 0 and "weight_sparse=True" in repr(conv)
    with torch.no_grad():  # pruned further in place: the pattern is read again
        conv.weight[0].zero_()
        conv(x)
    again = plain.with_weights(conv.weight.detach().numpy()).key()
    assert stub_device.asked[-1] == again and again != nchw


def test_convert_bakes_the_filters_of_the_modules_it_is_told_to(stub_device):
    model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1, bias=False), nn.Conv2d(8, 8, 1, bias=False)).eval()
    converted = ct.convert(model, weight_sparse={"1"}, fuse=False)
    assert [m.weight_sparse for m in converted] == [False, True]
    with torch.no_grad():
        converted(torch.randn(1, 4, 6, 6))
    assert ["_w" in key for key in stub_device.asked] == [False, True]


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


def test_a_view_at_an_offset_the_kernels_cannot_take_runs_on_an_aligned_copy(stub_device):
    conv = ct.Conv2d(8, 16, 3, padding=1, bias=False).eval()
    flat = torch.randn(4 + 2 * 8 * 10 * 12)
    x = flat[1:-3].view(2, 8, 10, 12)  # 4 bytes past the storage's start
    assert x.data_ptr() % 16 == 4
    with torch.no_grad():
        conv(x)
        conv(flat[4:].view(2, 8, 10, 12))  # 16 bytes past it: passed as it is
    runs = list(conv._plans.values())[0].op.runs
    assert runs[0][0] % 16 == 0 and runs[0][0] != x.data_ptr()
    assert runs[1][0] == flat[4:].data_ptr()


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


def test_frozen_weights_are_not_prepared_again_in_a_capture_but_an_in_place_change_outside_one_still_is(stub_device):
    stub_device.needs_prepare = True
    conv = ct.convert(nn.Conv2d(8, 16, 3, padding=1, bias=False).eval(), frozen_weights=True)
    assert conv.frozen_weights
    x = torch.randn(1, 8, 10, 12)
    with torch.no_grad():
        conv(x)
        (op,) = [plan.op for plan in conv._plans.values()]
        stub_device.state["capturing"] = True
        conv(x)
        conv(x)
        assert op.prepares == [conv.weight.data_ptr()]  # the first call only: the captures replay its copy
        stub_device.state["capturing"] = False
        conv.weight.mul_(2.0)
        conv(x)
    assert len(op.prepares) == 2 and len(op.runs) == 4
    # convert passes it to every module it makes, fused or not; the default is off.
    model = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 1)).eval()
    frozen = [m.frozen_weights for m in ct.convert(model, frozen_weights=True).modules() if isinstance(m, ct.Conv2d)]
    assert frozen == [True, True]
    assert not any(m.frozen_weights for m in ct.convert(model).modules() if isinstance(m, ct.Conv2d))


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


def test_a_bias_is_added_in_the_epilogue_and_its_pointer_passed(stub_device):
    conv = ct.Conv2d(8, 16, 3, padding=1).eval()
    x = torch.randn(2, 8, 10, 12)
    with torch.no_grad():
        y = conv(x)
        z = ct.conv2d(x, conv.weight, conv.bias, 1, 1)
    assert len(stub_device.asked) == 2 and all(key.endswith("_ebias") for key in stub_device.asked)
    (op,) = [plan.op for plan in conv._plans.values()]
    assert op.runs == [(x.data_ptr(), conv.weight.data_ptr(), y.data_ptr(), 0x5EED, conv.bias.data_ptr(), 0)]
    assert torch.count_nonzero(y) == 0 and torch.count_nonzero(z) == 0  # nothing added after the kernel


def test_a_bias_the_epilogue_cannot_take_and_a_bias_that_wants_a_gradient_run_pytorch(stub_device):
    conv = ct.Conv2d(8, 16, 3, padding=1).eval()
    conv.weight.requires_grad_(False)  # only the bias trains: convgen must not swallow its gradient
    x = torch.randn(1, 8, 6, 6)
    y = conv(x)
    assert conv.fallbacks == 1 and conv.last_fallback == ct._GRAD_WANTED and y.requires_grad
    with torch.no_grad():
        ct.conv2d(x, conv.weight, torch.randn(32)[::2], 1, 1)
    (plan,) = ct._functional_plans.values()
    assert plan.why == ("bias of shape (16,), strides (2,), torch.float32 on cpu: the epilogue takes 16 contiguous "
                        "values of the input's dtype and device")


def test_an_epilogue_no_kernel_serves_runs_pytorch_and_a_plain_problem_still_raises(stub_device):
    stub_device.epilogue_error = convgen.Error("no candidate kernel")
    conv = ct.Conv2d(8, 16, 3, padding=1).eval()
    x = torch.randn(1, 8, 6, 6)
    with torch.no_grad():
        got = conv(x)
        assert torch.allclose(got, F.conv2d(x, conv.weight, conv.bias, 1, 1))
    assert conv.fallbacks == 1 and conv.last_fallback == "no convgen kernel for epilogue 'bias': no candidate kernel"
    stub_device.error = convgen.Error("no device work today")
    with torch.no_grad(), pytest.raises(convgen.Error, match=r"^no device work today$"):
        ct.Conv2d(8, 16, 3, bias=False).eval()(x)


def random_batch_norm(channels, rank=2):
    bn = (nn.BatchNorm2d if rank == 2 else nn.BatchNorm3d)(channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)
    return bn


class ConvBnRelu(nn.Module):
    def __init__(self, c=3, k=8, bias=False, act=None):
        super().__init__()
        self.conv = nn.Conv2d(c, k, 3, padding=1, bias=bias)
        self.bn = random_batch_norm(k)
        self.relu = act or nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


def test_conv_batch_norm_relu_becomes_one_module_with_the_folded_weight_and_bias(stub_device):
    torch.manual_seed(10)
    model = ConvBnRelu(bias=True).eval()
    conv, bn = model.conv, model.bn
    weight, bn_weight = conv.weight.detach().clone(), bn.weight.detach().clone()
    fused = ct.convert(model)
    assert isinstance(fused, torch.fx.GraphModule) and fused is not model
    assert isinstance(fused.conv, ct.Conv2d) and fused.conv.act == "relu" and not fused.conv.add_residual
    assert not any(isinstance(m, (nn.BatchNorm2d, nn.ReLU)) for m in fused.modules())
    assert [n.op for n in fused.graph.nodes] == ["placeholder", "call_module", "output"]
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    assert torch.allclose(fused.conv.weight, conv.weight * scale.view(-1, 1, 1, 1), rtol=1e-6, atol=1e-7)
    assert torch.allclose(fused.conv.bias, (conv.bias - bn.running_mean) * scale + bn.bias, rtol=1e-6, atol=1e-6)
    assert not fused.conv.weight.requires_grad and not fused.conv.bias.requires_grad
    # The original is as it was: its own modules, its own values.
    assert model.conv is conv and type(conv) is nn.Conv2d and model.bn is bn
    assert torch.equal(conv.weight, weight) and torch.equal(bn.weight, bn_weight)
    x = torch.randn(2, 3, 9, 9)
    with torch.no_grad():
        y = fused(x)
    assert stub_device.epilogues() == ["bias+relu"]
    (op,) = [plan.op for plan in fused.conv._plans.values()]
    assert op.runs == [(x.data_ptr(), fused.conv.weight.data_ptr(), y.data_ptr(), 0x5EED, fused.conv.bias.data_ptr(),
                        0)]
    assert fused.conv.ops()[0][0].endswith("_ebias+relu") and "act='relu'" in repr(fused.conv)


def test_the_fused_weight_keeps_the_channels_last_layout_and_half_precision():
    model = ConvBnRelu().eval().half().to(memory_format=torch.channels_last)
    fused = ct.convert(model)
    assert fused.conv.weight.dtype == torch.float16
    assert fused.conv.weight.is_contiguous(memory_format=torch.channels_last)


class Bottleneck(nn.Module):
    """torchvision's ResNet Bottleneck, as written there (one ReLU module used three times, `out += identity`)."""

    def __init__(self, c, width, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(c, width, 1, bias=False)
        self.bn1 = random_batch_norm(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = random_batch_norm(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = random_batch_norm(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or c != width * 4:
            self.downsample = nn.Sequential(nn.Conv2d(c, width * 4, 1, stride, bias=False),
                                            random_batch_norm(width * 4))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


def run_of(module):
    (plan,) = module._plans.values()
    (run,) = plan.op.runs
    return run


def test_a_bottleneck_adds_its_identity_in_the_last_convolutions_epilogue(stub_device):
    torch.manual_seed(11)
    block = ct.convert(Bottleneck(16, 4).eval())
    x = torch.randn(1, 16, 8, 8)
    with torch.no_grad():
        y = block(x)
    assert stub_device.epilogues() == ["bias+relu", "bias+relu", "bias+add+relu"]
    assert block.conv3.add_residual and block.conv3.act == "relu"
    assert run_of(block.conv3)[5] == x.data_ptr() and run_of(block.conv3)[2] == y.data_ptr()
    assert [n.op for n in block.graph.nodes] == ["placeholder"] + ["call_module"] * 3 + ["output"]


def test_a_downsampling_bottleneck_adds_the_downsample_convolutions_output(stub_device):
    torch.manual_seed(12)
    block = ct.convert(Bottleneck(8, 4, stride=2).eval())
    with torch.no_grad():
        block(torch.randn(1, 8, 8, 8))
    assert stub_device.epilogues() == ["bias+relu", "bias+relu", "bias", "bias+add+relu"]
    downsample = block.get_submodule("downsample.0")
    assert isinstance(downsample, ct.Conv2d) and downsample.act is None
    assert run_of(block.conv3)[5] == run_of(downsample)[2]  # the residual is the downsample's output


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_the_fused_model_computes_the_original_where_pytorch_runs_it(channels_last):
    torch.manual_seed(13)
    model = nn.Sequential(ConvBnRelu(3, 16), Bottleneck(16, 4), Bottleneck(16, 8, stride=2)).eval()
    x = torch.randn(2, 3, 12, 12)
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    fused = ct.convert(model)
    with torch.no_grad():
        want = model(x.clone())
        got = fused(x.clone())
    assert rel_l2(got, want) < 1e-6
    convs = [m for m in fused.modules() if isinstance(m, ct.Conv2d)]
    assert len(convs) == 8 and all(m.last_fallback == "input on cpu" for m in convs)


class TwoUsers(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = random_batch_norm(4)

    def forward(self, x):
        y = self.conv(x)
        z = self.bn(y)
        return torch.relu(z) + y  # the conv's output is read twice: nothing joins it


class TwoUsersAfterBatchNorm(TwoUsers):
    def forward(self, x):
        z = self.bn(self.conv(x))
        return torch.relu(z) + z  # the BatchNorm's output is read twice: it folds, the ReLU stays


def test_a_value_with_two_users_ends_the_chain(stub_device):
    model = ct.convert(TwoUsers().eval())
    assert model.conv.act is None
    # The BatchNorm and the ReLU after it are a pre-activation of the conv's output then: one pass.
    assert isinstance(model.bn, ct.AffineConcat) and isinstance(model.bn.batch_norm, nn.BatchNorm2d)
    model = ct.convert(TwoUsersAfterBatchNorm().eval())
    assert not hasattr(model, "bn") and model.conv.act is None and not model.conv.add_residual
    with torch.no_grad():
        model(torch.randn(1, 4, 5, 5))
    assert stub_device.epilogues() == ["bias"]


def test_a_model_in_training_mode_is_swapped_in_place_without_fusion():
    model = ConvBnRelu()
    assert ct.convert(model) is model
    assert isinstance(model.conv, ct.Conv2d) and isinstance(model.bn, nn.BatchNorm2d)
    assert model.conv.act is None
    with pytest.raises(ValueError, match=r"^convert: fuse=True but the model is in training mode"):
        ct.convert(ConvBnRelu(), fuse=True)
    eval_model = ConvBnRelu().eval()
    assert ct.convert(eval_model, fuse=False) is eval_model and isinstance(eval_model.bn, nn.BatchNorm2d)


class Untraceable(ConvBnRelu):
    def forward(self, x):
        y = self.bn(self.conv(x))
        return self.relu(y) if y.sum() > 0 else y  # control flow on a value: torch.fx cannot trace it


def test_a_model_fx_cannot_trace_is_swapped_in_place_with_a_warning():
    model = Untraceable().eval()
    with pytest.warns(UserWarning, match=r"torch.fx cannot trace Untraceable .*: its convolutions are swapped one "
                                         r"by one, nothing is fused"):
        assert ct.convert(model) is model
    assert isinstance(model.conv, ct.Conv2d) and isinstance(model.bn, nn.BatchNorm2d)
    with pytest.raises(ValueError, match=r"^convert: fuse=True but torch.fx cannot trace Untraceable: "):
        ct.convert(Untraceable().eval(), fuse=True)


class AddInto(nn.Module):
    def __init__(self, in_place):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)
        self.bn = random_batch_norm(4)
        self.in_place = in_place

    def forward(self, x):
        identity = x * 2
        if self.in_place:  # writes into identity (fx traces `identity += ...` as an add: Proxy has no __iadd__)
            return identity.add_(self.bn(self.conv(x)))
        return identity + self.bn(self.conv(x))


def test_an_add_joins_the_chain_from_either_side_but_an_in_place_one_only_as_its_first_operand(stub_device):
    assert ct.convert(AddInto(in_place=False).eval()).conv.add_residual
    fused = ct.convert(AddInto(in_place=True).eval())
    assert not fused.conv.add_residual and not hasattr(fused, "bn")
    x = torch.randn(1, 4, 3, 3)
    with torch.no_grad():
        fused(x)
    assert stub_device.epilogues() == ["bias"]


class WriteBetween(ConvBnRelu):
    def forward(self, x):
        y = self.bn(self.conv(x))
        x.relu_()  # the conv's input changes before the add: the conv must have read it before
        return y + x


def test_a_write_into_a_tensor_between_the_convolution_and_the_add_ends_the_chain():
    torch.manual_seed(14)
    model = WriteBetween(c=4, k=4).eval()
    fused = ct.convert(model)
    assert not fused.conv.add_residual and fused.conv.act is None and not hasattr(fused, "bn")
    x = torch.randn(1, 4, 5, 5)
    with torch.no_grad():
        assert rel_l2(fused(x.clone()), model(x.clone())) < 1e-6


class Activated(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3)
        self.act = act

    def forward(self, x):
        return self.act(self.conv(x))


@pytest.mark.parametrize("act,kind", [
    (nn.ReLU(), "relu"), (nn.ReLU(inplace=True), "relu"), (F.relu, "relu"), (torch.relu, "relu"),
    (lambda y: F.relu(y, inplace=True), "relu"), (lambda y: y.relu(), "relu"), (lambda y: y.relu_(), "relu"),
    (nn.ReLU6(), "relu6"), (F.relu6, "relu6"), (nn.Hardtanh(0.0, 6.0), "relu6"),
    (lambda y: F.hardtanh(y, 0.0, 6.0), "relu6"),
    (nn.Hardtanh(-1.0, 1.0), None), (nn.LeakyReLU(), None), (lambda y: F.hardtanh(y), None), (torch.sigmoid, None),
], ids=lambda v: v if isinstance(v, str) or v is None else "")
def test_each_spelling_of_relu_and_relu6_joins_the_chain_and_nothing_else_does(act, kind):
    torch.manual_seed(15)
    model = Activated(act).eval()
    fused = ct.convert(model)
    assert fused.conv.act == kind
    x = torch.randn(1, 4, 6, 6) * 4
    with torch.no_grad():
        assert torch.allclose(fused(x), model(x))


class WithResidualInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.bn = random_batch_norm(8)

    def forward(self, x, other):
        return torch.relu(self.bn(self.conv(x)) + other)


def test_a_residual_of_another_shape_runs_pytorch_and_one_in_another_layout_is_copied(stub_device):
    torch.manual_seed(16)
    model = WithResidualInput().eval()
    fused = ct.convert(model)
    x = torch.randn(2, 4, 6, 6)
    broadcast = torch.randn(1, 8, 1, 1)
    with torch.no_grad():
        assert torch.allclose(fused(x, broadcast), model(x, broadcast), atol=1e-6)
        assert fused.conv.fallbacks == 1 and fused.conv.last_fallback == (
            "a residual of shape (1, 8, 1, 1), torch.float32 on cpu: the epilogue adds one of the output's shape "
            "(2, 8, 6, 6), dtype and device")
        dense = torch.randn(2, 8, 6, 6)
        fused(x, dense)
        fused(x, dense.to(memory_format=torch.channels_last))
    runs = [plan.op.runs[0] for plan in fused.conv._plans.values() if plan.op is not None]
    assert runs[0][5] == dense.data_ptr() and runs[1][5] not in (0, dense.data_ptr())
    assert [plan.copy_residual for plan in fused.conv._plans.values() if plan.op is not None] == [False, True]
    with pytest.raises(TypeError, match=r"the module adds a residual \(add_residual=True\): call it as "
                                        r"module\(input, residual\)"):
        fused.conv(x)


def test_a_shared_convolution_fused_at_one_call_keeps_its_name_for_the_other():
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv(x)) * self.conv(x)

    model = Shared().eval()
    fused = ct.convert(model)
    assert fused.conv.act is None and fused.conv_fused.act == "relu"
    assert fused.conv.weight is model.conv.weight and fused.conv_fused.weight is model.conv.weight
    x = torch.randn(1, 4, 5, 5)
    with torch.no_grad():
        assert torch.allclose(fused(x), model(x))


def test_a_3d_convolution_folds_a_batch_norm_3d():
    torch.manual_seed(17)
    model = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), random_batch_norm(4, rank=3), nn.ReLU()).eval()
    fused = ct.convert(model)
    (conv,) = fused.children()
    assert isinstance(conv, ct.Conv3d) and conv.act == "relu"
    x = torch.randn(1, 2, 4, 5, 5)
    with torch.no_grad():
        assert rel_l2(fused(x), model(x)) < 1e-6


def test_torchvisions_resnet50_fuses_every_convolution(stub_device):
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet50(weights=None).eval()
    fused = ct.convert(model)
    convs = [m for m in fused.modules() if isinstance(m, ct.Conv2d)]
    assert len(convs) == 53 and not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())
    with torch.no_grad():
        fused(torch.randn(1, 3, 64, 64))
    epilogues = stub_device.epilogues()
    assert {e: epilogues.count(e) for e in set(epilogues)} == {"bias+relu": 33, "bias+add+relu": 16, "bias": 4}
    assert all(m.fallbacks == 0 and len(m.ops()) == 1 for m in convs)
    assert fused.get_submodule("layer1.0.conv3").add_residual
    assert fused.get_submodule("layer1.0.downsample.0").act is None
    # The original keeps its own modules.
    assert [type(m) for m in model.modules()].count(nn.Conv2d) == 53
    assert [type(m) for m in model.modules()].count(nn.BatchNorm2d) == 53


def set_batch_norms_apart_from_identity(model):
    """Gives every BatchNorm2d of `model` statistics and affine parameters near, but not at, 0 and 1 (seeded by the
    caller), so that folding them into the convolutions changes values."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.8, 1.2)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)


def test_a_fused_resnet50_computes_the_original_where_pytorch_runs_it():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(19)
    model = torchvision.models.resnet50(weights=None).eval()
    set_batch_norms_apart_from_identity(model)
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        assert rel_l2(ct.convert(model)(x), model(x)) < 1e-5


def test_torchvisions_densenet121_traces_and_fuses_each_convolution_followed_by_its_norm():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.densenet121(weights=None).eval()
    set_batch_norms_apart_from_identity(model)
    fused = ct.convert(model)
    convs = [m for m in fused.modules() if isinstance(m, ct.Conv2d)]
    assert len(convs) == 120
    assert sum(m.act == "relu" for m in convs) == 59  # conv0 and each dense layer's first convolution
    # Each dense layer's and transition's concatenation → norm → ReLU, and the last norm → F.relu: one pass each.
    passes = [m for m in fused.modules() if isinstance(m, ct.AffineConcat)]
    assert len(passes) == 58 + 3 + 1 and all(m.act == "relu" for m in passes)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in fused.modules()) == len(passes)  # each inside its pass
    assert not any(node.target is torch.cat for node in fused.graph.nodes)  # a block's own cat feeds its transition
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        assert rel_l2(fused(x), model(x)) < 1e-5
    assert all(m.fallbacks == 1 and m.last_fallback == "an input on cpu" for m in passes)


class DenseLayer(nn.Module):
    """DenseNet's layer, pre-activation: cat → BatchNorm → ReLU → 1x1 conv."""

    def __init__(self, channels=(8, 4), growth=6):
        super().__init__()
        self.norm = nn.BatchNorm2d(sum(channels))
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(sum(channels), growth, 1, bias=False)

    def forward(self, a, b):
        return self.conv(self.relu(self.norm(torch.cat([a, b], 1))))


def test_a_concatenation_batch_norm_and_relu_become_one_pass_given_the_inputs_pointers(stub_device):
    model = DenseLayer().eval()
    set_batch_norms_apart_from_identity(model)
    fused = ct.convert(model)
    assert isinstance(fused.norm, ct.AffineConcat) and fused.norm.act == "relu"
    bn = model.norm
    g = (bn.running_var.double() + bn.eps).rsqrt() * bn.weight.double()
    assert torch.allclose(fused.norm.scale, g.float())
    assert torch.allclose(fused.norm.shift, (bn.bias.double() - bn.running_mean.double() * g).float())
    a, b = torch.randn(2, 8, 5, 7), torch.randn(2, 4, 5, 7)
    with torch.no_grad():
        fused(a, b)
    (inputs, channels, output, scale, shift, batch, pixels, precision, channels_last, act, lo, hi, stream), = \
        stub_device.passes
    assert inputs == [a.data_ptr(), b.data_ptr()] and channels == [8, 4] and (batch, pixels) == (2, 35)
    assert (scale, shift) == (fused.norm.scale.data_ptr(), fused.norm.shift.data_ptr())
    assert (precision, channels_last, act, stream) == ("fp32", False, "relu", 0x5EED)
    assert fused.norm.fallbacks == 0


def test_a_pass_follows_its_inputs_layout_and_runs_pytorch_for_mixed_ones(stub_device):
    bn = nn.BatchNorm2d(12).eval()
    set_batch_norms_apart_from_identity(bn)
    module = ct.AffineConcat(bn, "relu6")
    a = torch.randn(2, 8, 5, 7).to(memory_format=torch.channels_last)
    b = torch.randn(2, 4, 5, 7).to(memory_format=torch.channels_last)
    with torch.no_grad():
        out = module([a, b])
        assert out.shape == (2, 12, 5, 7) and out.is_contiguous(memory_format=torch.channels_last)
        assert stub_device.passes[-1][8] is True and stub_device.passes[-1][9] == "relu6"
        one = torch.randn(2, 1, 5, 7)  # one channel: dense in both layouts, so it goes with the other
        module([a, torch.randn(2, 3, 5, 7).to(memory_format=torch.channels_last), one])
        assert stub_device.passes[-1][1] == [8, 3, 1] and stub_device.passes[-1][8] is True
        want = F.relu6(bn(torch.cat([a, b.contiguous()], 1)))
        assert rel_l2(module([a, b.contiguous()]), want) < 1e-6
        assert module.last_fallback == "inputs in different layouts"
        module([a, torch.randn(2, 4, 5, 14)[..., ::2]])
        assert module.last_fallback == "an input in neither dense layout"
        with pytest.raises(RuntimeError, match="running_mean should contain 13 elements not 12"):
            module([a, torch.randn(2, 5, 5, 7)])  # PyTorch's own error for the call
        assert module.last_fallback == "13 channels in, the BatchNorm has 12"
    assert module.fallbacks == 3 and len(stub_device.passes) == 2


def test_a_pass_of_new_inputs_during_graph_capture_is_refused_and_a_known_one_runs(stub_device):
    module = ct.AffineConcat(nn.BatchNorm2d(6).eval())
    a, b = torch.randn(1, 2, 3, 3), torch.randn(1, 4, 3, 3)
    with torch.no_grad():
        module([a, b])
        stub_device.state["capturing"] = True
        module([a, b])
        with pytest.raises(RuntimeError, match=r"are new to an AffineConcat during CUDA graph capture: call it once"):
            module([b, a])
    assert len(stub_device.passes) == 2


def test_a_pass_keeps_a_float32_scale_and_shift_when_the_model_is_made_half():
    bn = nn.BatchNorm2d(6)
    set_batch_norms_apart_from_identity(bn)
    module = ct.AffineConcat(bn.eval()).half()
    assert module.scale.dtype == module.shift.dtype == torch.float32
    assert module.batch_norm.running_var.dtype == torch.float16
    scale, shift = ct._fold_affine(module.batch_norm)  # folded from the BatchNorm as it now is
    assert torch.equal(module.scale, scale) and torch.equal(module.shift, shift)


def test_a_concatenation_with_another_user_stays_and_its_output_is_the_passs_one_input(stub_device):
    class Twice(DenseLayer):
        def forward(self, a, b):
            x = torch.cat([a, b], 1)
            return self.conv(self.relu(self.norm(x))), x

    fused = ct.convert(Twice().eval())
    assert isinstance(fused.norm, ct.AffineConcat)
    assert sum(node.target is torch.cat for node in fused.graph.nodes) == 1
    a, b = torch.randn(1, 8, 3, 3), torch.randn(1, 4, 3, 3)
    with torch.no_grad():
        fused(a, b)
    assert stub_device.passes[-1][1] == [12]


def test_a_batch_norm_in_training_mode_or_without_a_relu_is_left_to_pytorch():
    model = DenseLayer().eval()
    model.relu = nn.Sigmoid()
    fused = ct.convert(model)
    assert isinstance(fused.norm, nn.BatchNorm2d)
    with pytest.raises(ValueError, match="act: 'gelu', expected None, 'relu' or 'relu6'"):
        ct.AffineConcat(nn.BatchNorm2d(4), "gelu")


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
def test_a_half_channels_last_view_at_an_offset_matches_pytorch():
    torch.manual_seed(4)
    flat = torch.randn(1 + 2 * 14 * 14 * 32, device="cuda", dtype=torch.float16)
    x = flat[1:].view(2, 14, 14, 32).permute(0, 3, 1, 2)  # channels-last, 2 bytes past the storage's start
    w = torch.randn(64, 32, 3, 3, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    assert x.is_contiguous(memory_format=torch.channels_last) and x.data_ptr() % 16 == 2
    with torch.no_grad():
        got = ct.conv2d(x, w, None, 1, 1)
        want = F.conv2d(x.double(), w.double(), None, 1, 1)
    assert rel_l2(got, want) < 1e-2


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
def test_relu_on_load_runs_act_sparses_relu1_kernel_in_fp32_and_a_kernel_behind_a_relu_pass_in_fp16(strict_fp32):
    torch.manual_seed(6)
    x = torch.randn(1, 32, 28, 28, device="cuda")  # half of it negative: the kernel's ReLU leaves zeros there
    conv = ct.Conv2d(32, 32, 3, padding=1, relu_on_load=True, act_sparsity=0.5).cuda().eval()
    with torch.no_grad():
        got, want = conv(x), F.conv2d(torch.relu(x), conv.weight, conv.bias, 1, 1)
    assert conv.fallbacks == 0 and rel_l2(got, want) < 1e-5
    ((key, kernel, _),) = conv.ops()
    assert "_z50_relu" in key and kernel.startswith("act_sparse_") and "_relu1_" in kernel
    # No fp16 kernel applies max(0, x) as it loads: one runs behind the ReLU pass, on convgen all the same.
    half = ct.Conv2d(32, 32, 3, padding=1, relu_on_load=True).cuda().half().eval()
    with torch.no_grad():
        got = half(x.half())
        want = F.conv2d(torch.relu(x.double()), half.weight.double(), half.bias.double(), 1, 1)
    assert half.fallbacks == 0 and rel_l2(got, want) < 1e-2
    ((key, kernel, _),) = half.ops()
    assert "_fp16_relu" in key and "_relu1_" not in kernel


@pytest.mark.gpu
@cuda
def test_a_model_converted_with_relu_on_load_matches_the_original_and_its_convolutions_apply_the_relu(strict_fp32):
    torch.manual_seed(8)
    # A Dropout (the identity in eval mode) between the BatchNorm and the ReLU: the first conv's chain stops at the
    # BatchNorm, so the ReLU is left for the second conv to apply on load.
    model = nn.Sequential(nn.Conv2d(16, 32, 1), nn.BatchNorm2d(32), nn.Dropout(), nn.ReLU(),
                          nn.Conv2d(32, 32, 3, padding=1)).cuda().eval()
    x = torch.randn(1, 16, 28, 28, device="cuda")
    converted = ct.convert(model, relu_on_load=True, act_sparsity={"4": 0.5})
    with torch.no_grad():
        got, want = converted(x), model(x)
    assert rel_l2(got, want) < 1e-5
    conv = converted.get_submodule("4")
    assert conv.relu_on_load and conv.fallbacks == 0 and "_relu1_" in conv.ops()[0][1]


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
        assert ct.convert(model, fuse=False) is model  # module by module: every convolution, its bias in the epilogue
        got = model(x)
    convs = [m for m in model.modules() if isinstance(m, ct.Conv2d)]
    assert len(convs) == 53 and all(m.fallbacks == 0 for m in convs)
    assert rel_l2(got, want) < 1e-4


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_a_pass_matches_pytorchs_cat_batch_norm_and_relu_on_the_gpu(strict_fp32, dtype, channels_last):
    torch.manual_seed(3)
    channels = [64, 32, 32, 3, 32]  # DenseNet's growth, and an odd one (no vector then)
    bn = nn.BatchNorm2d(sum(channels))
    set_batch_norms_apart_from_identity(bn)
    bn = bn.cuda().eval()
    module = ct.AffineConcat(bn, "relu").cuda()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    for batch, extent in ((1, 7), (8, 28)):
        inputs = [torch.randn(batch, c, extent, extent, device="cuda", dtype=dtype).contiguous(memory_format=fmt)
                  for c in channels]
        with torch.no_grad():
            got = module(inputs)
            want = torch.relu(F.batch_norm(torch.cat(inputs, 1).float(), bn.running_mean, bn.running_var, bn.weight,
                                           bn.bias, False, 0.0, bn.eps))
        torch.cuda.synchronize()
        assert module.fallbacks == 0, module.last_fallback
        assert got.dtype == dtype and got.is_contiguous(memory_format=fmt)
        assert rel_l2(got, want) < (1e-6 if dtype == torch.float32 else 1e-2)


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, 1e-4), (torch.float16, 2e-2)], ids=["fp32", "fp16"])
def test_a_fused_densenet121_matches_the_eager_model_with_every_pre_activation_one_pass(strict_fp32, dtype, tolerance):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(7)
    model = torchvision.models.densenet121(weights=None).cuda()
    set_batch_norms_apart_from_identity(model)
    model = model.eval().to(dtype)
    x = torch.randn(2, 3, 224, 224, device="cuda", dtype=dtype)
    if dtype == torch.float16:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    with torch.no_grad():
        want = model(x)
        fused = ct.convert(model)
        got = fused(x)
    torch.cuda.synchronize()
    passes = [m for m in fused.modules() if isinstance(m, ct.AffineConcat)]
    convs = [m for m in fused.modules() if isinstance(m, ct.Conv2d)]
    assert len(passes) == 62 and all(m.fallbacks == 0 for m in passes), [m.last_fallback for m in passes]
    assert len(convs) == 120 and all(m.fallbacks == 0 for m in convs), [m.last_fallback for m in convs]
    assert rel_l2(got, want) < tolerance


@pytest.mark.gpu
@cuda
def test_prepare_under_cost_model_only_builds_every_layer_before_the_first_call(strict_fp32):
    torch.manual_seed(8)
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 24, 1), nn.ReLU(),
                          nn.Conv2d(24, 8, 3, stride=2, padding=1)).cuda().eval()
    converted = ct.convert(copy.deepcopy(model))
    x = torch.randn(2, 8, 15, 15, device="cuda")
    summary = ct.prepare(converted, x)
    assert [s["chosen_by"] for s in summary] == ["cost model"] * 3
    assert ct.context().stats()["model_only"] >= 3
    with torch.no_grad():
        got, want = converted(x), model(x)
    torch.cuda.synchronize()
    assert rel_l2(got, want) < 1e-5


def resnet50_with_statistics(dtype=torch.float32):
    """A torchvision ResNet-50 in eval mode whose BatchNorms hold statistics and affine parameters other than 0 and 1,
    so that folding them changes values. Near those (a ResNet-50 whose statistics are its activations' own amplifies
    fp32 rounding to 1.4e-5 against float64 at batch 1, on the CPU: too close to the tolerance to test with)."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(5)
    model = torchvision.models.resnet50(weights=None).cuda()
    set_batch_norms_apart_from_identity(model)
    model = model.eval().to(dtype)
    return model.to(memory_format=torch.channels_last) if dtype == torch.float16 else model


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, 1e-4), (torch.float16, 2e-2)], ids=["fp32", "fp16"])
def test_a_fused_resnet50_matches_the_unfused_eager_model(strict_fp32, dtype, tolerance):
    model = resnet50_with_statistics(dtype)
    x = torch.randn(2, 3, 224, 224, device="cuda", dtype=dtype)
    if dtype == torch.float16:
        x = x.to(memory_format=torch.channels_last)
    with torch.no_grad():
        want = model(x)
        fused = ct.convert(model)
        got = fused(x)
    torch.cuda.synchronize()
    convs = [m for m in fused.modules() if isinstance(m, ct.Conv2d)]
    assert len(convs) == 53 and all(m.fallbacks == 0 for m in convs), [m.last_fallback for m in convs]
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())
    epilogues = [key.rsplit("_e", 1)[1] for m in convs for key, _, _ in m.ops()]
    assert {e: epilogues.count(e) for e in set(epilogues)} == {"bias+relu": 33, "bias+add+relu": 16, "bias": 4}
    assert got.dtype == dtype and rel_l2(got, want) < tolerance


@pytest.mark.gpu
@cuda
def test_a_fused_resnet50_replays_in_a_cuda_graph_on_new_inputs(strict_fp32):
    model = resnet50_with_statistics()
    fused = ct.convert(model)
    static_x = torch.randn(1, 3, 224, 224, device="cuda")
    graph, static_y = captured(fused, static_x)
    replays_match(graph, static_x, static_y, model, 1e-4)
    assert all(m.fallbacks == 0 for m in fused.modules() if isinstance(m, ct.Conv2d))


@pytest.mark.gpu
@cuda
def test_a_fused_residual_in_another_layout_than_the_input_is_copied_and_matches(strict_fp32):
    torch.manual_seed(18)
    model = WithResidualInput().cuda().eval()
    fused = ct.convert(model)
    x = torch.randn(2, 4, 9, 9, device="cuda").to(memory_format=torch.channels_last)
    other = torch.randn(2, 8, 9, 9, device="cuda")  # nchw, for an nhwc problem
    with torch.no_grad():
        got, want = fused(x, other), model(x, other)
    torch.cuda.synchronize()
    assert fused.conv.fallbacks == 0 and fused.conv.ops()[0][0].endswith("_nhwc_fp32_ebias+add+relu")
    assert rel_l2(got, want) < 1e-5


def test_tune_collects_every_problem_first_then_prepares_them_in_one_call_then_builds_the_ops(stub_device, monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 1), nn.Conv2d(16, 16, 1)).eval()
    converted = ct.convert(copy.deepcopy(model), fuse=False)
    x = torch.randn(1, 8, 12, 12)
    summary = ct.tune(converted, x, budget=3)
    keys = [s["problem"] for s in summary]
    # One prepare with each module's problem in the order the forward met them (the two 1x1 layers share one:
    # prepare skips repeats), before any op was asked for; then each module asked for its op once.
    assert stub_device.prepared == [[keys[0], keys[1], keys[2]]]
    assert keys[1] == keys[2] and stub_device.asked == keys
    assert [s["layer"] for s in summary] == ["0", "2", "3"]
    assert all(m.fallbacks == 0 for m in converted.modules() if isinstance(m, ct.Conv2d))
    # The collecting pass ran PyTorch's convolutions: the modules' plans from it are gone, the ops are the stub's.
    assert all(s["kernel"] == "stub_kernel" for s in summary)


def test_prepare_builds_every_problem_ahead_under_the_configured_policy_and_tune_restores_it(stub_device,
                                                                                            monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    seen = []
    monkeypatch.setattr(ct, "configure", lambda **options: seen.append(dict(options)))
    model = ct.convert(nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.Conv2d(16, 16, 1)).eval(), fuse=False)
    x = torch.randn(1, 8, 12, 12)
    summary = ct.prepare(model, x)
    assert seen == []  # the policy configure set stays
    keys = [s["problem"] for s in summary]
    assert stub_device.prepared == [keys] and stub_device.asked == keys and len(keys) == 2
    ct.tune(model, x, budget=2)
    assert seen[0]["policy"] == "tune_on_first_use" and seen[0]["tune_budget"] == 2
    assert "policy" not in seen[1]  # restored: what configure had before (nothing here)


@pytest.mark.gpu
@cuda
def test_tune_records_every_convolution_in_the_database(tmp_path):
    database = tmp_path / "tuning.sqlite"
    model = ct.convert(nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 1)).cuda().eval())
    summary = ct.tune(model, torch.randn(1, 8, 12, 12, device="cuda"), database=database, budget=3)
    assert [s["layer"] for s in summary] == ["0", "2"]
    assert summary[0]["problem"].endswith("_ebias+relu") and summary[1]["problem"].endswith("_ebias")
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


def replays_match(graph, static_x, static_y, reference, limit):
    """Replays `graph` on two new inputs copied into its static input, each within `limit` of `reference` on that
    input; returns the last input and the reference's output for it."""
    for seed in (7, 8):
        torch.manual_seed(seed)
        x = torch.randn_like(static_x)
        static_x.copy_(x)
        graph.replay()
        with torch.no_grad():
            want = reference(x)
        torch.cuda.synchronize()
        assert rel_l2(static_y, want) < limit
    return x, want


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
    x, want = replays_match(graph, static_x, static_y, eager, 1e-5)
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
