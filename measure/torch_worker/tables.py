"""The profiler's tables: operator tree, kernels, fusion pairs, live tensors, call sequence."""

from __future__ import annotations

import itertools
import json
from typing import Any

import torch

from .base import _MAYBE_VIEW_OPS, _VIEW_OPS

PROFILE_ROWS = 25  # rows kept of the operator and kernel tables


TENSOR_ROWS = 40  # rows kept of the intermediate-tensor table


SEQUENCE_MAX = 400  # top-level operators kept in call order


# Ops that move data without arithmetic: bytes, but no FLOPs.
_MOVING_OPS = frozenset(
    (
        "copy_", "clone", "_to_copy", "fill_", "zero_", "cat", "stack", "index", "index_select",
        "gather", "scatter", "scatter_", "repeat", "constant_pad_nd", "slice_scatter",
        "select_scatter", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
        "new_zeros", "new_ones", "new_full", "_unsafe_index", "index_put_", "masked_select",
    )
)  # fmt: skip


_NO_TRAFFIC_OPS = frozenset(("empty", "empty_like", "empty_strided", "new_empty", "set_"))


def _metas(value: Any) -> list[Any]:
    """The tensor metadata among a profiled op's inputs (lists of tensors flattened)."""
    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _metas(v)]
    return [value] if hasattr(value, "allocation_id") and hasattr(value, "sizes") else []


def _kind(node: Any) -> str:
    name = type(node.extra_fields).__name__
    if name.endswith("TorchOp"):
        return "op"
    if name.endswith("Allocation"):
        return "alloc"
    return "other"


def _meta_bytes(meta: Any) -> int:
    numel = 1
    for s in meta.sizes:
        numel *= int(s)
    itemsize = getattr(meta.dtype, "itemsize", None)
    if not itemsize:
        itemsize = torch.empty((), dtype=meta.dtype).element_size()
    return numel * int(itemsize)


def _node_computes(node: Any) -> bool:
    """A view op does not compute; a maybe-view op does when something below it does."""
    name = node.name
    if name in _VIEW_OPS:
        return False
    if name not in _MAYBE_VIEW_OPS:
        return True
    for c in node.children:
        kind = _kind(c)
        if kind == "alloc" and c.extra_fields.alloc_size > 0:
            return True
        if kind == "op" and c.name.startswith("aten::") and _node_computes(c):
            return True
    return False


