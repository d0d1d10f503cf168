"""Reference for add_rmsnorm: float32 math on upcast inputs (any torch device)."""

import torch


def reference(x, residual, w, eps):
    # The sum is rounded to bf16 once (it is stored as the new residual stream) and the norm is
    # taken of that rounded value, as vLLM's fused_add_rms_norm does.
    h = (x.float() + residual.float()).to(torch.bfloat16)
    hf = h.double()
    inv_rms = torch.rsqrt(hf.pow(2).mean(dim=-1, keepdim=True) + eps)
    y = hf * inv_rms * w.double()
    return {"y": y.to(torch.bfloat16), "residual_out": h}
