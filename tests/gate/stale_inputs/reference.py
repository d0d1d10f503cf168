import numpy as np


def reference(x):
    wide = x.astype(np.float64)
    return {"y": sum(np.sin(k * wide) / k for k in range(1, 49)).astype(np.float32)}
