"""Comparing saved outputs with the reference's: error statistics in chunks, at the
reference dtype's tolerance."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import torch

from .base import _INT_OF, _TOLERANCES, CHUNK, _num, meta_problems

ULP_SAMPLE = 1 << 16  # ULP values kept per output and trial for the quantiles


INDEX = "index.json"


def _flat_chunks(a: torch.Tensor, b: torch.Tensor) -> Any:
    fa, fb = a.reshape(-1), b.reshape(-1)
    for lo in range(0, fa.numel(), CHUNK):
        yield lo, fa[lo : lo + CHUNK], fb[lo : lo + CHUNK]


def bit_diffs(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many elements differ bit for bit (every element when the shapes differ)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return max(a.numel(), b.numel(), 1)
    width = _INT_OF.get(a.element_size() * 8) if a.dtype.is_floating_point else None
    n = 0
    for _lo, x, y in _flat_chunks(a, b):
        if width is not None:
            n += int((x.contiguous().view(width) != y.contiguous().view(width)).sum())
        else:
            n += int((x != y).sum())
    return n


def read_index(path: str) -> dict[str, Any]:
    with open(os.path.join(path, INDEX)) as f:
        return dict(json.load(f))


def load_trial(path: str, entry: dict[str, Any]) -> dict[str, torch.Tensor]:
    """One trial's saved tensors, memory-mapped: pages are read as the comparison reaches them."""
    return dict(torch.load(os.path.join(path, entry["file"]), mmap=True, weights_only=True))


REFILL = "refill"  # the same input objects, new contents written into them


def _largest_at_most(x: float, dtype: torch.dtype) -> torch.Tensor:
    """The largest value of `dtype` not above `x`: for any v of that dtype, v > x exactly
    when v > it (x rounded to nearest could land above x, or below and let v == x pass)."""
    t = torch.tensor(x, dtype=torch.float64).to(dtype)
    if float(t) > x:
        t = torch.nextafter(t, torch.tensor(-math.inf, dtype=dtype))
    return t


def _finfo_tiny(dtype: torch.dtype) -> float:
    try:
        return float(torch.finfo(dtype).tiny)
    except TypeError:
        return 0.0


def _precision_rank(dtype: torch.dtype) -> float:
    """Smaller is coarser: the dtype's machine epsilon inverted (integers are exact)."""
    try:
        return 1.0 / float(torch.finfo(dtype).eps)
    except TypeError:
        return math.inf


