"""Compares two printMemrefF32 outputs (mlir-runner): the same shape and
every value within FlashAttention's f32 rule, max|a - b| <= 1e-5 max|b| +
1e-6 (docs/SEMANTICS.md), no NaN. Usage: compare_printed.py A B"""

import math
import re
import sys


def values(path):
    text = open(path).read()
    data = text[text.index("data ="):]
    return [float(x) for x in re.findall(r"-?(?:inf|nan|\d+\.?\d*(?:e[-+]?\d+)?)", data)]


a, b = values(sys.argv[1]), values(sys.argv[2])
assert len(a) == len(b) and a, "sizes %d and %d" % (len(a), len(b))
assert not any(math.isnan(x) for x in a + b), "NaN"
err = max(abs(x - y) for x, y in zip(a, b))
bound = 1e-5 * max(abs(y) for y in b) + 1e-6
print("compare: %d values, max diff %.3g, bound %.3g: %s" %
      (len(a), err, bound, "PASS" if err <= bound else "FAIL"))
sys.exit(0 if err <= bound else 1)
