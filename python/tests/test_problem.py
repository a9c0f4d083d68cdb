"""convgen.Problem from Python: keywords, derived sizes, keys, filters, and the C++ messages as Python exceptions."""
import numpy as np
import pytest

import convgen


def test_a_2d_problem_has_its_shape_key_and_sizes():
    p = convgen.Problem(1, 64, 64, input=(56, 56), filter=(3, 3), padding=(1, 1))
    assert (p.n, p.c, p.k, p.groups, p.rank) == (1, 64, 64, 1, 2)
    assert p.input == [56, 56] and p.filter == [3, 3] and p.stride == [1, 1] and p.padding == [1, 1]
    assert p.output == [56, 56]
    assert p.layout == "nchw" and p.precision == "fp32"
    assert p.key() == "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32"
    assert p.describe() == "64->64 3x3 s1 p1 at 56x56 -> 56x56, n1"
    assert p.flops() == 2 * 64 * 64 * 9 * 56 * 56
    assert (p.activation_elements(), p.filter_elements(), p.output_elements()) == (64 * 56 * 56, 64 * 64 * 9,
                                                                                    64 * 56 * 56)
    assert repr(p) == "convgen.Problem('n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32')"


def test_1d_and_3d_problems_take_extents_of_their_rank():
    p1 = convgen.Problem(2, 8, 16, input=(100,), filter=(5,), stride=(2,), layout="nwc")
    assert p1.rank == 1 and p1.output == [48] and p1.layout == "nwc"
    p3 = convgen.Problem(1, 4, 8, input=(8, 16, 16), filter=(3, 3, 3), padding=(1, 1, 1), layout="ndhwc",
                         precision="fp16", act_sparsity=0.5)
    assert p3.rank == 3 and p3.output == [8, 16, 16] and p3.precision == "fp16" and p3.act_sparsity == 0.5
    assert p3.key().endswith("_ndhwc_fp16_z50")


def test_a_key_parses_back_to_the_same_problem():
    p = convgen.Problem(4, 32, 64, input=(28, 30), filter=(3, 1), stride=(2, 1), padding=(1, 0), dilation=(1, 1),
                        groups=2, layout="nhwc", precision="bf16", act_sparsity=0.9)
    q = convgen.Problem.from_key(p.key())
    assert q == p and hash(q) == hash(p) and q.key() == p.key()


def test_errors_are_value_errors_with_the_cpp_message():
    with pytest.raises(convgen.InputError, match=r"^problem key 'nope': expected 11 to 15 fields separated by '_', "
                                                 r"got 1$"):
        convgen.Problem.from_key("nope")
    with pytest.raises(ValueError, match=r"^filter: 3 extents given, the 2-D layout takes 2$"):
        convgen.Problem(1, 64, 64, input=(56, 56), filter=(3, 3, 3))
    with pytest.raises(ValueError, match=r"^invalid problem: padding leaves no output: output is 1x0x0$"):
        convgen.Problem(1, 64, 64, input=(2, 2), filter=(3, 3))
    with pytest.raises(ValueError, match=r"^layout: unknown 'nchw4', expected one of ncw, nwc, nchw, nhwc, ncdhw, "
                                         r"ndhwc$"):
        convgen.Problem(1, 8, 8, input=(8, 8), filter=(3, 3), layout="nchw4")
    with pytest.raises(ValueError, match=r"^precision: unknown 'fp8'"):
        convgen.Problem(1, 8, 8, input=(8, 8), filter=(3, 3), precision="fp8")
    assert issubclass(convgen.InputError, convgen.Error) or issubclass(convgen.InputError, ValueError)