def tolerance(
    ref: torch.dtype,
    new: torch.dtype,
    exact: bool,
    declared: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """The reference dtype's tolerance, never the candidate's (a float16 output does not
    earn float16's looser one); a tolerance the contract declared replaces it."""
    if exact:
        return 0.0, 0.0
    if declared is not None:
        return float(declared[0]), float(declared[1])
    return _TOLERANCES.get(str(ref).removeprefix("torch."), (0.0, 0.0))


def _ordered_ints(x: torch.Tensor) -> torch.Tensor:
    """Floats mapped to integers that count representable values (monotonic in x)."""
    bits = x.element_size() * 8
    i = x.contiguous().view(_INT_OF[bits]).to(torch.int64)
    if bits == 64:
        top = torch.iinfo(torch.int64).min
        return torch.where(i < 0, top - i, i)
    return torch.where(i < 0, -(i & ((1 << (bits - 1)) - 1)), i)


def _ulps(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """ULP distance between finite a and b, both expressed in `dtype` (float64 result)."""
    if not dtype.is_floating_point or dtype.is_complex:
        return (a.to(torch.float64) - b.to(torch.float64)).abs()
    oa, ob = _ordered_ints(a.to(dtype)), _ordered_ints(b.to(dtype))
    if dtype.itemsize < 8:
        return (oa - ob).abs().to(torch.float64)
    same = (oa >= 0) == (ob >= 0)
    exact = (oa - ob).abs().to(torch.float64)  # cannot overflow when the signs agree
    rough = (oa.to(torch.float64) - ob.to(torch.float64)).abs()
    return torch.where(same, exact, rough)


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bit_diffs(a, b) == 0


def _quantile(sorted_values: torch.Tensor, q: float) -> float:
    n = sorted_values.numel()
    if n == 0:
        return 0.0
    k = min(n - 1, max(0, math.ceil(q * n) - 1))
    return float(sorted_values[k])


class OutputStats:
    """Error statistics of one output, accumulated trial by trial and chunk by chunk: only
    the chunk being compared is ever in float64 (see docs/torch_workloads.md)."""

    def __init__(self, name: str, exact: bool, declared: tuple[float, float] | None = None):
        self.exact = exact
        self.declared = declared
        self.s: dict[str, Any] = {
            "output": name,
            "shape_equal": True,
            "dtype_equal": True,
            "bit_identical": True,
            "mismatches": 0,
            "mismatch_share": 0.0,
            "nan_ref": 0,
            "nan_new": 0,
            "inf_ref": 0,
            "inf_new": 0,
            "nonfinite_positions_match": True,
            "signed_zero_diffs": 0,
            "near_zero_diffs": 0,
            "worst_index": [],
        }
        self.total = 0
        self.abs_sum, self.abs_n = 0.0, 0
        self.max_abs: float | None = None
        self.max_rel: float | None = None
        self.ulp_max: float | None = None
        self.ulps: list[torch.Tensor] = []
        self.ulp_counted = 0
        self.closeness = 0.0
        self.worst_score = -math.inf
        self.worst: tuple[int, list[int], float, float] | None = None
        self.nonfinite_worst: tuple[int, list[int], float, float] | None = None
        self.seeds: list[int] = []
        self.gen = torch.Generator().manual_seed(0)

    def add(self, trial: int, seed: int, r: torch.Tensor, n: torch.Tensor) -> None:
        s = self.s
        self.seeds.append(seed)
        if "ref_shape" not in s:
            s.update(
                ref_shape=list(r.shape),
                new_shape=list(n.shape),
                ref_dtype=str(r.dtype).removeprefix("torch."),
                new_dtype=str(n.dtype).removeprefix("torch."),
            )
            rtol, atol = tolerance(r.dtype, n.dtype, self.exact, self.declared)
            s["rtol"], s["atol"] = rtol, atol
            if self.declared is not None:
                s["declared_tolerance"] = True
        if r.shape != n.shape:
            s["shape_equal"] = False
            s["bit_identical"] = False
            s["new_shape"] = list(n.shape)
            self.total += max(int(r.numel()), int(n.numel()), 1)
            s["mismatches"] += max(int(r.numel()), int(n.numel()), 1)
            return
        if r.dtype != n.dtype:
            s["dtype_equal"] = False
            s["bit_identical"] = False
            # Only a tolerance declared in the contract allows a precision change.
            s["dtype_refused"] = self.declared is None
        rtol, atol = s["rtol"], s["atol"]
        coarse = r.dtype if _precision_rank(r.dtype) <= _precision_rank(n.dtype) else n.dtype
        floor = max(atol, _finfo_tiny(coarse) if coarse.is_floating_point else 0.0)
        complex_ = r.is_complex() or n.is_complex()
        shape = list(r.shape)
        self.total += r.numel()
        rate = min(1.0, ULP_SAMPLE / max(1, r.numel()))
        for lo, rc, nc in _flat_chunks(r, n):
            same = rc.dtype == nc.dtype and bit_diffs(rc, nc) == 0
            s["bit_identical"] = s["bit_identical"] and same
            if same and not complex_:
                self._identical(rc, floor, rate)
                continue
            if complex_:
                rd = torch.view_as_real(rc.to(torch.complex128)).reshape(-1)
                nd = torch.view_as_real(nc.to(torch.complex128)).reshape(-1)
                step_of = 2
            else:
                rd, nd = rc.to(torch.float64), nc.to(torch.float64)
                step_of = 1
            rnan, nnan = rd.isnan(), nd.isnan()
            s["nan_ref"] += int(rnan.sum())
            s["nan_new"] += int(nnan.sum())
            s["inf_ref"] += int(rd.isinf().sum())
            s["inf_new"] += int(nd.isinf().sum())
            same_nf = (
                (rnan == nnan) & (rd.isposinf() == nd.isposinf()) & (rd.isneginf() == nd.isneginf())
            )
            bad_nf = ~same_nf
            if bool(bad_nf.any()):
                s["nonfinite_positions_match"] = False
            finite = rd.isfinite() & nd.isfinite()
            zero = (rd == 0) & (nd == 0) & finite
            sz = zero & (rd.signbit() != nd.signbit())
            s["signed_zero_diffs"] += int(sz.sum())
            diff = torch.where(finite, (rd - nd).abs(), torch.zeros_like(rd))
            allowed = atol + rtol * rd.abs()
            over = finite & (diff > allowed)
            if self.exact:
                over = over | sz
            s["mismatches"] += int((over | bad_nf).sum())
            if bool(finite.any()):
                fd = diff[finite]
                self.abs_sum += float(fd.sum())
                self.abs_n += int(fd.numel())
                m = float(fd.max())
                self.max_abs = m if self.max_abs is None else max(self.max_abs, m)
                # Relative error and ULPs only where |ref| is above atol: near zero both
                # explode without meaning anything; those differences are counted apart.
                big = finite & (rd.abs() > floor)
                s["near_zero_diffs"] += int((finite & ~big & (diff > 0)).sum())
                if bool(big.any()):
                    rel = float((diff[big] / rd.abs()[big]).max())
                    self.max_rel = rel if self.max_rel is None else max(self.max_rel, rel)
                    if not complex_:
                        u = _ulps(rc[big], nc[big], coarse)
                        um = float(u.max())
                        self.ulp_max = um if self.ulp_max is None else max(self.ulp_max, um)
                        self.ulp_counted += int(u.numel())
                        if rate < 1.0:
                            k = max(1, math.ceil(u.numel() * rate))
                            pick = torch.randint(0, u.numel(), (k,), generator=self.gen)
                            u = u[pick]
                        self.ulps.append(u)
                ratio = diff / allowed.clamp_min(1e-300) if (atol or rtol) else diff
                score = torch.where(finite, ratio, torch.full_like(diff, -math.inf))
                at = int(score.argmax())
                best = float(score[at])
                if atol or rtol:
                    self.closeness = max(self.closeness, best)
                if best > self.worst_score:
                    self.worst_score = best
                    self.worst = (
                        trial,
                        _unravel(lo + at // step_of, shape),
                        float(rd[at]),
                        float(nd[at]),
                    )
            if self.nonfinite_worst is None and bool(bad_nf.any()):
                at = int(bad_nf.nonzero()[0, 0])
                self.nonfinite_worst = (
                    trial,
                    _unravel(lo + at // step_of, shape),
                    float(rd[at]),
                    float(nd[at]),
                )

    def _identical(self, rc: torch.Tensor, floor: float, rate: float) -> None:
        """A chunk that is bit-identical: no error anywhere, only the special values to count
        (the common case of a C1 change, at a few operations per element instead of forty)."""
        s = self.s
        # Counted in the chunk's own dtype when it is a float: NaN, Inf and |x| are exact in
        # it, and the floor becomes the largest value of that dtype not above it, so each
        # count is the float64 one without a float64 copy (most of a large output's cost).
        if rc.is_floating_point() and rc.element_size() > 1:  # float8: torch has no
            rd, limit = rc, _largest_at_most(floor, rc.dtype)  # isfinite or > for it
        else:
            rd, limit = rc.to(torch.float64), torch.tensor(floor, dtype=torch.float64)
        # A finite sum has no NaN or Inf among its terms (isfinite() is the slow pass);
        # a sum that overflowed counts them one by one, as any other does.
        if math.isfinite(float(rd.sum())):
            nan = inf = 0
        else:
            nan, inf = int(rd.isnan().sum()), int(rd.isinf().sum())
        s["nan_ref"] += nan
        s["nan_new"] += nan
        s["inf_ref"] += inf
        s["inf_new"] += inf
        n_finite = rd.numel() - nan - inf
        if n_finite:
            self.abs_n += n_finite
            self.max_abs = self.max_abs or 0.0
            n_big = int(torch.count_nonzero(rd.abs() > limit)) - inf
            if n_big > 0:
                self.max_rel = self.max_rel or 0.0
                self.ulp_max = self.ulp_max or 0.0
                self.ulp_counted += n_big
                k = n_big if rate >= 1.0 else max(1, math.ceil(n_big * rate))
                self.ulps.append(torch.zeros(k, dtype=torch.float64))
            if self.worst is None:
                self.worst_score = 0.0
                self.worst = (max(0, len(self.seeds) - 1), [], 0.0, 0.0)

    def finish(self) -> dict[str, Any]:
        s = dict(self.s)
        s.setdefault("ref_shape", [])
        s.setdefault("new_shape", [])
        s.setdefault("ref_dtype", "")
        s.setdefault("new_dtype", "")
        if not s["shape_equal"]:
            s.update(mismatch_share=1.0, passed=False, bit_identical=False)
            return s
        chosen = self.nonfinite_worst or self.worst
        if chosen is not None:
            s["worst_trial"], s["worst_index"], s["worst_ref"], s["worst_new"] = chosen
            s["worst_seed"] = self.seeds[chosen[0]] if chosen[0] < len(self.seeds) else None
        s["max_abs"] = self.max_abs
        s["mean_abs"] = self.abs_sum / self.abs_n if self.abs_n else None
        s["max_rel"] = self.max_rel
        s["closeness"] = self.closeness
        s["ulp_max"] = s["ulp_p50"] = s["ulp_p99"] = None
        if self.ulps:
            kept = torch.cat(self.ulps).sort().values
            s["ulp_max"] = self.ulp_max
            s["ulp_p50"] = _quantile(kept, 0.5)
            s["ulp_p99"] = _quantile(kept, 0.99)
            s["ulp_sampled"] = int(kept.numel()) < self.ulp_counted
        s["mismatch_share"] = s["mismatches"] / self.total if self.total else 0.0
        s["passed"] = s["bit_identical"] if self.exact else s["mismatches"] == 0
        if s.get("dtype_refused"):
            s["passed"] = False
        for key in ("worst_ref", "worst_new", "max_abs", "max_rel", "mean_abs", "ulp_max"):
            v = s.get(key)
            if isinstance(v, float) and not math.isfinite(v):
                s[key] = None if math.isnan(v) else (1e308 if v > 0 else -1e308)
        return s


def compare_one(
    name: str, refs: list[torch.Tensor], news: list[torch.Tensor], seeds: list[int], exact: bool
) -> dict[str, Any]:
    """Error statistics of one output over all trials (see docs/torch_workloads.md)."""
    acc = OutputStats(name, exact)
    for trial, (r, n) in enumerate(zip(refs, news, strict=True)):
        acc.add(trial, seeds[trial] if trial < len(seeds) else trial, r, n)
    return acc.finish()


def _unravel(flat: int, shape: list[int]) -> list[int]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim if dim else 0)
        flat = flat // dim if dim else 0
    return list(reversed(idx))


def _none_stats(name: str, side: str) -> dict[str, Any]:
    return {
        "output": name,
        "shape_equal": True,
        "dtype_equal": True,
        "passed": False,
        "mismatches": 1,
        "mismatch_share": 1.0,
        "none_on": side,
    }


class Comparer:
    """Both sides' trials, one pair at a time: main trials, then each stress trial apart."""

    def __init__(self, exact: bool, declared: tuple[float, float] | None = None):
        self.exact = exact
        self.declared = declared
        self.meta_problems: list[str] = []
        self.main: dict[str, OutputStats] = {}
        self.stress: dict[str, dict[str, OutputStats]] = {}
        self.problems: list[str] = []
        self.seeds: list[int] = []
        self.new_seeds: list[int] = []
        self.pairs: list[tuple[str, str]] | None = None
        self.missing: list[str] = []
        self.none_on: dict[str, str] = {}
        self.digests_differ: list[int] = []

    def _pair(self, ref: dict[str, Any], new: dict[str, Any], re: dict, ne: dict) -> None:
        ref_names, new_names = list(ref), list(new)
        pairs = [(n, n) for n in ref_names if n in new_names]
        missing = [n for n in ref_names if n not in new_names]
        extra = [n for n in new_names if n not in ref_names]
        new_none, ref_none = set(ne.get("none_grads") or []), set(re.get("none_grads") or [])
        for n in [x for x in missing if x in new_none]:
            self.none_on[n] = "variant"
            missing.remove(n)
        for n in [x for x in extra if x in ref_none]:
            self.none_on[n] = "baseline"
            extra.remove(n)
        ref_grads = [n for n in missing if n.startswith("grad:param:")]
        new_grads = [n for n in extra if n.startswith("grad:param:")]
        if ref_grads and len(ref_grads) == len(new_grads):
            # A rewritten module may name its parameters differently: pair them in order.
            pairs += list(zip(ref_grads, new_grads, strict=True))
            missing = [n for n in missing if n not in ref_grads]
            extra = [n for n in extra if n not in new_grads]
        for n in missing:
            self.problems.append(f"output {n} missing on the variant side")
        for n in extra:
            self.problems.append(f"output {n} only on the variant side")
        for n, side in self.none_on.items():
            self.problems.append(
                f"gradient {n.removeprefix('grad:')} is None on the {side} side "
                "(that side's call does not use it)"
            )
        self.pairs, self.missing = pairs, missing

    def add(
        self,
        ref_entry: dict[str, Any],
        ref: dict[str, torch.Tensor],
        new_entry: dict[str, Any],
        new: dict[str, torch.Tensor],
    ) -> None:
        kind = ref_entry.get("kind", "random")
        if kind != new_entry.get("kind", "random") or ref_entry["seed"] != new_entry["seed"]:
            self.problems.append("the two sides ran different trials")
        rd, nd = ref_entry.get("inputs_digest"), new_entry.get("inputs_digest")
        if rd and nd and rd != nd:
            self.digests_differ.append(int(ref_entry["seed"]))
        if kind == "random":
            self.seeds.append(int(ref_entry["seed"]))
            self.new_seeds.append(int(new_entry["seed"]))
        if self.pairs is None:
            self._pair(ref, new, ref_entry, new_entry)
        target = self.main if kind == "random" else self.stress.setdefault(kind, {})
        trial = len(self.seeds) - 1 if kind == "random" else 0
        for rn, nn in self.pairs or []:
            if rn not in ref or nn not in new:
                self.problems.append(f"output {rn} is not in every trial")
                continue
            label = rn if rn == nn else f"{rn} ~ {nn}"
            rm, nm = (ref_entry.get("meta") or {}).get(rn), (new_entry.get("meta") or {}).get(nn)
            if rm and nm:
                for p in meta_problems(label, rm, nm, self.declared is not None):
                    if p not in self.meta_problems:
                        self.meta_problems.append(p)
            acc = target.get(label)
            if acc is None:
                acc = target[label] = OutputStats(label, self.exact, self.declared)
            acc.add(trial, int(ref_entry["seed"]), ref[rn], new[nn])

    def result(self, ref_index: dict[str, Any], new_index: dict[str, Any]) -> dict[str, Any]:
        stats = [a.finish() for a in self.main.values()]
        for n in self.missing:
            stats.append(
                {
                    "output": n,
                    "shape_equal": False,
                    "passed": False,
                    "mismatches": 1,
                    "mismatch_share": 1.0,
                    "new_shape": [],
                    "ref_shape": [],
                }
            )
        stats += [_none_stats(n, side) for n, side in self.none_on.items()]
        stress = []
        for kind, accs in self.stress.items():
            done = [a.finish() for a in accs.values()]
            stress.append(
                {
                    "kind": kind,
                    "passed": all(d.get("passed") for d in done),
                    "failed_outputs": [d["output"] for d in done if not d.get("passed")],
                    "mismatches": sum(int(d.get("mismatches") or 0) for d in done),
                    "nonfinite_positions_match": all(
                        d.get("nonfinite_positions_match", True) for d in done
                    ),
                    "nan_ref": sum(int(d.get("nan_ref") or 0) for d in done),
                    "nan_new": sum(int(d.get("nan_new") or 0) for d in done),
                    "inf_ref": sum(int(d.get("inf_ref") or 0) for d in done),
                    "inf_new": sum(int(d.get("inf_new") or 0) for d in done),
                    "max_abs": max((d.get("max_abs") or 0.0 for d in done), default=None),
                }
            )
        refill = next((x for x in stress if x["kind"] == REFILL), None)
        stress = [x for x in stress if x["kind"] != REFILL]
        if refill is not None and not refill["passed"]:
            self.problems.append(
                f"same input objects, new contents: the output did not follow the new values "
                f"({refill['mismatches']} mismatches, max abs {_num(refill['max_abs'])}): a "
                "result cached by input object or pointer"
            )
        ref_rep = dict(ref_index.get("repeat_diffs") or {})
        new_rep = dict(new_index.get("repeat_diffs") or {})
        # The variant changing between two calls on the same input, where the reference does
        # not, is a semantic change (determinism), kept apart from error against the reference.
        nondet = sorted(n for n in new_rep if not ref_rep.get(n))
        problems = list(self.problems) + self.meta_problems
        if self.digests_differ:
            problems.append(
                "the variant builds other inputs than the baseline for seeds "
                + ", ".join(str(s) for s in self.digests_differ)
            )
        for n in nondet:
            problems.append(
                f"{n}: the variant is nondeterministic: two calls on the same input differ "
                f"in {new_rep[n]} element(s); the baseline's do not"
            )
        passed = (
            bool(stats)
            and not self.missing
            and all(st.get("passed") for st in stats)
            and all(x["passed"] for x in stress)
            and (refill is None or refill["passed"])
            and not nondet
            and not self.digests_differ
            and not self.meta_problems
            and self.seeds == self.new_seeds
        )
        if self.seeds != self.new_seeds:
            problems.append("the two sides ran different seeds")
        return {
            "passed": passed,
            "exact": self.exact,
            "seeds": self.seeds,
            "stats": stats,
            "stress": stress,
            "refill": refill,
            "nondeterminism": {"baseline": ref_rep, "variant": new_rep},
            "problems": problems,
            "closeness": max((float(s.get("closeness") or 0.0) for s in stats), default=0.0),
            "precision": next(
                (f"at {s['new_dtype']}" for s in stats if s.get("dtype_equal") is False), ""
            ),
            "bit_identical": bool(stats) and all(s.get("bit_identical") for s in stats),
        }


def compare(ref: dict, new: dict, exact: bool) -> dict[str, Any]:
    """Compare two in-memory captures ({"trials": [{"seed", "outputs", …}]})."""
    c = Comparer(exact)
    for re_, ne in zip(ref["trials"], new["trials"], strict=False):
        c.add(re_, re_["outputs"], ne, ne["outputs"])
    if len(ref["trials"]) != len(new["trials"]):
        c.problems.append("the two sides ran different seeds")
        c.new_seeds.append(-1)
    return c.result(ref, new)


def compare_saved(ref_dir: str, new_dir: str, exact: bool) -> dict[str, Any]:
    """Compare two saved captures trial by trial, both memory-mapped."""
    ref_index, new_index = read_index(ref_dir), read_index(new_dir)
    c = Comparer(exact)
    for re_, ne in zip(ref_index["trials"], new_index["trials"], strict=False):
        r, n = load_trial(ref_dir, re_), load_trial(new_dir, ne)
        c.add(re_, r, ne, n)
        del r, n
    if len(ref_index["trials"]) != len(new_index["trials"]):
        c.problems.append("the two sides ran different trials")
        c.new_seeds.append(-1)
    return c.result(ref_index, new_index)
