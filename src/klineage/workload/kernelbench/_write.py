"""Writing an imported problem as a workload folder (workload.toml, reference.py, README.md and
the problem file, copied unedited), from the probe's survey."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

from klineage.workload._importing import TOLERANCES, bytes_expression
from klineage.workload.kernelbench._reference import reference_source

__all__ = ["TOLERANCES", "workload_files"]

def workload_files(folder: Path, problem: Path, survey: dict[str, Any]) -> None:
    """Write the workload for ``problem`` into ``folder`` (which must not exist)."""
    folder.mkdir(parents=True)
    shutil.copyfile(problem, folder / problem.name)
    tensors = _tensors(survey)
    (folder / "workload.toml").write_text(_toml(folder.name, problem, survey, tensors))
    sha256 = hashlib.sha256(problem.read_bytes()).hexdigest()
    names = survey["names"]
    used = {names["weights"][k]: k for k in survey["used_weights"]}
    (folder / "reference.py").write_text(reference_source(
        problem.name, sha256, names["inputs"], used, _locators(survey, tensors),
        {p["name"]: (p["index"], p["item"], p["type"]) for p in survey["params"]}, names["outputs"]))
    (folder / "README.md").write_text(_readme(problem, survey, tensors))


def _tensors(survey: dict[str, Any]) -> dict[str, list[tuple[str, str, list, str]]]:
    """inputs (the forward's, then the weights it reads) and outputs: (name, key, shape, dtype)."""
    names, shapes, dtypes = survey["names"], survey["shapes"], survey["dtypes"]
    inputs = [(n, f"in:{i}", shapes[f"in:{i}"], dtypes[f"in:{i}"]) for i, n in enumerate(names["inputs"])]
    inputs += [(names["weights"][k], f"w:{k}", shapes[f"w:{k}"], dtypes[f"w:{k}"])
               for k in survey["used_weights"]]
    outputs = [(n, f"out:{i}", shapes[f"out:{i}"], dtypes[f"out:{i}"])
               for i, n in enumerate(names["outputs"])]
    return {"inputs": inputs, "outputs": outputs}


def _locators(survey: dict[str, Any], tensors: dict) -> dict[str, tuple[str, int]]:
    """Where the reference reads each axis: the first input dimension that is the axis itself."""
    found = {}
    for axis in survey["axes"]:
        found[axis] = next((name, shape.index(axis)) for name, _, shape, _ in tensors["inputs"]
                           if axis in shape)
    return found


def _value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str | list | bool) else repr(value)


def _table(header: str, rows: dict[str, Any]) -> list[str]:
    return ["", header, *(f"{k} = {_value(v)}" for k, v in rows.items())]


def _toml(name: str, problem: Path, survey: dict[str, Any], tensors: dict) -> str:
    described = f": {survey['doc']}" if survey["doc"] else ""
    bench = survey["constants"]
    lines = [f"name = {_value(name)}", f"op = {_value(_op(problem))}",
             f"description = {_value(f'KernelBench problem {problem.name}{described}')}",
             'tags = ["kernelbench"]', 'framework = "torch"']
    lines += _table("[axes]", {a: bench[a] for a in survey["axes"]})
    lines += _table("[quick_axes]  # " + survey["quick_note"], survey["quick_axes"])
    for shape in survey["check_shapes"]:
        lines += _table("[[check_shapes]]", shape)
    if survey["params"]:
        lines += _table("[params]", {p["name"]: float(p["value"]) for p in survey["params"]})
    inits = survey["inits"]
    for tensor, _, shape, dtype in tensors["inputs"]:
        lines += _table(f"[inputs.{tensor}]  # {inits[tensor][1]}",
                        {"shape": shape, "dtype": dtype, "init": inits[tensor][0]})
    for tensor, _, shape, dtype in tensors["outputs"]:
        lines += _table(f"[outputs.{tensor}]", {"shape": shape, "dtype": dtype})
    for tensor, _, _, dtype in tensors["outputs"]:
        if dtype in TOLERANCES:
            rtol, atol = TOLERANCES[dtype]
            lines += _table(f"[tolerance.{tensor}]  # {dtype}", {"rtol": rtol, "atol": atol})
    lines += _table("[cost]  # bytes: every input, weight and output once; flops not stated",
                    {"bytes": _bytes(tensors)})
    return "\n".join(lines) + "\n"


def _op(problem: Path) -> str:
    """The op family: the file name without KernelBench's leading number, lower case."""
    return re.sub(r"^[\d_]+", "", re.sub(r"\W+", "_", problem.stem)).strip("_").lower() or "kernelbench"


def _bytes(tensors: dict) -> str:
    every = [*tensors["inputs"], *tensors["outputs"]]
    return bytes_expression((shape, dtype) for _, _, shape, dtype in every)


def _readme(problem: Path, survey: dict[str, Any], tensors: dict) -> str:
    fixed = ", ".join(f"{k} = {v}" + (" (the Model ran at no other value)" if k in survey["stuck"]
                                        else "") for k, v in survey["fixed"].items()) or "none"
    params = ", ".join(f"{p['name']} = {p['value']} (init input {p['index']}"
                       + (f", item {p['item']})" if p["item"] is not None else ")")
                       for p in survey["params"]) or "none"
    weights = [f"  - `{n}` ← state-dict `{k[2:]}`, shape {s}, init `{survey['inits'][n][0]}` "
               f"({survey['inits'][n][1]})" for n, k, s, _ in tensors["inputs"] if k.startswith("w:")]
    unused = [k for k in survey["names"]["weights"] if k not in survey["used_weights"]]
    if survey["check_shapes"]:
        checks = f"{len(survey['check_shapes'])} check shapes where the module runs."
    else:
        checks = ("**No check shapes**: the module ran at no other size, so correctness is checked "
                  "at the benchmark sizes only.")
    tried = [f"  - not kept: {n}" for n in survey["check_notes"]]
    return "\n".join([
        f"# {problem.name} (imported from KernelBench format)", "",
        f"Generated by `klineage import kernelbench {problem.name}`. `{problem.name}` is the original "
        "problem file, unedited; `reference.py` runs its `Model` in torch (docs/workloads.md, "
        "\"Imported workloads\").", "",
        f"- axes (the int constants that drive a tensor dimension): {', '.join(survey['axes'])}",
        f"- constants kept at their file values (no input dimension follows them): {fixed}",
        f"- params (init inputs no axis drives): {params}",
        f"- weights the forward reads, passed after the forward's inputs:{' none' if not weights else ''}",
        *weights,
        f"- state-dict entries the forward does not read (left at their defaults): "
        f"{', '.join(unused) or 'none'}",
        f"- quick sizes: {survey['quick_note']}",
        f"- {checks}", *tried, "",
    ])
