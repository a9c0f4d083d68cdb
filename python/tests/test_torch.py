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
