"""Evidence: notes, measurements, files, and summaries of Nsight Compute and torch.profiler
output (sample files written from the documented formats)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from method_factory import make_session, make_variant, open_ledger

from session import evidence as ev
from session import models as m
from session.hypotheses import add_hypothesis

DATA = Path(__file__).parent / "data"
SOFTMAX = "void softmax_warp_forward<float, float, float, 10, false, false>"


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(tmp_path) as lg:
        yield lg


def test_parse_number_handles_thousands_separators():
    assert ev.parse_number("1,204,480") == 1204480.0
    assert ev.parse_number(" 12.5 ") == 12.5
    assert ev.parse_number("n/a") is None and ev.parse_number("") is None


def test_ncu_raw_csv_summary():
    s = ev.parse_ncu_csv((DATA / "ncu_raw_sample.csv").read_text())
    assert s["kernel_rows"] == 4 and s["distinct_kernels"] == 3
    # nanoseconds with thousands separators → microseconds
    assert s["total_time_us"] == pytest.approx(9.216 + 1204.48 + 10.24 + 301.056)
    top = s["top_kernels"]
    assert top[0]["name"] == "ampere_sgemm_128x64_tn"
    assert top[1]["name"].startswith(SOFTMAX)
    fill = top[2]
    assert fill["launches"] == 2 and fill["time_us"] == pytest.approx(19.456)
    assert top[0]["share"] == pytest.approx(1204.48 / s["total_time_us"], abs=1e-4)
    # throughput percentages: the % columns naming throughput or peak, not the units row
    assert "sm__throughput.avg.pct_of_peak_sustained_elapsed" in s["percent_metrics"]
    assert top[0]["percent"]["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 91.87
    # a kernel seen twice: time-weighted mean of its launches
    w = (82.14 * 9.216 + 80.00 * 10.24) / (9.216 + 10.24)
    assert fill["percent"][
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
    ] == pytest.approx(w, abs=1e-3)
    overall = s["throughput_percent"]["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert 35 < overall < 92


def test_ncu_csv_without_units_row_and_in_other_units():
    text = '"ID","Kernel Name","gpu__time_duration.sum"\n"0","k1","2.5"\n"1","k2","1,000.0"\n'
    s = ev.parse_ncu_csv(text)
    assert s["top_kernels"][0]["name"] == "k2"  # nanoseconds assumed without units
    assert s["total_time_us"] == pytest.approx(1.0025)
    text_ms = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","msecond"\n"0","k","1.5"\n'
    assert ev.parse_ncu_csv(text_ms)["total_time_us"] == pytest.approx(1500.0)


@pytest.mark.parametrize("text", ["", "name,value\nx,1\n", '"ID","Kernel Name"\n"","" \n'])
def test_ncu_csv_rejects_other_files(text):
    with pytest.raises(ev.EvidenceError):
        ev.parse_ncu_csv(text)


def test_torch_table_with_device_columns():
    s = ev.parse_torch_table((DATA / "torch_table_cuda.txt").read_text())
    assert s["device"] == "CUDA" and s["sorted_by"] == "self_device_us"
    assert s["self_device_total_us"] == pytest.approx(5025.0)
    assert s["self_cpu_total_us"] == pytest.approx(2900.0)
    names = [k["name"] for k in s["top_kernels"]]
    assert names[0] == "ampere_sgemm_128x64_tn"
    assert names.index("void softmax_warp_forward<float, float, float, 1...") < names.index(
        "cudaLaunchKernel"
    )
    elementwise = next(k for k in s["top_kernels"] if k["name"].startswith("void at::native"))
    assert elementwise["launches"] == 52 and elementwise["time_us"] == pytest.approx(508.416)
    assert s["throughput_percent"]["top_share_pct"] == 71.9


def test_torch_table_cpu_only_with_memory_columns():
    s = ev.parse_torch_table((DATA / "torch_table_cpu.txt").read_text())
    assert s["device"] is None and s["sorted_by"] == "self_cpu_us"
    assert s["top_kernels"][0]["name"] == "aten::mm"
    assert s["top_kernels"][0]["launches"] == 3
    assert s["self_cpu_total_us"] == pytest.approx(95002.0)


@pytest.mark.slow
def test_torch_table_from_a_live_profile(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            torch.softmax(x @ x, dim=-1)
    s = ev.parse_torch_table(prof.key_averages().table(sort_by="self_cpu_time_total"))
    assert s["rows"] >= 2
    assert any(k["name"] in ("aten::mm", "aten::_softmax") for k in s["top_kernels"])


def test_torch_table_rejects_other_text():
    with pytest.raises(ev.EvidenceError):
        ev.parse_torch_table("hello\nworld\n")


def test_imports_store_summary_not_the_file(ledger, tmp_path):
    s = make_session(ledger)
    h, _ = add_hypothesis(ledger, s, title="sgemm dominates")
    v = make_variant(ledger, s, hypothesis_id=h.id)
    src = DATA / "ncu_raw_sample.csv"
    e = ev.import_ncu_csv(ledger, s, src, hypothesis_id=h.id, variant_id=v.id)
    stored = ledger.get(m.Evidence, e.id)
    assert stored.kind is m.EvidenceKind.NCU_CSV and stored.path == str(src.resolve())
    assert stored.summary["file"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert stored.text == "" and "16,777,216" not in stored.model_dump_json()
    t = ev.import_torch_profile(ledger, s, DATA / "torch_table_cuda.txt", variant_id=v.id)
    assert ledger.get(m.Evidence, t.id).summary["device"] == "CUDA"
    assert "ampere_sgemm" in ev.describe(stored)


def test_notes_measurements_and_files(ledger, tmp_path):
    s = make_session(ledger)
    n = ev.add_note(ledger, s, "nsys shows a 40 µs gap between kernels\nsecond line")
    assert n.title == "nsys shows a 40 µs gap between kernels"
    meas = ev.add_measurement(ledger, s, "peak memory", 2.5, "GiB")
    assert ev.describe(meas) == "peak memory = 2.5 GiB"
    f = tmp_path / "trace.json"
    f.write_text("{}")
    e = ev.add_file(ledger, s, f)
    assert e.summary["bytes"] == 2 and ev.describe(e).endswith(
        f"sha256 {e.summary['sha256'][:12]})"
    )
    with pytest.raises(ev.EvidenceError):
        ev.add_file(ledger, s, tmp_path / "missing.txt")
    with pytest.raises(ev.EvidenceError):
        ev.add_note(ledger, s, "   ")
    with pytest.raises(ev.EvidenceError, match="no hypothesis"):
        ev.add_note(ledger, s, "x", hypothesis_id="nope")
