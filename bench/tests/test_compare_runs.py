"""bench/compare_runs.py on synthetic runs whose ratios are known."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compare_runs  # noqa: E402

DEVICE = {"device": {"name": "test GPU", "uuid": "0"}}


def prefill_row(d, mask, s, ours, old):
    return {"head_dim": d, "causal": mask, "seqlen": s, "batch": 1, "heads": 1,
            "tflops": {"ours": ours, "cudnn": 500.0, "fa2": 300.0, "old": old}}


def decode_row(ours_us, old_us, paged8_us, old_paged8_us):
    return {"batch": 1, "keys": 32768, "splits": 16,
            "us": {"ours": ours_us, "cudnn": 64.0, "old": old_us,
                   "paged8": paged8_us, "paged8_seq": 1.0, "paged8_changed": 1.0,
                   "old_paged8": old_paged8_us}}


def paged_row(us):
    """A decode row over several page layouts; `us` maps a key of ours
    (paged8, paged8_dev, ...) to (ours' time, old's time)."""
    row = {"batch": 4, "keys": 8192, "splits": 2, "us": {"ours": 10.0, "cudnn": 11.0, "old": 10.0}}
    for key, (ours, old) in us.items():
        row["us"][key] = ours
        row["us"]["old_" + key] = old
    return row


def write(tmp_path, name, rows, device=DEVICE):
    path = tmp_path / name
    path.write_text(json.dumps([device] + rows))
    return str(path)


def run(capsys, argv):
    rc = compare_runs.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_prefill_median_lowest_and_bar(tmp_path, capsys):
    # head_dim 64 none: ratios 1.00, 0.97, 0.99 -> median 0.990, lowest 0.970;
    # head_dim 64 causal: 0.99, 0.95, 1.00 -> median 0.990 but one run under 0.96.
    runs = [write(tmp_path, "p%d.json" % i, [
        prefill_row(64, "none", 512, 100.0 * r1, 100.0),
        prefill_row(64, "bottom_right", 512, 200.0 * r2, 200.0)])
        for i, (r1, r2) in enumerate([(1.00, 0.99), (0.97, 0.95), (0.99, 1.00)])]
    rc, out, _ = run(capsys, runs)
    assert rc == 0
    assert "| 64, none | 0.990 (0.970) |" in out
    assert "| 64, causal | 0.990 (0.950) |" in out
    assert "| 64, none | 99 / 500 / 300 |" in out  # median of 100, 97, 99
    assert "points 2, below the bar 1" in out
    assert "prefill 64 bottom_right 512: 0.990 (0.950)" in out


def test_decode_ratio_is_old_time_over_new(tmp_path, capsys):
    runs = [write(tmp_path, "d%d.json" % i, [decode_row(50.0, 50.0 * a, 60.0, 60.0 * b)])
            for i, (a, b) in enumerate([(1.02, 0.96), (1.00, 0.97), (1.04, 0.98)])]
    rc, out, _ = run(capsys, runs)
    assert rc == 0
    assert "| batch x keys | ours / cuDNN us | dense | paged8 |" in out  # no _seq, _changed
    assert "| 1 x 32768 | 50.0 / 64.0 | 1.020 (1.000) | 0.970 (0.960) |" in out
    assert "points 2, below the bar 1" in out
    assert "decode 1 32768 paged8: 0.970 (0.960)" in out


def test_variant_against_ours(tmp_path, capsys):
    row = prefill_row(128, "none", 1024, 400.0, 410.0)
    rc, out, _ = run(capsys, ["--new", "old", "--old", "ours", write(tmp_path, "p.json", [row])])
    assert rc == 0
    assert "| 128, none | 1.025 (1.025) |" in out
    assert "old / cuDNN / FA2" in out


def test_unknown_name_is_an_error(tmp_path, capsys):
    path = write(tmp_path, "p.json", [prefill_row(64, "none", 512, 1.0, 1.0)])
    rc, out, err = run(capsys, ["--old", "after", path])
    assert rc == 2 and out == ""
    assert "no 'after' in tflops of head_dim 64 none s=512" in err


@pytest.mark.parametrize("text, message", [
    ("not json", "not readable as JSON"),
    ('{"tflops": {}}', "expected the list"),
    ('[{"device": {}}]', "no prefill or decode rows"),
])
def test_bad_file_is_an_error(tmp_path, capsys, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    rc, out, err = run(capsys, [str(path)])
    assert rc == 2 and out == ""
    assert message in err and "bad.json" in err


def test_missing_file_is_an_error(tmp_path, capsys):
    rc, _, err = run(capsys, [str(tmp_path / "absent.json")])
    assert rc == 2 and "absent.json" in err


def test_decode_layouts_in_order_with_the_device_table(tmp_path, capsys):
    # old / ours time: paged64 1.10, paged8_dev 0.90, paged8 1.00, paged16 0.95
    row = paged_row({"paged64": (10.0, 11.0), "paged8_dev": (10.0, 9.0),
                     "paged8": (20.0, 20.0), "paged16": (20.0, 19.0)})
    rc, out, _ = run(capsys, [write(tmp_path, "d.json", [row])])
    assert rc == 0
    assert ("| batch x keys | ours / cuDNN us | dense | paged8 | paged8_dev | paged16 | paged64 |"
            in out)
    assert ("| 4 x 8192 | 10.0 / 11.0 | 1.000 (1.000) | 1.000 (1.000) | 0.900 (0.900) "
            "| 0.950 (0.950) | 1.100 (1.100) |") in out
    # below the bar in the table's order: paged8_dev before paged16
    assert out.index("4 8192 paged8_dev: 0.900") < out.index("4 8192 paged16: 0.950")


def test_decode_with_a_variant_as_new(tmp_path, capsys):
    row = paged_row({"paged8": (20.0, 16.0), "paged8_dev": (20.0, 25.0)})
    rc, out, _ = run(capsys, ["--new", "old", "--old", "ours", write(tmp_path, "d.json", [row])])
    assert rc == 0
    # ours time / old time: dense 1.0, paged8 1.25, paged8_dev 0.8
    assert "| 4 x 8192 | 10.0 / 11.0 | 1.000 (1.000) | 1.250 (1.250) | 0.800 (0.800) |" in out


def test_each_mask_its_own_row(tmp_path, capsys):
    rows = [prefill_row(64, "top_left", 512, 90.0, 100.0),
            prefill_row(64, "bottom_right", 512, 110.0, 100.0),
            prefill_row(64, "none", 512, 100.0, 100.0)]
    rc, out, _ = run(capsys, [write(tmp_path, "p.json", rows)])
    assert rc == 0
    assert out.index("| 64, none | 1.000") < out.index("| 64, causal | 1.100") \
        < out.index("| 64, top_left | 0.900")


def test_fewer_runs_are_marked(tmp_path, capsys):
    full = [prefill_row(64, "none", 512, 100.0, 100.0), prefill_row(64, "none", 1024, 100.0, 100.0)]
    runs = [write(tmp_path, "a.json", full), write(tmp_path, "b.json", full[:1])]
    rc, out, _ = run(capsys, runs)
    assert rc == 0
    assert "| 64, none | 1.000 (1.000) | 1.000 (1.000) [1] |" in out
    assert "runs 2; points 2, below the bar 0" in out


def test_runs_of_two_gpus_warn(tmp_path, capsys):
    row = [prefill_row(64, "none", 512, 100.0, 100.0)]
    other = {"device": {"name": "test GPU", "uuid": "1"}}
    rc, _, err = run(capsys, [write(tmp_path, "a.json", row),
                              write(tmp_path, "b.json", row, device=other)])
    assert rc == 0 and "runs from 2 GPUs" in err


def test_missing_variant_in_decode(tmp_path, capsys):
    row = paged_row({"paged8": (20.0, 20.0)})
    del row["us"]["old_paged8"]
    rc, out, err = run(capsys, [write(tmp_path, "d.json", [row])])
    assert rc == 2 and out == ""
    assert "no 'old_paged8' in us of decode 4 x 8192" in err


def test_a_run_given_twice(tmp_path, capsys):
    path = write(tmp_path, "p.json", [prefill_row(64, "none", 512, 1.0, 1.0)])
    rc, _, err = run(capsys, [path, path])
    assert rc == 2 and "a run given twice" in err


@pytest.mark.parametrize("rows, message", [
    ([{"tokens": 16384, "causal": "none", "tflops": {"varlen": 1.0}}], "another benchmark"),
    ([prefill_row(64, "none", 512, 1.0, 1.0), paged_row({})], "both prefill and decode"),
])
def test_other_rows_are_an_error(tmp_path, capsys, rows, message):
    rc, out, err = run(capsys, [write(tmp_path, "x.json", rows)])
    assert rc == 2 and out == ""
    assert message in err and "x.json" in err
