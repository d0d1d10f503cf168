import numpy as np


def reference(x):
    """Out-of-place transpose."""
    return {"y": np.ascontiguousarray(x.T).astype(np.float32)}
