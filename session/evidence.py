"""Evidence attached to hypotheses and variants: notes, measurements, files, and summaries
of profiler output.

Profiler files are summarized, never stored whole: an Nsight Compute CSV
(`ncu --csv --page raw --print-units base`) gives the kernels that took the most time and
their throughput percentages; a torch.profiler `key_averages().table()` gives the operators
and kernels with the most self time. The ledger keeps the summary and the file's path and
hash, so the claim can be traced back to the file. Files are read once, as a stream of
lines hashed on the way: a profile of any size costs a few megabytes of memory (a line
over MAX_LINE is refused).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from session import models as m
from session.concerns import record_suggestions
from session.errors import BadInput
from session.ledger_port import LedgerLike

TOP = 10  # kernels kept in a summary
MAX_LINE = 1 << 20  # characters in one line of a profiler file


class EvidenceError(BadInput, ValueError):
    """Evidence that cannot be read or attached, in one line."""


# ---------------------------------------------------------------------------- numbers


def parse_number(text: str) -> float | None:
    """A number as profilers print it: thousands separators, maybe a unit suffix or n/a."""
    t = text.strip().replace(",", "").replace("\u202f", "").replace("\u00a0", "")
    if not t or t.lower() in {"n/a", "nan", "-", "—"}:
        return None
    try:
        return float(t)
    except ValueError:
        return None


_TIME_TO_US = {
    "nsecond": 1e-3,
    "ns": 1e-3,
    "usecond": 1.0,
    "us": 1.0,
    "msecond": 1e3,
    "ms": 1e3,
    "second": 1e6,
    "s": 1e6,
}


# ---------------------------------------------------------------------------- Nsight Compute

_NAME_COLUMNS = ("Kernel Name", "Demangled Name", "Function Name", "Name")
_ID_COLUMNS = {
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Demangled Name",
    "Function Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Section Name",
    "Kernel Time",
}
_TIME_METRIC = "gpu__time_duration.sum"
_KEY_PERCENTS = re.compile(r"throughput|pct_of_peak", re.I)


def _lines(text: str | Iterable[str]) -> Iterator[str]:
    """The lines of a text, or of a text stream read line by line (a file of any size);
    no profiler writes a line longer than MAX_LINE, so a longer one is refused rather
    than held in memory whole."""
    if isinstance(text, str):
        yield from text.splitlines()
        return
    read = getattr(text, "readline", None)
    source = iter(lambda: read(MAX_LINE + 1), "") if read is not None else iter(text)
    for number, ln in enumerate(source, 1):
        if len(ln) > MAX_LINE:
            raise EvidenceError(
                f"line {number} is longer than {MAX_LINE // (1 << 20)} MiB: not a profiler table"
            )
        yield ln.rstrip("\r\n")


def parse_ncu_csv(text: str | Iterable[str], top: int = TOP) -> dict[str, Any]:
    """Summarize `ncu --csv --page raw --print-units base` output (a text, or a stream of
    lines: memory stays proportional to the number of distinct kernels).

    The file has a header row (identity columns, then one column per metric), a row of
    units, then one row per profiled kernel; numbers may carry thousands separators and the
    profiler's own `==PROF==` lines may come first.
    """
    try:
        return _parse_ncu(_lines(text), top)
    except csv.Error as exc:  # e.g. a field over the csv module's size limit
        raise EvidenceError(f"the Nsight Compute CSV cannot be read: {exc}") from None


def _parse_ncu(lines: Iterator[str], top: int) -> dict[str, Any]:
    first = next(
        (ln for ln in lines if ln.lstrip("\ufeff").startswith(('"ID"', "ID,"))),
        None,
    )
    if first is None:
        raise EvidenceError('not an Nsight Compute raw CSV: no header row starting with "ID"')
    rows = csv.reader(itertools.chain([first + "\n"], (ln + "\n" for ln in lines)))
    header = [h.strip().lstrip("\ufeff") for h in next(rows)]
    body: Iterator[list[str]] = (r for r in rows if any(c.strip() for c in r))
    name_col = next((c for c in _NAME_COLUMNS if c in header), None)
    if name_col is None:
        raise EvidenceError("not an Nsight Compute raw CSV: no kernel name column")
    units: dict[str, str] = {}
    head = next(body, None)
    if head is not None and not head[0].strip():  # the units row: empty identity cells
        units = {h: u.strip() for h, u in zip(header, head, strict=False)}
        head = next(body, None)
    if head is None:
        raise EvidenceError("the Nsight Compute CSV has no kernel rows")
    return _summarize_ncu(header, name_col, units, itertools.chain([head], body), top)


def _summarize_ncu(
    header: list[str],
    name_col: str,
    units: dict[str, str],
    body: Iterator[list[str]],
    top: int,
) -> dict[str, Any]:
    metrics = [h for h in header if h not in _ID_COLUMNS]
    time_col = _TIME_METRIC if _TIME_METRIC in header else None
    scale = _TIME_TO_US.get(units.get(time_col or "", "nsecond"), 1e-3)
    percent_cols = [
        h for h in metrics if units.get(h) == "%" or h.endswith(".pct") or "pct_of_peak" in h
    ]
    key_percent = [h for h in percent_cols if _KEY_PERCENTS.search(h)] or percent_cols

    kernels: dict[str, dict[str, Any]] = {}
    total_us = 0.0
    kernel_rows = 0
    for row in body:
        kernel_rows += 1
        rec = dict(zip(header, row, strict=False))
        name = rec.get(name_col, "").strip() or "?"
        k = kernels.setdefault(
            name, {"name": name, "launches": 0, "time_us": 0.0, "_pct": {}, "_w": {}}
        )
        k["launches"] += 1
        t = parse_number(rec.get(time_col, "")) if time_col else None
        t_us = (t or 0.0) * scale
        k["time_us"] += t_us
        total_us += t_us
        for col in key_percent:
            v = parse_number(rec.get(col, ""))
            if v is None:
                continue
            w = t_us if t_us > 0 else 1.0  # time-weighted mean over launches
            k["_pct"][col] = k["_pct"].get(col, 0.0) + v * w
            k["_w"][col] = k["_w"].get(col, 0.0) + w
    ranked = sorted(kernels.values(), key=lambda k: (-k["time_us"], k["name"]))
    overall: dict[str, float] = {}
    for col in key_percent:
        num = sum(k["_pct"].get(col, 0.0) for k in ranked)
        den = sum(k["_w"].get(col, 0.0) for k in ranked)
        if den:
            overall[col] = round(num / den, 3)
    top_rows = []
    for k in ranked[:top]:
        top_rows.append(
            {
                "name": k["name"],
                "launches": k["launches"],
                "time_us": round(k["time_us"], 6),
                "share": round(k["time_us"] / total_us, 4) if total_us else None,
                "percent": {
                    c: round(k["_pct"][c] / k["_w"][c], 3) for c in key_percent if k["_w"].get(c)
                },
            }
        )
    return {
        "source": "ncu raw csv",
        "kernel_rows": kernel_rows,
        "distinct_kernels": len(kernels),
        "total_time_us": round(total_us, 6),
        "time_metric": time_col,
        "metrics": len(metrics),
        "percent_metrics": key_percent,
        "throughput_percent": overall,
        "top_kernels": top_rows,
    }


# ---------------------------------------------------------------------------- torch.profiler

_TIME_RE = re.compile(r"^\s*([0-9.,]+)\s*(ns|us|ms|s)\s*$")


def _time_us(text: str) -> float | None:
    match = _TIME_RE.match(text)
    if not match:
        return None
    value = parse_number(match.group(1))
    return None if value is None else value * _TIME_TO_US[match.group(2)]


def _percent(text: str) -> float | None:
    t = text.strip()
    return parse_number(t[:-1]) if t.endswith("%") else None


def _split_cells(text: str) -> list[str]:
    return [c for c in re.split(r"\s{2,}", text.strip()) if c] if text.strip() else []


def _spans(separator: str) -> list[tuple[int, int]]:
    return [(mt.start(), mt.end()) for mt in re.finditer(r"-+", separator)]


def _is_separator(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) <= {"-", " "} and "--" in line


def parse_torch_table(text: str | Iterable[str], top: int = TOP) -> dict[str, Any]:
    """Summarize a torch.profiler `key_averages().table(...)` printout (a text, or a stream
    of lines: only the best rows are kept while reading).

    Columns are found from the dashed separator lines (the table is fixed-width), so names
    with spaces and memory sizes like `1.00 KB` read correctly.
    """
    seps = 0
    spans: list[tuple[int, int]] = []
    name_end = 0
    headers: list[str] = []
    device: str | None = None
    after_first = False
    n_rows = 0
    any_device = False
    keep = max(top, 3)
    best: dict[str, list[dict[str, Any]]] = {"self_device_us": [], "self_cpu_us": []}
    totals: dict[str, float | None] = {}
    for ln in _lines(text):
        if after_first:  # the line after the first separator is the header
            after_first = False
            headers = [ln[:name_end].strip(), *_split_cells(ln[name_end:])]
            if len(headers) != len(spans):
                headers = [ln[a:b].strip() for a, b in spans]
            for h in headers:
                mt = re.fullmatch(r"Self (\w+)", h)
                if mt and mt.group(1) != "CPU":
                    device = mt.group(1)
        if _is_separator(ln):
            seps += 1
            if seps == 1:
                spans = _spans(ln)
                name_end = spans[0][1]
                after_first = True
            continue
        if seps == 2 and "Name" in headers:
            row = _torch_row(ln, name_end, spans, headers, device)
            if row is not None:
                n_rows += 1
                any_device = any_device or bool(row["self_device_us"])
                for key, kept in best.items():
                    kept.append(row)
                    if len(kept) > 4 * keep:
                        kept[:] = _ranked(kept, key)[:keep]
        elif seps >= 3:
            mt = re.match(r"\s*Self (\w+) time total:\s*(.+)$", ln)
            if mt:
                totals[mt.group(1)] = _time_us(mt.group(2))
    if seps < 3:
        raise EvidenceError("not a torch.profiler table: expected three dashed separator lines")
    if "Name" not in headers:
        raise EvidenceError("not a torch.profiler table: no Name column")
    if not n_rows:
        raise EvidenceError("the torch.profiler table has no rows")
    key = "self_device_us" if device and any_device else "self_cpu_us"
    ranked = _ranked(best[key], key)
    pct_key = "self_device_pct" if key == "self_device_us" else "self_cpu_pct"
    return {
        "source": "torch.profiler key_averages",
        "device": device,
        "rows": n_rows,
        "sorted_by": key,
        "self_cpu_total_us": totals.get("CPU"),
        "self_device_total_us": totals.get(device) if device else None,
        "top_kernels": [
            {
                "name": r["name"],
                "launches": r["calls"],
                "time_us": r[key],
                "share": round(r[pct_key] / 100.0, 4) if r[pct_key] is not None else None,
                "self_cpu_us": r["self_cpu_us"],
                "self_device_us": r["self_device_us"],
            }
            for r in ranked[:top]
        ],
        "throughput_percent": {
            "top_share_pct": ranked[0][pct_key],
            "top3_share_pct": round(sum(r[pct_key] or 0.0 for r in ranked[:3]), 2),
        },
    }


def _ranked(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Most time first, then by name; stable, so a cut list ranks as the whole one."""
    return sorted(rows, key=lambda r: (-(r[key] or 0.0), r["name"]))


