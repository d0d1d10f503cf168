"""Reference for dot_f64acc: takes torch tensors (any device) or numpy arrays."""

import numpy as np


def reference(x, y):
    if hasattr(x, "double"):  # torch
        return {"out": (x.double() * y.double()).sum().reshape(1)}
    out = np.dot(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return {"out": np.asarray(out).reshape(1)}
