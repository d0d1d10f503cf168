import numpy as np


def reference(x):
    """Inclusive prefix sum along each row, in float64."""
    return {"y": np.cumsum(x.astype(np.float64), axis=1).astype(np.float32)}
