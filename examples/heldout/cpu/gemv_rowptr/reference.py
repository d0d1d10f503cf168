import numpy as np


def reference(A, x):
    """y = A @ x accumulated in float64."""
    return {"y": A.astype(np.float64) @ x.astype(np.float64)}
