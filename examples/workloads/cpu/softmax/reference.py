import numpy as np


def reference(x):
    """Numerically stable row softmax over the last axis, in float64."""
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    return {"y": y.astype(np.float32)}
