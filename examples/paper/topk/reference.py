"""Reference for topk: torch.topk on the float32 rows (any torch device). The gate compares the
values as a multiset per row and checks the indices by rule (workload.toml), so neither the
order nor the choice among tied positions is part of the contract."""

import torch


def reference(values, K):
    top = torch.topk(values, K, dim=-1, largest=True, sorted=True)
    return {"top_values": top.values, "top_indices": top.indices.to(torch.int64)}
