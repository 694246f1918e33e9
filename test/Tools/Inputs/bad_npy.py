#!/usr/bin/env python3
"""Writes malformed .npy files for test/Tools/npy-inputs-bad.mlir: one
directory per defect under argv[1], each with a q.npy for a q of shape
(1, 2, 1, 64) float32 (and a good one for comparison). Standard library only."""

import os
import struct
import sys

SHAPE = "(1, 2, 1, 64)"
DATA = struct.pack("<128f", *[0.25] * 128)


def npy(header, data=DATA, version=1, header_len=None):
    text = header.encode() + b"\n"
    if version == 1:
        pre = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text) if header_len is None else header_len)
    else:
        pre = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(text) if header_len is None else header_len)
    return pre + text + data


def dict_(shape=SHAPE, descr="<f4"):
    return "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)


CASES = {
    "good": npy(dict_()),
    "good_v2": npy(dict_(), version=2),
    "negative_dim": npy(dict_("(-1, 2, 1, 64)")),
    "dim_2_64": npy(dict_("(18446744073709551616, 2, 1, 64)")),
    "dim_2_62": npy(dict_("(4611686018427387904, 2, 1, 64)")),
    "header_len_ffffffff": npy(dict_(), version=2, header_len=0xFFFFFFFF),
    "header_len_0": npy(dict_(), header_len=0),
    "no_data": npy(dict_(), data=b""),
    "one_element_short": npy(dict_(), data=DATA[:-4]),
    "fractional_dim": npy(dict_("(1, 2, 1, 60.5)")),
    "trailing_bytes": npy(dict_(), data=DATA + b"\0\0\0\0"),
    "big_endian": npy(dict_(descr=">f4")),
    "not_a_tuple": npy(dict_("(128)")),
    "text_after_dict": npy(dict_() + " junk"),
    "truncated_preamble": b"\x93NUMPY\x01",
}

for name, blob in CASES.items():
    os.makedirs(os.path.join(sys.argv[1], name), exist_ok=True)
    with open(os.path.join(sys.argv[1], name, "q.npy"), "wb") as f:
        f.write(blob)