def _torch_row(
    ln: str, name_end: int, spans: list[tuple[int, int]], headers: list[str], device: str | None
) -> dict[str, Any] | None:
    values = [ln[:name_end].strip(), *_split_cells(ln[name_end:])]
    if len(values) != len(headers):
        values = [ln[a:b].strip() for a, b in spans]
    cells = dict(zip(headers, values, strict=False))
    if not cells.get("Name"):
        return None
    calls = parse_number(cells.get("# of Calls", ""))
    return {
        "name": cells["Name"],
        "calls": int(calls) if calls is not None else None,
        "self_cpu_us": _time_us(cells.get("Self CPU", "")),
        "self_cpu_pct": _percent(cells.get("Self CPU %", "")),
        "cpu_total_us": _time_us(cells.get("CPU total", "")),
        "self_device_us": _time_us(cells.get(f"Self {device}", "")) if device else None,
        "self_device_pct": _percent(cells.get(f"Self {device} %", "")) if device else None,
        "device_total_us": _time_us(cells.get(f"{device} total", "")) if device else None,
    }


# ---------------------------------------------------------------------------- recording


def _check_links(
    ledger: LedgerLike, session: m.Session, hypothesis_id: str | None, variant_id: str | None
) -> None:
    if hypothesis_id:
        h = ledger.get(m.Hypothesis, hypothesis_id)
        if h is None or h.session_id != session.id:
            raise EvidenceError(f"no hypothesis {hypothesis_id} in session {session.id}")
    if variant_id:
        v = ledger.get(m.Variant, variant_id)
        if v is None or v.session_id != session.id:
            raise EvidenceError(f"no variant {variant_id} in session {session.id}")


