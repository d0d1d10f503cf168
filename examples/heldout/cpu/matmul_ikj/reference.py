import numpy as np


def reference(A, B):
    """Plain matrix product in float64, rounded to float32."""
    return {"C": (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)}
