import numpy as np


def reference(x, c, n, s, w, e):
    """5-point stencil with zero padding, in float64."""
    H, W = x.shape
    p = np.zeros((H + 2, W + 2), dtype=np.float64)
    p[1:-1, 1:-1] = x
    y = (c * p[1:-1, 1:-1] + n * p[:-2, 1:-1] + s * p[2:, 1:-1]
         + w * p[1:-1, :-2] + e * p[1:-1, 2:])
    return {"y": y.astype(np.float32)}
