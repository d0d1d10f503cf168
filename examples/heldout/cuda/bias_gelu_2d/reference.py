"""Reference for bias_gelu_2d: float64 math; takes torch tensors (any device) or numpy arrays."""

import math

import numpy as np


def _f64(t):
    return t.double() if hasattr(t, "double") else np.asarray(t, dtype=np.float64)


def _tanh(t):
    return t.tanh() if hasattr(t, "tanh") else np.tanh(t)


def reference(x, bias):
    v = _f64(x) + _f64(bias)
    u = math.sqrt(2.0 / math.pi) * (v + 0.044715 * v * v * v)
    return {"y": 0.5 * v * (1.0 + _tanh(u))}