def _short_dtype(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


STEP_RANGE = "gpuopt::step"  # the record_function range around each profiled step


def _tree_tables(prof: Any, outputs: list[torch.Tensor]) -> dict[str, Any]:
    """Top-level operators in call order, and every tensor the last profiled step allocated:
    its bytes, shape, dtype, producing op, consuming ops and time alive (memory events)."""
    every = sorted(
        prof.profiler.kineto_results.experimental_event_tree(), key=lambda n: n.start_time_ns
    )
    steps = [n for n in every if n.name == STEP_RANGE]
    roots = steps[-1:] or every
    ops: list[dict[str, Any]] = []
    tensors: dict[int, dict[str, Any]] = {}
    moves: list[tuple[int, int, int]] = []  # (time ns, bytes, allocation id): the live-bytes walk

    def visit(node: Any, top: int | None) -> None:
        kind = _kind(node)
        if kind == "op" and top is None and node.name.startswith("aten::"):
            top = len(ops)
            ops.append(
                {
                    "name": node.name,
                    "start": node.start_time_ns,
                    "end": node.end_time_ns,
                    "inputs": _metas(list(node.extra_fields.inputs)),
                    "computes": _node_computes(node),
                }
            )
        elif kind == "alloc":
            ef = node.extra_fields
            size, aid = int(ef.alloc_size), int(ef.allocation_id)
            t = int(node.start_time_ns)
            if size > 0:
                tensors[aid] = {
                    "bytes": size,
                    "t0": t,
                    "t1": None,
                    "producer": top,
                    "ptr": int(ef.ptr),
                }
                moves.append((t, size, aid))
            elif aid in tensors and tensors[aid]["t1"] is None:
                tensors[aid]["t1"] = t
                moves.append((t, size, aid))
        for child in sorted(node.children, key=lambda n: n.start_time_ns):
            visit(child, top)

    for r in roots:
        visit(r, None)
    end_ns = max([o["end"] for o in ops] + [t for t, _, _ in moves] + [0])
    computing = [i for i, o in enumerate(ops) if o["computes"]]
    next_computing = {a: b for a, b in itertools.pairwise(computing)}
    for i in computing:
        op = ops[i]
        seen: set[int] = set()
        for meta in op["inputs"]:
            aid = meta.allocation_id
            rec = tensors.get(int(aid)) if aid is not None else None
            if rec is None or aid in seen:
                continue
            seen.add(aid)
            rec.setdefault("shape", list(meta.sizes))
            rec.setdefault("dtype", _short_dtype(meta.dtype))
            rec.setdefault("view_bytes", _meta_bytes(meta))
            rec.setdefault("readers", []).append(i)
            rec.setdefault("read_bytes", []).append(_meta_bytes(meta))
        # An in-place op (name ending in "_") writes its first input again.
        if op["name"].endswith("_") and not op["name"].endswith("__") and op["inputs"]:
            first = op["inputs"][0].allocation_id
            rec = tensors.get(int(first)) if first is not None else None
            if rec is not None and rec["producer"] != i:
                rec["rewritten"] = True
    by_ptr: dict[int, torch.Tensor] = {}
    for t in outputs:
        try:
            by_ptr.setdefault(int(t.untyped_storage().data_ptr()), t)
        except Exception:  # a tensor without storage (a subclass): no shape to lend
            pass
    rows: list[dict[str, Any]] = []
    for aid, rec in tensors.items():
        p = rec["producer"]
        if rec["t1"] is None and "shape" not in rec and rec["ptr"] in by_ptr:
            out = by_ptr[rec["ptr"]]
            rec.update(shape=list(out.shape), dtype=_short_dtype(out.dtype))
        t1 = rec["t1"]
        if t1 is None:
            kind = "output"  # still alive when the step ended: an output, or kept state
        elif p is not None and t1 <= ops[p]["end"]:
            kind = "temporary"  # scratch freed inside the op that made it
        else:
            kind = "intermediate"
        readers = rec.get("readers", [])
        rows.append(
            {
                "id": aid,
                "bytes": rec["bytes"],
                "shape": rec.get("shape"),
                "dtype": rec.get("dtype"),
                "producer": ops[p]["name"] if p is not None else "(outside an operator)",
                "producer_index": p,
                "consumers": [ops[c]["name"] for c in readers],
                "consumer_indices": readers,
                "alive_us": round(((t1 if t1 is not None else end_ns) - rec["t0"]) / 1e3, 3),
                "freed": t1 is not None,
                "kind": kind,
                "rewritten": bool(rec.get("rewritten")),
                "_t0": rec["t0"],
                "_t1": t1,
                "_read_bytes": rec.get("read_bytes", []),
            }
        )
    rows.sort(key=lambda r: (-r["bytes"], r["_t0"]))
    return {
        "ops": ops,
        "computing": computing,
        "next": next_computing,
        "rows": rows,
        "moves": moves,
    }


def _live_peak(rows: list[dict[str, Any]], moves: list[tuple[int, int, int]]) -> dict[str, Any]:
    """The peak of the bytes the step itself allocated, and the tensors alive at that peak."""
    live = top = 0
    at: int | None = None
    for t, size, _aid in sorted(moves, key=lambda m: (m[0], m[1] < 0)):
        live += size
        if live > top:
            top, at = live, t
    overlap = [
        r for r in rows if at is not None and r["_t0"] <= at and (r["_t1"] is None or r["_t1"] > at)
    ]
    return {
        "bytes": top,
        "tensors": [
            {k: r[k] for k in ("id", "bytes", "shape", "dtype", "producer", "kind")}
            for r in sorted(overlap, key=lambda r: -r["bytes"])[:10]
        ],
        "tensor_count": len(overlap),
    }


def _pairs(tables: dict[str, Any]) -> list[dict[str, Any]]:
    """Full-buffer write/read pairs: an intermediate written once by one op and read once, whole,
    by the next op. Fusing the pair saves writing it and reading it back: 2 x its bytes."""
    ops, nxt = tables["ops"], tables["next"]
    out = []
    for r in tables["rows"]:
        p, readers = r["producer_index"], r["consumer_indices"]
        if r["kind"] != "intermediate" or p is None or r["rewritten"] or len(readers) != 1:
            continue
        if nxt.get(p) != readers[0] or not ops[p]["computes"]:
            continue
        size = int(r["_read_bytes"][0]) if r["_read_bytes"] else r["bytes"]
        if size < r["bytes"] // 2:  # a slice of the buffer: not a full-buffer pair
            continue
        out.append(
            {
                "producer": r["producer"],
                "consumer": r["consumers"][0],
                "bytes": size,
                "saved_bytes": 2 * size,
                "shape": r["shape"],
                "dtype": r["dtype"],
                "tensor": r["id"],
            }
        )
    out.sort(key=lambda d: -d["bytes"])
    return out


def _shared(tables: dict[str, Any]) -> list[dict[str, Any]]:
    """Intermediates several ops read (an exp read by a sum and a div): no write/read pair,
    yet one fusion of the producer with all its readers saves the write and every read."""
    ops = tables["ops"]
    out = []
    for r in tables["rows"]:
        p, readers = r["producer_index"], r["consumer_indices"]
        if r["kind"] != "intermediate" or p is None or r["rewritten"] or len(readers) < 2:
            continue
        if not ops[p]["computes"]:
            continue
        reads = [int(b) for b in r["_read_bytes"]] or [r["bytes"]] * len(readers)
        out.append(
            {
                "producer": r["producer"],
                "consumers": r["consumers"],
                "bytes": r["bytes"],
                "saved_bytes": r["bytes"] + sum(reads),  # its write and each read of it
                "shape": r["shape"],
                "dtype": r["dtype"],
                "tensor": r["id"],
            }
        )
    out.sort(key=lambda d: -d["saved_bytes"])
    return out


def _frequent_boundary(bounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The most frequent boundary worth naming: one seen more than once with bytes across
    it (a boundary nothing crosses, or seen once, says nothing about fusion); None if none."""
    return next((b for b in bounds if b["bytes"] > 0 and b["count"] > 1), None)


def _boundaries(tables: dict[str, Any]) -> list[dict[str, Any]]:
    """Each pair of consecutive computing ops, how often it occurs, and the bytes that cross it."""
    ops, computing = tables["ops"], tables["computing"]
    crossing: dict[tuple[int, int], int] = {}
    for r in tables["rows"]:
        p = r["producer_index"]
        for c in r["consumer_indices"]:
            if p is not None and tables["next"].get(p) == c:
                crossing[(p, c)] = crossing.get((p, c), 0) + r["bytes"]
    tally: dict[tuple[str, str], list[int]] = {}
    for a, b in itertools.pairwise(computing):
        entry = tally.setdefault((ops[a]["name"], ops[b]["name"]), [0, 0])
        entry[0] += 1
        entry[1] += crossing.get((a, b), 0)
    found: list[dict[str, Any]] = [
        {"from": a, "to": b, "count": n, "bytes": nb} for (a, b), (n, nb) in tally.items()
    ]
    # Boundaries with bytes across them first: those are what a fusion would save.
    found.sort(key=lambda d: (d["bytes"] == 0, -d["count"], -d["bytes"], d["from"], d["to"]))
    return found


def _device_events(events: Any) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(kernels, copies and sets) on the GPU, each as (name, microseconds), in order."""
    kernels: list[tuple[str, float]] = []
    copies: list[tuple[str, float]] = []
    for e in events:
        dt = getattr(e, "device_type", None)
        if dt is None or not str(dt).endswith("CUDA"):
            continue
        # Kineto's activity type tells kernels from copies and from the device-side
        # mirrors of record_function ranges ("gpu_user_annotation"), which are no launch.
        activity = str(getattr(e, "activity_type", "") or "")
        low = e.name.lower()
        us = float(
            getattr(e, "device_time_total", 0.0) or getattr(e, "self_device_time_total", 0.0) or 0.0
        )
        if activity in ("gpu_memcpy", "gpu_memset") or (
            not activity and low.startswith(("memcpy", "memset"))
        ):
            copies.append((e.name, us))
        elif activity in ("kernel", "concurrent_kernel", ""):
            kernels.append((e.name, us))
    return kernels, copies


def _per_step(count: int, steps: int) -> int | float:
    return count // steps if count % steps == 0 else round(count / steps, 3)


def _step_roots(prof: Any) -> list[Any]:
    every = sorted(
        prof.profiler.kineto_results.experimental_event_tree(), key=lambda n: n.start_time_ns
    )
    return [n for n in every if n.name == STEP_RANGE] or every


def _cpu_rows(prof: Any) -> list[dict[str, Any]]:
    """Per (aten op, input shapes): calls and self time in each profiled step, from the
    event tree; a row's time is its fastest step (a neighbour's load only ever adds time)."""
    per_step: list[dict[tuple[str, str], list[float]]] = []
    shapes_of: dict[tuple[str, str], list[Any]] = {}
    for root in _step_roots(prof):
        acc: dict[tuple[str, str], list[float]] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if _kind(node) != "op" or not node.name.startswith("aten::"):
                continue
            inside = sum(c.end_time_ns - c.start_time_ns for c in node.children if _kind(c) == "op")
            own = (node.end_time_ns - node.start_time_ns - inside) / 1e3
            shapes = [list(m.sizes) for m in _metas(list(node.extra_fields.inputs))]
            key = (node.name, json.dumps(shapes))
            shapes_of[key] = shapes
            entry = acc.setdefault(key, [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += own
            entry[2] += (node.end_time_ns - node.start_time_ns) / 1e3
        per_step.append(acc)
    rows = []
    for key, shapes in shapes_of.items():
        seen = [step[key] for step in per_step if key in step]
        rows.append(
            {
                "name": key[0],
                "calls": int(seen[-1][0]),
                "self_us": round(min(x[1] for x in seen), 3),
                "self_cpu_us": round(min(x[1] for x in seen), 3),
                "total_us": round(min(x[2] for x in seen), 3),
                "input_shapes": shapes,
            }
        )
    return rows


def _gpu_rows(prof: Any, steps: int) -> list[dict[str, Any]]:
    rows = []
    for e in prof.key_averages(group_by_input_shape=True):
        if not e.key.startswith("aten::"):
            continue
        self_dev = float(getattr(e, "self_device_time_total", 0.0) or 0.0)
        rows.append(
            {
                "name": e.key,
                "calls": _per_step(int(e.count), steps),
                "self_us": round(self_dev / steps, 3),
                "self_cpu_us": round(float(e.self_cpu_time_total) / steps, 3),
                "total_us": round(float(e.cpu_time_total) / steps, 3),
                "input_shapes": [
                    list(x) if isinstance(x, (list, tuple)) else x for x in (e.input_shapes or [])
                ],
            }
        )
    return rows


def _op_tables(prof: Any, device: torch.device, steps: int) -> dict[str, Any]:
    """The operator table per step (name and input shapes, self time, calls, share of the
    total) and the same per op name: self device time on a GPU (the mean of the steps), self
    CPU time on a CPU (the fastest step of each row)."""
    gpu = device.type == "cuda"
    rows = _gpu_rows(prof, steps) if gpu else _cpu_rows(prof)
    total = sum(r["self_us"] for r in rows) or 0.0
    by_name: dict[str, dict[str, Any]] = {}
    for r in rows:
        r["share"] = round(r["self_us"] / total, 4) if total else None
        agg = by_name.setdefault(r["name"], {"name": r["name"], "calls": 0, "self_us": 0.0})
        agg["calls"] += r["calls"]
        agg["self_us"] += r["self_us"]
    names = sorted(by_name.values(), key=lambda d: (-d["self_us"], d["name"]))
    for d in names:
        d["self_us"] = round(d["self_us"], 3)
        d["share"] = round(d["self_us"] / total, 4) if total else None
    rows.sort(key=lambda r: (-r["self_us"], r["name"]))
    return {
        "operators": rows[:PROFILE_ROWS],
        "operator_rows": len(rows),
        "ops_by_name": names[:PROFILE_ROWS],
        "self_total_us": round(total, 3),
        "time_basis": "self device time" if gpu else "self CPU time",
    }


def _kernel_table(kernels: list[tuple[str, float]], steps: int) -> list[dict[str, Any]]:
    tally: dict[str, list[float]] = {}
    for name, us in kernels:
        entry = tally.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += us
    total = sum(us for _, us in kernels) or 0.0
    rows: list[dict[str, Any]] = [
        {
            "name": n,
            "calls": _per_step(int(c), steps),
            "self_us": round(t / steps, 3),
            "share": round(t / total, 4) if total else None,
        }
        for n, (c, t) in tally.items()
    ]
    rows.sort(key=lambda r: (-r["self_us"], r["name"]))
    return rows[:PROFILE_ROWS]


def _numel(t: torch.Tensor) -> int:
    return int(t.numel())


def _tensor_list(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensor_list(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensor_list(v)]
    return []
