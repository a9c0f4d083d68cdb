"""convgen.ConvContext from Python: options checked before any device work, and no device is a clear error."""
import pytest

import convgen


def has_cuda_device():
    try:
        convgen.ConvContext(policy="cost_model_only")
    except convgen.NoDeviceError:
        return False
    return True


def test_an_unknown_policy_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match=r"^policy: unknown 'fastest', expected one of database_only, "
                                         r"cost_model_only, tune_on_first_use$"):
        convgen.ConvContext(policy="fastest")
    with pytest.raises(ValueError, match=r"^tune_budget: -1 is negative$"):
        convgen.ConvContext(tune_budget=-1)


def test_without_a_device_the_context_says_so():
    if has_cuda_device():
        pytest.skip("a CUDA device is present")
    with pytest.raises(convgen.NoDeviceError, match=r"^no CUDA device: "):
        convgen.ConvContext()
    assert issubclass(convgen.NoDeviceError, RuntimeError)