def _record(ledger: LedgerLike, session: m.Session, **fields: Any) -> m.Evidence:
    _check_links(ledger, session, fields.get("hypothesis_id"), fields.get("variant_id"))
    ev = m.Evidence(session_id=session.id, **fields)
    ledger.put(ev)
    _refresh_concerns(ledger, session, ev)
    return ev


def _refresh_concerns(ledger: LedgerLike, session: m.Session, ev: m.Evidence) -> None:
    """New evidence can raise a concern area (a compiler-generated kernel, say): record it
    on the hypothesis the evidence bears on."""
    hid = ev.hypothesis_id
    if hid is None and ev.variant_id:
        v = ledger.get(m.Variant, ev.variant_id)
        hid = v.hypothesis_id if v else None
    h = ledger.get(m.Hypothesis, hid) if hid else None
    if h is not None:
        record_suggestions(ledger, session, h)


def add_note(
    ledger: LedgerLike,
    session: m.Session,
    text: str,
    *,
    title: str = "",
    hypothesis_id: str | None = None,
    variant_id: str | None = None,
) -> m.Evidence:
    if not text.strip():
        raise EvidenceError("a note needs some text")
    return _record(
        ledger,
        session,
        kind=m.EvidenceKind.NOTE,
        title=title or text.strip().splitlines()[0][:60],
        text=text,
        hypothesis_id=hypothesis_id,
        variant_id=variant_id,
    )