def test_a_filter_given_as_an_array_sets_the_pattern_and_its_zero_fraction():
    p = convgen.Problem(1, 8, 4, input=(6, 6), filter=(3, 3))
    w = np.zeros((4, 8, 3, 3), np.float32)
    w[0, 0, 1, 1] = 1.0
    w[3, 7, 2, 0] = -2.0
    carried = p.with_weights(w)
    assert len(carried.weight_pattern) == 16 and p.weight_pattern == ""
    assert carried.weight_zero_fraction == pytest.approx(1 - 2 / w.size)
    assert carried.key().endswith("_w" + carried.weight_pattern)
    w2 = w.copy()
    w2[0, 0, 1, 1] = 5.0  # same nonzero positions, same pattern
    assert p.with_weights(w2).weight_pattern == carried.weight_pattern
    w2[1, 1, 1, 1] = 1.0
    assert p.with_weights(w2).weight_pattern != carried.weight_pattern
    with pytest.raises(ValueError, match=r"^with_weights: 10 values given, the filter .* has 288$"):
        p.with_weights(np.zeros(10, np.float32))
    # Another float type is converted (a copy: the filter is read once); what is no array is refused.
    assert p.with_weights(w.astype(np.float64)).weight_pattern == carried.weight_pattern
    with pytest.raises(TypeError):
        p.with_weights("weights.npy")


def test_an_epilogue_is_part_of_the_problem_its_key_and_its_description():
    plain = convgen.Problem(1, 64, 64, input=(56, 56), filter=(3, 3), padding=(1, 1))
    p = convgen.Problem(1, 64, 64, input=(56, 56), filter=(3, 3), padding=(1, 1), epilogue="add+bias+relu")
    assert plain.epilogue == "none" and p.epilogue == "bias+add+relu"  # the canonical order
    assert p.key() == plain.key() + "_ebias+add+relu" and convgen.Problem.from_key(p.key()) == p
    assert p != plain and hash(p) != hash(plain)
    assert plain.with_epilogue("bias+add+relu") == p and p.with_epilogue("none") == plain
    assert p.describe() == plain.describe() + ", epilogue bias+add+relu"
    assert plain.with_epilogue("alpha:0.5+add:2+clip:-1:1").epilogue == "alpha:0.5+add:2+clip:-1:1"
    assert plain.with_epilogue("bias+relu6").with_weights(np.ones((64, 64, 3, 3), np.float32)).epilogue == "bias+relu6"


def test_relu_on_load_is_part_of_the_problem_its_key_and_its_description():
    plain = convgen.Problem(1, 64, 64, input=(56, 56), filter=(3, 3), padding=(1, 1), act_sparsity=0.5)
    p = convgen.Problem(1, 64, 64, input=(56, 56), filter=(3, 3), padding=(1, 1), act_sparsity=0.5, relu_on_load=True)
    assert not plain.relu_on_load and p.relu_on_load
    assert p.key() == plain.key() + "_relu" and convgen.Problem.from_key(p.key()) == p
    assert p != plain and hash(p) != hash(plain)
    assert p.describe() == plain.describe() + ", max(0, x) on load"


def test_a_bad_epilogue_is_a_value_error_with_the_cpp_message():
    plain = convgen.Problem(1, 8, 8, input=(8, 8), filter=(3, 3))
    with pytest.raises(convgen.InputError, match=r"^epilogue: unknown term 'gelu' in 'bias\+gelu', expected 'none' or "
                                                 r"terms joined by '\+': alpha:A, bias, add, add:B, relu, relu6, "
                                                 r"clip:LO:HI \(the activation last\)$"):
        convgen.Problem(1, 8, 8, input=(8, 8), filter=(3, 3), epilogue="bias+gelu")
    with pytest.raises(ValueError, match=r"^epilogue: term 'bias' follows the activation in 'relu\+bias'"):
        plain.with_epilogue("relu+bias")
    with pytest.raises(ValueError, match=r"^epilogue: 'clip:2:1': epilogue clip bounds must be in order"):
        plain.with_epilogue("clip:2:1")


def test_the_version_and_default_places_are_there():
    assert convgen.__version__ == convgen.version() and convgen.version().count(".") == 2
    assert convgen.default_database().endswith("tuning.sqlite")
    assert convgen.default_cache_dir().endswith("jit")
