import numpy as np


def reference(x, gamma, beta, eps):
    """LayerNorm over the last axis (biased variance), in float64."""
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x64 - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta.astype(np.float64)
    return {"y": y.astype(np.float32)}
