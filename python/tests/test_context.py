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


def test_kernels_compile_in_the_worker_shipped_beside_the_package_unless_told_none():
    import os
    import subprocess
    import sys
    from pathlib import Path

    beside = Path(convgen.__file__).with_name("convgen-nvrtc-worker")
    if not beside.is_file():
        pytest.skip(f"no worker staged beside {convgen.__file__}")
    show = "import convgen; print(convgen.worker_compiles)"
    environment = {k: v for k, v in os.environ.items() if k != "CONVGEN_NVRTC_WORKER"}
    found = subprocess.run([sys.executable, "-c", show], env=environment, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == repr((str(beside), ""))
    environment["CONVGEN_NVRTC_WORKER"] = "none"
    none = subprocess.run([sys.executable, "-c", show], env=environment, capture_output=True, text=True, check=True)
    assert none.stdout.strip() == repr((None, ""))
    # The first answer stands for the process.
    assert convgen.compile_in_worker_processes("/elsewhere") == convgen.worker_compiles
