"""The README's Python example is examples/python/resnet50.py as it is, and it runs (on a GPU with torchvision)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "python" / "resnet50.py"


def test_the_readme_shows_the_example_file_as_it_is():
    assert EXAMPLE.read_text().strip() in (ROOT / "README.md").read_text()


@pytest.mark.gpu
def test_the_readme_example_runs():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    env = dict(os.environ, CONVGEN_EXAMPLE_BATCH="1")
    result = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # PyTorch computes its convolutions in TF32 by default and convgen follows it (tf32 problems), so the bound is
    # TF32's after ResNet-50's 53 convolutions, FP32's where TF32 is off; a wrong kernel is off by about 1.
    found = re.search(r"max \|convgen - pytorch\| = \S+, relative L2 error (\S+)\n", result.stdout)
    assert found, result.stdout
    assert float(found.group(1)) < (1e-2 if torch.backends.cudnn.allow_tf32 else 1e-4), result.stdout
