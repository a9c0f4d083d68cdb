#!/usr/bin/env python3
"""make_filters: writes a.npy and b.npy here, the pruned filters of the two layers of weight_twins.csv (one shape,
8 x 4 x 3 x 3, float32 KCRS): seeded normal values, the 10% largest magnitudes of each output channel kept. They are
checked in; scripts/regen-examples.sh emits generated/weight_twins_sm90 from them (`emit-lib --weights`), whose GPU
test runs each layer's filter through the library."""
from pathlib import Path

import numpy as np

here = Path(__file__).resolve().parent
for name, seed in (("a", 1), ("b", 2)):
    filter = np.random.default_rng(seed).standard_normal((8, 4, 3, 3)).astype(np.float32)
    rows = filter.reshape(8, -1)
    keep = max(1, round(rows.shape[1] * 0.1))
    for row in rows:
        row[np.argsort(-np.abs(row))[keep:]] = 0
    np.save(here / f"{name}.npy", rows.reshape(filter.shape))
