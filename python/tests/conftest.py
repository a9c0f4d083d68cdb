"""pytest configuration: the `gpu` marker for tests that need a CUDA device (they skip where there is none)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (and PyTorch where it says so); skips elsewhere")
