"""Reference for silu_and_mul: float64 math on upcast inputs (any torch device)."""

import torch


def reference(gate_up):
    n = gate_up.shape[-1] // 2
    g = gate_up[..., :n].double()
    u = gate_up[..., n:].double()
    return {"y": (torch.nn.functional.silu(g) * u).to(torch.bfloat16)}
