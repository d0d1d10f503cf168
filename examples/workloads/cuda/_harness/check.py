#!/usr/bin/env python3
"""Dev harness for the CUDA example workloads (stdlib + numpy + torch only).

For every workload folder beside this one and every kernel variant in it:
  * builds kernel.cu with the gate's nvcc flags (+ kernel.toml flags) into a .so (in parallel),
  * loads it with ctypes and calls the kl_launch ABI on a non-default torch stream,
  * checks the default size and every [[check_shapes]] size against reference.py
    (outputs poisoned with NaN first, inputs compared bitwise after the call, and the default
    size called a second time with fresh values written into the same buffers),
  * times it with CUDA events on that stream: warm-up, a 256 MB L2 flush before every sample,
    3 rotating input sets, median of >= 20 samples,
  * times the torch equivalent op the same way, and measures the two ceilings once
    (device-to-device copy bandwidth, torch.matmul bf16 TFLOP/s at 4096^3),
  * dumps the SASS of each expert .so and counts the instructions that prove its optimizations.

Each workload runs in its own subprocess with a time limit, so a crash or a hang in one kernel
cannot take the others down. Usage:
    python3 check.py [--only NAME ...] [--samples 20]
    compute-sanitizer --tool memcheck python3 check.py --child NAME --small   (after a full run:
        reuses the built .so files; check shapes only)
Logs and results go to $OUT (or /tmp/kl_out).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import ctypes
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # examples/workloads/cuda
OUT = Path(os.environ.get("OUT") or "/tmp/kl_out")
BUILD = Path(os.environ.get("KL_BUILD") or "/tmp/kl_build")
RESULTS = BUILD / "results"
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
        "-Xcompiler", "-fPIC", "-shared", "-Xptxas", "-v"]
DEFAULT_TOL = {"bfloat16": (1.6e-2, 1e-2), "float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5),
               "float64": (1e-7, 1e-9)}
SASS_PATTERNS = ["LDG.E.128", "LDG.E.ENL2.128", "STG.E.128", "LDG.E.CONSTANT", "HGMMA", "HMMA",
                 "UTMALDG", "SYNCS", "SHFL.BFLY", "MUFU.EX2", "MUFU.RSQ", "MUFU.RCP", "LDL", "STL"]


def log(*a):
    print(*a, flush=True)


def workloads(only):
    found = sorted((p.parent for p in ROOT.glob("*/workload.toml")),
                   key=lambda p: (p.name.startswith("gemm"), p.name))  # the riskiest last
    return [p for p in found if not only or p.name in only]


def variants(wl: Path):
    return sorted(p.parent.name for p in (wl / "kernels").glob("*/kernel.cu"))


# ---------------------------------------------------------------- build (no CUDA context needed)
def build_one(wl: Path, variant: str):
    src = wl / "kernels" / variant / "kernel.cu"
    flags = []
    ktoml = src.parent / "kernel.toml"
    if ktoml.exists():
        flags = list(tomllib.loads(ktoml.read_text()).get("flags", []))
    so = BUILD / f"{wl.name}__{variant}.so"
    t0 = time.time()
    proc = subprocess.run(NVCC + flags + [str(src), "-o", str(so)], capture_output=True, text=True)
    return wl.name, variant, proc.returncode, proc.stdout + proc.stderr, time.time() - t0


def build_all(wls):
    BUILD.mkdir(parents=True, exist_ok=True)
    jobs = [(wl, v) for wl in wls for v in variants(wl)]
    logs = {}
    with cf.ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as ex:
        for name, v, rc, text, dt in ex.map(lambda j: build_one(*j), jobs):
            logs[(name, v)] = (rc, text)
            regs = re.findall(r"Used (\d+) registers", text)
            spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
            spill = sum(int(a) + int(b) for a, b in spills)
            warn = [ln.strip() for ln in text.splitlines() if "C75" in ln or "warning" in ln.lower()]
            log(f"build {name:14s} {v:7s} rc={rc} {dt:5.1f}s regs={','.join(regs)} "
                f"spill_bytes={spill}" + (f" WARN: {warn}" if warn else ""))
            if rc != 0:
                log(text)
    with open(OUT / "ptxas.txt", "w") as f:
        for (name, v), (rc, text) in sorted(logs.items()):
            f.write(f"===== {name} {v} rc={rc}\n{text}\n")
    return logs


def sass_counts(wls):
    exe = shutil.which("cuobjdump")
    rows = {}
    with open(OUT / "sass_experts.txt", "w") as f:
        for wl in wls:
            so = BUILD / f"{wl.name}__expert.so"
            if not so.exists() or not exe:
                continue
            text = subprocess.run([exe, "--dump-sass", str(so)], capture_output=True, text=True).stdout
            f.write(f"===== {wl.name} expert\n{text}\n")
            instr = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
            rows[wl.name] = {p: sum(1 for ln in instr if re.search(rf"\b{re.escape(p)}", ln))
                             for p in SASS_PATTERNS}
    return rows


# ---------------------------------------------------------------- per-workload child (uses CUDA)
def torch_dtype(torch, name):
    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
            "float64": torch.float64, "int8": torch.int8, "int32": torch.int32,
            "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool}[name]


def dims(shape, axes):
    env = dict(axes, min=min, max=max)
    return tuple(int(d) if isinstance(d, int) else int(eval(str(d), {"__builtins__": {}}, env))
                 for d in shape)


def make_input(torch, spec, axes, gen):
    shape = dims(spec["shape"], axes)
    dt = torch_dtype(torch, spec["dtype"])
    init = spec.get("init", "normal")
    kind, *args = init.split(":")
    if kind == "normal":
        t = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
    elif kind == "uniform":
        lo, hi = (float(args[0]), float(args[1])) if args else (0.0, 1.0)
        t = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32) * (hi - lo) + lo
    elif kind == "randint":
        t = torch.randint(int(args[0]), int(args[1]), shape, generator=gen, device="cuda")
    elif kind == "bernoulli":
        t = torch.rand(shape, generator=gen, device="cuda") < 0.5
    else:
        raise ValueError(init)
    return t.to(dt).contiguous()


def load_reference(wl: Path):
    spec = importlib.util.spec_from_file_location(f"ref_{wl.name}", wl / "reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.reference


def torch_equivalent(torch, name, ins, params):
    F = torch.nn.functional
    if name == "add_rmsnorm":
        x, r, w = ins
        def f():
            h = x + r
            return F.rms_norm(h, (h.shape[-1],), w, params[0]), h
        return f
    if name == "softmax":
        return lambda: torch.softmax(ins[0], dim=-1)
    if name == "layernorm":
        x, w, b = ins
        return lambda: F.layer_norm(x, (x.shape[-1],), w, b, params[0])
    if name == "row_sum":
        return lambda: ins[0].sum(dim=-1)
    if name == "silu_and_mul":
        gu = ins[0]
        n = gu.shape[-1] // 2
        return lambda: F.silu(gu[:, :n]) * gu[:, n:]
    if name == "gemm_bf16":
        A, B = ins
        return lambda: torch.matmul(A, B.t())
    return None


def time_fn(torch, stream, fns, samples, warmup=3):
    """fns: list of zero-arg callables (one per rotating input set), each enqueuing on `stream`."""
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    with torch.cuda.stream(stream):
        for i in range(warmup):
            fns[i % len(fns)]()
        stream.synchronize()
        evs = []
        for i in range(samples):
            flush.zero_()
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record(stream)
            fns[i % len(fns)]()
            e1.record(stream)
            evs.append((e0, e1))
        stream.synchronize()
    ts = sorted(e0.elapsed_time(e1) for e0, e1 in evs)
    return {"median_ms": statistics.median(ts), "min_ms": ts[0], "max_ms": ts[-1], "n": len(ts)}


class Kernel:
    def __init__(self, so: Path):
        self.lib = ctypes.CDLL(str(so))
        self.lib.kl_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_int64),
                                       ctypes.POINTER(ctypes.c_double), ctypes.c_void_p]
        self.lib.kl_launch.restype = ctypes.c_int

    def bind(self, ins, outs, axes_vals, params_vals, stream):
        """A zero-arg callable that launches on `stream` (ctypes arrays built once)."""
        ia = (ctypes.c_void_p * max(1, len(ins)))(*[t.data_ptr() for t in ins])
        oa = (ctypes.c_void_p * max(1, len(outs)))(*[t.data_ptr() for t in outs])
        ax = (ctypes.c_int64 * max(1, len(axes_vals)))(*axes_vals)
        pa = (ctypes.c_double * max(1, len(params_vals)))(*params_vals)
        sp = ctypes.c_void_p(stream.cuda_stream)
        keep = (ia, oa, ax, pa, ins, outs)

        def call():
            _ = keep
            rc = self.lib.kl_launch(ia, oa, ax, pa, sp)
            if rc != 0:
                raise RuntimeError(f"kl_launch returned {rc}")
        return call


def compare(torch, out, ref, rtol, atol):
    o = out.double()
    r = ref.double().to(o.device)
    diff = (o - r).abs()
    ok = diff <= atol + rtol * r.abs()  # NaN compares False
    bad = int((~ok).sum().item())
    finite = torch.isfinite(o)
    max_abs = float(torch.where(finite, diff, torch.zeros_like(diff)).max().item()) if o.numel() else 0.0
    denom = float(r.norm().item()) or 1.0
    rel_l2 = float((torch.where(finite, o, torch.zeros_like(o)) - r).norm().item()) / denom
    return bad, max_abs, rel_l2, int((~finite).sum().item())


def run_child(name: str, samples: int, small: bool = False):
    """small: check shapes only, no timing (for compute-sanitizer runs)."""
    import torch

    wl = ROOT / name
    cfg = tomllib.loads((wl / "workload.toml").read_text())
    ref_fn = load_reference(wl)
    axes0 = {k: int(v) for k, v in cfg["axes"].items()}
    shapes = [axes0] + [{k: int(s[k]) for k in axes0} for s in cfg.get("check_shapes", [])]
    params = {k: float(v) for k, v in cfg.get("params", {}).items()}
    pvals = list(params.values())
    in_specs = list(cfg["inputs"].items())
    out_specs = list(cfg["outputs"].items())
    tol_cfg = cfg.get("tolerance", {})
    stream = torch.cuda.Stream()
    result = {"workload": name, "variants": {}}

    def tol_for(oname, dtype):
        rt, at = DEFAULT_TOL.get(dtype, (0.0, 0.0))
        sub = tol_cfg.get(oname, {}) if isinstance(tol_cfg.get(oname), dict) else {}
        return (float(sub.get("rtol", tol_cfg.get("rtol", rt))),
                float(sub.get("atol", tol_cfg.get("atol", at))))

    def gen_inputs(axes, seed):
        g = torch.Generator(device="cuda")
        g.manual_seed(seed)
        return [make_input(torch, spec, axes, g) for _, spec in in_specs]

    def new_outputs(axes):
        return [torch.empty(dims(spec["shape"], axes), dtype=torch_dtype(torch, spec["dtype"]),
                            device="cuda") for _, spec in out_specs]

    def poison(outs):
        for t in outs:
            if t.is_floating_point():
                t.fill_(float("nan"))
            else:
                t.fill_(-0x5A5A5A5 if t.dtype not in (torch.uint8, torch.bool) else 0xA5)

    def reference_outputs(ins, axes):
        with torch.no_grad():
            r = ref_fn(**{n: t for (n, _), t in zip(in_specs, ins)}, **params)
        return [r[n] for n, _ in out_specs]

    for variant in variants(wl):
        so = BUILD / f"{name}__{variant}.so"
        vres = {"checks": [], "correct": False}
        result["variants"][variant] = vres
        if not so.exists():
            vres["error"] = "build failed"
            continue
        k = Kernel(so)
        all_ok = True
        for si, axes in enumerate(shapes):
            if small and si == 0:
                continue
            seeds = [1000 + si, 2000 + si] if si == 0 else [1000 + si]
            ins = gen_inputs(axes, seeds[0])
            outs = new_outputs(axes)
            avals = [axes[a] for a in axes0]
            call = k.bind(ins, outs, avals, pvals, stream)
            for rep, seed in enumerate(seeds):
                if rep > 0:  # fresh values into the same buffers: pointer-keyed caching fails
                    fresh = gen_inputs(axes, seed)
                    for t, f in zip(ins, fresh):
                        t.copy_(f)
                snap = [t.clone() for t in ins]
                poison(outs)
                torch.cuda.synchronize()
                err = None
                try:
                    stream.wait_stream(torch.cuda.current_stream())
                    call()
                    stream.synchronize()
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    err = repr(e)
                entry = {"axes": axes, "seed": seed, "error": err, "outputs": {}}
                if err is None:
                    refs = reference_outputs(ins, axes)
                    entry["inputs_unchanged"] = all(torch.equal(a, b) for a, b in zip(snap, ins))
                    ok = entry["inputs_unchanged"]
                    for (oname, ospec), o, r in zip(out_specs, outs, refs):
                        rt, at = tol_for(oname, ospec["dtype"])
                        bad, max_abs, rel_l2, nonfinite = compare(torch, o, r, rt, at)
                        entry["outputs"][oname] = {"bad": bad, "max_abs": max_abs,
                                                   "rel_l2": rel_l2, "nonfinite": nonfinite}
                        ok = ok and bad == 0
                    entry["ok"] = ok
                else:
                    entry["ok"] = False
                all_ok = all_ok and entry["ok"]
                vres["checks"].append(entry)
                outs_s = " ".join(f"{n}:bad={d['bad']},max_abs={d['max_abs']:.3g},rel_l2={d['rel_l2']:.2e}"
                                  for n, d in entry["outputs"].items())
                log(f"  check {name} {variant:7s} {axes} seed={seed} ok={entry['ok']} "
                    f"inputs_unchanged={entry.get('inputs_unchanged')} {outs_s} {err or ''}")
                if err is not None:
                    break
            del ins, outs, call
            if not all_ok and err is not None and "illegal" in (err or "").lower():
                break  # context is gone
        vres["correct"] = all_ok
        if small:
            continue
        # timing at the default size, 3 rotating input sets
        try:
            sets = []
            for j in range(3):
                ins = gen_inputs(axes0, 5000 + j)
                outs = new_outputs(axes0)
                sets.append(k.bind(ins, outs, [axes0[a] for a in axes0], pvals, stream))
            torch.cuda.synchronize()
            vres["timing"] = time_fn(torch, stream, sets, samples)
            log(f"  time  {name} {variant:7s} median={vres['timing']['median_ms']:.4f} ms "
                f"(min {vres['timing']['min_ms']:.4f}, max {vres['timing']['max_ms']:.4f}, n={samples})")
            del sets
        except Exception as e:  # noqa: BLE001
            vres["timing_error"] = repr(e)
            log(f"  time  {name} {variant} FAILED {e!r}")
        torch.cuda.empty_cache()

    if small:
        return
    # torch equivalent at the default size
    try:
        fns = []
        for j in range(3):
            ins = gen_inputs(axes0, 7000 + j)
            fns.append(torch_equivalent(torch, name, ins, pvals))
        if fns[0] is not None:
            result["torch"] = time_fn(torch, stream, fns, samples)
            log(f"  time  {name} torch   median={result['torch']['median_ms']:.4f} ms")
    except Exception as e:  # noqa: BLE001
        result["torch_error"] = repr(e)
        log(f"  torch equivalent FAILED {e!r}")
    env = dict(axes0)
    cost = cfg.get("cost", {})
    result["bytes"] = float(eval(cost.get("bytes", "0"), {"__builtins__": {}}, env))
    result["flops"] = float(eval(cost.get("flops", "0"), {"__builtins__": {}}, env))
    result["axes"] = axes0
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))


def run_baselines(samples: int):
    import torch

    stream = torch.cuda.Stream()
    props = torch.cuda.get_device_properties(0)
    res = {"device": props.name, "sms": props.multi_processor_count,
           "torch": torch.__version__}
    n = 1 << 30  # 1 GiB per buffer
    src = [torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda") for _ in range(2)]
    dst = [torch.empty(n, dtype=torch.uint8, device="cuda") for _ in range(2)]
    t = time_fn(torch, stream, [lambda i=i: dst[i].copy_(src[i]) for i in range(2)], samples)
    res["copy_ms"] = t["median_ms"]
    res["copy_GBps"] = 2 * n / (t["median_ms"] * 1e-3) / 1e9
    del src, dst
    m = 4096
    mats = [(torch.randn(m, m, device="cuda").bfloat16(), torch.randn(m, m, device="cuda").bfloat16())
            for _ in range(3)]
    t = time_fn(torch, stream, [lambda a=a, b=b: torch.matmul(a, b.t()) for a, b in mats], samples)
    res["matmul_ms"] = t["median_ms"]
    res["matmul_TFLOPs"] = 2 * m**3 / (t["median_ms"] * 1e-3) / 1e12
    (RESULTS / "_baselines.json").write_text(json.dumps(res, indent=1))
    log(f"baselines: {res}")


# ---------------------------------------------------------------- parent: orchestrate + table
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--child")
    ap.add_argument("--baselines", action="store_true")
    ap.add_argument("--small", action="store_true", help="with --child: check shapes only, no timing")
    ap.add_argument("--timeout", type=float, default=150)
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if a.child:
        return run_child(a.child, a.samples, a.small)
    if a.baselines:
        return run_baselines(a.samples)

    wls = workloads(a.only)
    t0 = time.time()
    build_all(wls)
    log(f"built in {time.time() - t0:.1f}s")
    sass = sass_counts(wls)
    for name, row in sass.items():
        log(f"sass {name:14s} " + " ".join(f"{p}={c}" for p, c in row.items() if c))
    for f in RESULTS.glob("*.json"):
        f.unlink()
    me = [sys.executable, str(Path(__file__).resolve())]
    subprocess.run(me + ["--baselines", "--samples", str(a.samples)], timeout=a.timeout)
    for wl in wls:
        log(f"== {wl.name}")
        try:
            p = subprocess.run(me + ["--child", wl.name, "--samples", str(a.samples)],
                               timeout=a.timeout)
            if p.returncode != 0:
                log(f"  child for {wl.name} exited {p.returncode}")
        except subprocess.TimeoutExpired:
            log(f"  child for {wl.name} TIMED OUT after {a.timeout}s (hang?)")
    table(wls, sass)


def table(wls, sass):
    bpath = RESULTS / "_baselines.json"
    base = json.loads(bpath.read_text()) if bpath.exists() else {}
    copy = base.get("copy_GBps", float("nan"))
    mm = base.get("matmul_TFLOPs", float("nan"))
    lines = [f"device={base.get('device')} torch={base.get('torch')} copy_bw={copy:.0f} GB/s "
             f"(1 GiB D2D, read+write) torch.matmul bf16 4096^3={mm:.1f} TFLOP/s",
             f"{'workload':14s} {'variant':7s} {'correct':7s} {'ms':>9s} {'GB/s':>7s} {'TFLOP/s':>8s} "
             f"{'%ceiling':>9s} {'speedup':>8s} {'vs torch':>8s}"]
    allres = {"baselines": base, "workloads": {}, "sass": sass}
    for wl in wls:
        p = RESULTS / f"{wl.name}.json"
        if not p.exists():
            lines.append(f"{wl.name:14s} (no result)")
            continue
        r = json.loads(p.read_text())
        allres["workloads"][wl.name] = r
        gemm = r["flops"] / max(r["bytes"], 1) > 100
        naive_ms = r["variants"].get("naive", {}).get("timing", {}).get("median_ms")
        torch_ms = r.get("torch", {}).get("median_ms")
        rows = list(r["variants"].items()) + ([("torch", {"timing": r["torch"], "correct": "-"})]
                                              if "torch" in r else [])
        for v, vr in rows:
            t = vr.get("timing", {}).get("median_ms")
            if t is None:
                lines.append(f"{wl.name:14s} {v:7s} {vr.get('correct')!s:7s} (no timing) "
                             f"{vr.get('error', '') or vr.get('timing_error', '')}")
                continue
            gbs = r["bytes"] / (t * 1e-3) / 1e9
            tfl = r["flops"] / (t * 1e-3) / 1e12
            pct = 100 * tfl / mm if gemm else 100 * gbs / copy
            sp = f"{naive_ms / t:8.1f}x" if naive_ms and v != "naive" else f"{'':9s}"
            vt = f"{torch_ms / t:7.2f}x" if torch_ms and v != "torch" else ""
            lines.append(f"{wl.name:14s} {v:7s} {vr.get('correct')!s:7s} {t:9.4f} {gbs:7.0f} "
                         f"{tfl:8.2f} {pct:8.1f}% {sp} {vt}")
    lines.append("%ceiling: memory-bound = GB/s over copy_bw; gemm = TFLOP/s over torch.matmul. "
                 "speedup = naive ms / this ms; vs torch = torch ms / this ms (>1: faster than torch)")
    text = "\n".join(lines)
    log("\n" + text)
    (OUT / "results.json").write_text(json.dumps(allres, indent=1))
    (OUT / "table.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
