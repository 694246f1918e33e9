//===- KeyRange.cpp - the keys an index condition keeps -------------------===//

#include "KeyRange.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::flashattn;
using namespace mlir::flashattn::raise;

void raise::KeyRange::intersect(const KeyRange &other) {
  auto meet = [](std::optional<int64_t> a, std::optional<int64_t> b) {
    return a && b ? std::min(*a, *b) : a ? a : b;
  };
  left = meet(left, other.left);
  right = meet(right, other.right);
}

namespace {
/// a key + b query + c.
struct Linear {
  int64_t key = 0, query = 0, c = 0;
  Linear operator-(const Linear &o) const { return {key - o.key, query - o.query, c - o.c}; }
  Linear operator+(const Linear &o) const { return {key + o.key, query + o.query, c + o.c}; }
};

struct Analysis {
  ChainLoopFn chainLoop;
  unsigned key, query;

  /// index or an integer of at least 32 bits (positions below 2^30, as
  /// the kernels assume: no sum here wraps).
  static bool wide(Value v) {
    Type t = v.getType();
    return t.isIndex() || (isa<IntegerType>(t) && t.getIntOrFloatBitWidth() >= 32);
  }

  /// `v` without index casts and sign extensions (each at least 32 bits).
  static Value stripCasts(Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<arith::IndexCastOp, arith::ExtSIOp>(def) || !wide(def->getOperand(0)))
        break;
      v = def->getOperand(0);
    }
    return v;
  }

  std::optional<Linear> linearOf(Value v) const {
    if (!wide(v))
      return std::nullopt;
    v = stripCasts(v);
    if (std::optional<unsigned> loop = chainLoop(v)) {
      if (*loop == key)
        return Linear{1, 0, 0};
      if (*loop == query)
        return Linear{0, 1, 0};
      return std::nullopt;
    }
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c))) {
      if (c.getSignificantBits() > 31)
        return std::nullopt;
      return Linear{0, 0, c.getSExtValue()};
    }
    Operation *def = v.getDefiningOp();
    if (!isa_and_nonnull<arith::AddIOp, arith::SubIOp>(def))
      return std::nullopt;
    std::optional<Linear> a = linearOf(def->getOperand(0)), b = linearOf(def->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    return isa<arith::AddIOp>(def) ? *a + *b : *a - *b;
  }

  /// M <= 0 with M = s (key - query) + c as a range.
  static std::optional<KeyRange> rangeOf(Linear m) {
    if (m.key == 1 && m.query == -1)
      return KeyRange{std::nullopt, -m.c};
    if (m.key == -1 && m.query == 1)
      return KeyRange{-m.c, std::nullopt};
    return std::nullopt;
  }

  std::optional<KeyRange> compare(arith::CmpIOp cmp, bool negate) const {
    std::optional<Linear> a = linearOf(cmp.getLhs()), b = linearOf(cmp.getRhs());
    if (!a || !b)
      return std::nullopt;
    Linear l = *a - *b;
    using P = arith::CmpIPredicate;
    P p = cmp.getPredicate();
    // Unsigned only between two plain positions (a difference or an
    // offset could wrap).
    bool isUnsigned = p == P::ule || p == P::ult || p == P::uge || p == P::ugt;
    if (isUnsigned && !(chainLoop(stripCasts(cmp.getLhs())) && chainLoop(stripCasts(cmp.getRhs()))))
      return std::nullopt;
    Linear neg{-l.key, -l.query, -l.c};
    Linear m;
    if (p == P::sle || p == P::ule)
      m = l;
    else if (p == P::slt || p == P::ult)
      m = l + Linear{0, 0, 1};
    else if (p == P::sge || p == P::uge)
      m = neg;
    else if (p == P::sgt || p == P::ugt)
      m = neg + Linear{0, 0, 1};
    else
      return std::nullopt;
    if (negate) // !(m <= 0) is -m + 1 <= 0
      m = Linear{-m.key, -m.query, -m.c + 1};
    return rangeOf(m);
  }

  std::optional<KeyRange> of(Value cond, bool negate) const {
    Operation *def = cond.getDefiningOp();
    if (auto cmp = dyn_cast_or_null<arith::CmpIOp>(def))
      return compare(cmp, negate);
    bool conj = isa_and_nonnull<arith::AndIOp>(def), disj = isa_and_nonnull<arith::OrIOp>(def);
    if ((conj && !negate) || (disj && negate)) {
      std::optional<KeyRange> a = of(def->getOperand(0), negate), b = of(def->getOperand(1), negate);
      if (!a || !b)
        return std::nullopt;
      a->intersect(*b);
      return a;
    }
    if (isa_and_nonnull<arith::XOrIOp>(def)) {
      APInt one;
      for (unsigned i : {0u, 1u})
        if (matchPattern(def->getOperand(1 - i), m_ConstantInt(&one)) && one.isAllOnes())
          return of(def->getOperand(i), !negate);
    }
    return std::nullopt;
  }
};
} // namespace

std::optional<KeyRange> raise::keyRangeOf(Value cond, bool negate, ChainLoopFn chainLoop,
                                          unsigned key, unsigned query) {
  return Analysis{chainLoop, key, query}.of(cond, negate);
}