def add_measurement(
    ledger: LedgerLike,
    session: m.Session,
    name: str,
    value: float,
    unit: str = "",
    *,
    text: str = "",
    hypothesis_id: str | None = None,
    variant_id: str | None = None,
) -> m.Evidence:
    if not name.strip():
        raise EvidenceError("a measurement needs a name")
    return _record(
        ledger,
        session,
        kind=m.EvidenceKind.MEASUREMENT,
        title=name,
        text=text,
        summary={"name": name, "value": value, "unit": unit},
        hypothesis_id=hypothesis_id,
        variant_id=variant_id,
    )


def _file_facts(path: Path) -> tuple[Path, dict[str, Any]]:
    p = path.expanduser()
    if not p.is_file():
        raise EvidenceError(f"{path}: no such file")
    digest = hashlib.sha256()
    with p.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return p.resolve(), {"bytes": p.stat().st_size, "sha256": digest.hexdigest()}


class _Hashing(io.RawIOBase):
    """A binary file that hashes and counts every byte read through it."""

    def __init__(self, raw: io.RawIOBase):
        self.raw = raw
        self.digest = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)
        if n:
            view = memoryview(buffer)[:n]
            self.digest.update(view)
            self.size += n
        return n or 0


def summarize_file(path: str | Path, parse: Any) -> dict[str, Any]:
    """parse's summary of a text file read as a stream of lines (UTF-8, bad bytes
    replaced), with the file's size and sha256 taken in the same pass."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise EvidenceError(f"{path}: no such file")
    with p.open("rb", buffering=0) as fh:
        raw = _Hashing(fh)
        text = io.TextIOWrapper(io.BufferedReader(raw, 1 << 20), "utf-8", errors="replace")
        summary = parse(text)
        while text.read(1 << 20):  # a parser may stop early: the hash is of the whole file
            pass
    return {**summary, "file": {"bytes": raw.size, "sha256": raw.digest.hexdigest()}}


def add_file(
    ledger: LedgerLike,
    session: m.Session,
    path: str | Path,
    *,
    title: str = "",
    text: str = "",
    hypothesis_id: str | None = None,
    variant_id: str | None = None,
) -> m.Evidence:
    """Point at a file (path, size and hash): the file itself stays where it is."""
    p, facts = _file_facts(Path(path))
    return _record(
        ledger,
        session,
        kind=m.EvidenceKind.FILE,
        title=title or p.name,
        text=text,
        path=str(p),
        summary=facts,
        hypothesis_id=hypothesis_id,
        variant_id=variant_id,
    )


def _import_profile(
    ledger: LedgerLike,
    session: m.Session,
    path: str | Path,
    kind: m.EvidenceKind,
    label: str,
    parse: Any,
    title: str,
    hypothesis_id: str | None,
    variant_id: str | None,
) -> m.Evidence:
    p = Path(path).expanduser()
    summary = summarize_file(p, parse)
    p = p.resolve()
    return _record(
        ledger,
        session,
        kind=kind,
        title=title or f"{label}: {p.name}",
        path=str(p),
        summary=summary,
        hypothesis_id=hypothesis_id,
        variant_id=variant_id,
    )


def import_ncu_csv(
    ledger: LedgerLike,
    session: m.Session,
    path: str | Path,
    *,
    title: str = "",
    hypothesis_id: str | None = None,
    variant_id: str | None = None,
) -> m.Evidence:
    """An Nsight Compute raw CSV, summarized (top kernels, throughput), not stored whole."""
    return _import_profile(
        ledger, session, path, m.EvidenceKind.NCU_CSV, "Nsight Compute", parse_ncu_csv,
        title, hypothesis_id, variant_id,
    )  # fmt: skip


def import_torch_profile(
    ledger: LedgerLike,
    session: m.Session,
    path: str | Path,
    *,
    title: str = "",
    hypothesis_id: str | None = None,
    variant_id: str | None = None,
) -> m.Evidence:
    """A torch.profiler key_averages table, summarized, not stored whole."""
    return _import_profile(
        ledger, session, path, m.EvidenceKind.TORCH_PROFILE, "torch.profiler",
        parse_torch_table, title, hypothesis_id, variant_id,
    )  # fmt: skip


def add_profile(
    ledger: LedgerLike,
    session: m.Session,
    summary: dict[str, Any],
    *,
    title: str,
    path: str | None = None,
    variant_id: str | None = None,
    hypothesis_id: str | None = None,
) -> m.Evidence:
    """A profile pass's result (session.profile.run.summarize), stored whole: its tables are
    already summaries, and the trace it points at stays beside the ledger."""
    return _record(
        ledger,
        session,
        kind=m.EvidenceKind.TORCH_PROFILE,
        title=title,
        path=path,
        summary=summary,
        hypothesis_id=hypothesis_id,
        variant_id=variant_id,
    )


def _describe_profile(s: dict[str, Any]) -> str:
    from measure.numerics import format_bytes

    head = s.get("dominant") or {}
    share = head.get("share")
    per = "per step" if s.get("per_step", True) else "in the whole run"
    parts = [f"{s.get('launches')} launch(es) {per}"]
    if head:
        parts.append(
            f"dominant {head.get('name')}"
            + (f" {share * 100:.0f}%" if isinstance(share, (int, float)) else "")
        )
    largest = s.get("largest_intermediate")
    if largest:
        parts.append(f"largest intermediate {format_bytes(largest['bytes'])}")
    suggested = (s.get("roofline") or {}).get("suggested")
    if suggested:
        parts.append(f"suggests {suggested}")
    return "; ".join(parts)


def describe(ev: m.Evidence) -> str:
    """One line saying what a piece of evidence holds."""
    s = ev.summary
    if ev.kind is m.EvidenceKind.TORCH_PROFILE and s.get("profile_version"):
        return _describe_profile(s)
    if ev.kind is m.EvidenceKind.MEASUREMENT:
        return f"{s.get('name', ev.title)} = {s.get('value')} {s.get('unit', '')}".strip()
    if ev.kind in (m.EvidenceKind.NCU_CSV, m.EvidenceKind.TORCH_PROFILE):
        tops = s.get("top_kernels") or []
        head = tops[0] if tops else {}
        share = head.get("share")
        lead = f"{head.get('name', '?')}" + (
            f" {share * 100:.1f}%" if isinstance(share, float) else ""
        )
        return f"{len(tops)} top kernel(s); first: {lead}"
    if ev.kind is m.EvidenceKind.FILE:
        return f"{ev.path} ({s.get('bytes')} bytes, sha256 {str(s.get('sha256', ''))[:12]})"
    return ev.text
