import numpy as np


def reference(x, w):
    """3x3 cross-correlation, 'same' output size, zero padding, in float64."""
    H, W = x.shape
    xp = np.zeros((H + 2, W + 2), dtype=np.float64)
    xp[1:-1, 1:-1] = x
    w64 = w.astype(np.float64)
    y = np.zeros((H, W), dtype=np.float64)
    for a in range(3):
        for b in range(3):
            y += w64[a, b] * xp[a:a + H, b:b + W]
    return {"y": y.astype(np.float32)}
