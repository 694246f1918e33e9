//===- Sm90Checks.cpp - what the sm_90a kernels take of an op -------------===//
//
// The checks flashattn-sm90-warpgroup makes on the ops naming a kernel
// before it builds it: element types, head dims, features and score / mask
// regions, each failure a reason naming the values.
//
//===----------------------------------------------------------------------===//

#include "Sm90Checks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// Records a failure reason.
struct Fail {
  std::string &why;
  LogicalResult operator()(const Twine &reason) const {
    why = reason.str();
    return failure();
  }
};
} // namespace

/// Element types, head dims and features the kernel covers.
static LogicalResult checkOperands(AttentionOp op, const Fail &fail) {
  PlanAttr plan = op.getPlanAttr();
  if (!plan || plan.getTarget() != Target::sm90)
    return fail("not planned for sm90");
  if (!isa<MemRefType>(op.getQ().getType()))
    return fail("needs the memref form (bufferize first)");
  Type elem = cast<ShapedType>(op.getQ().getType()).getElementType();
  if (!elem.isBF16() && !elem.isF16())
    return fail("the sm90 kernel takes bf16 or f16 inputs");
  bool partial = op.isSplitPartial();
  Type outElem = cast<ShapedType>(op.getOut().getType()).getElementType();
  if (!partial && outElem != elem)
    return fail("the sm90 kernel writes out in the input type");
  int64_t d = op.getHeadDim();
  if (d != op.getHeadDimV() || (d != 64 && d != 128 && d != 256))
    return fail("the sm90 kernel takes head_dim 64, 128 or 256 (= head_dim_v)");
  // (ALiBi and a tile of query rows: flashattn-tile refuses those before an
  // op names a kernel.)
  return success();
}

/// Score / mask regions the kernel can inline.
static LogicalResult checkRegions(AttentionOp op, const Fail &fail) {
  for (Region *region : {&op.getScore(), &op.getMask()}) {
    if (region->empty())
      continue;
    // Regions are inlined into the kernel: they may use their arguments,
    // constants and arith ops only (what the kernel's LLVM lowering covers),
    // nothing defined outside (a bias table would need a kernel argument).
    std::string bad;
    region->walk([&](Operation *inner) {
      if (!bad.empty())
        return;
      if (inner->getName().getDialectNamespace() != "arith" && !isa<YieldOp>(inner))
        bad = "score/mask regions on sm90 take arith ops only (found '" +
              inner->getName().getStringRef().str() + "')";
      // Scalars the NVPTX backend lowers inline: integers up to 64 bits
      // (wider ones need library calls it does not have), index, and f16,
      // bf16, f32, f64 (no f8 / f4 conversions in the kernel's lowering).
      auto scalar = [](Type t) {
        if (auto i = dyn_cast<IntegerType>(t))
          return i.getWidth() <= 64;
        return t.isIndex() || t.isF16() || t.isBF16() || t.isF32() || t.isF64();
      };
      for (TypeRange types : {TypeRange(inner->getOperandTypes()),
                              TypeRange(inner->getResultTypes())})
        for (Type t : types)
          if (bad.empty() && !scalar(t)) {
            std::string text;
            llvm::raw_string_ostream os(text);
            os << "score/mask regions on sm90 compute on integers of up to 64 "
                  "bits, index, f16, bf16, f32 or f64 only (found '"
               << t << "' in '" << inner->getName().getStringRef() << "')";
            bad = text;
          }
      // Constants hoisted out of the region by folding are fine when they
      // are arith.constant: they are cloned into the kernel with the region
      // (other constant-like ops, e.g. ub.poison, have no lowering there).
      // A use of an outside value is the reason reported, over the op's
      // own (a memref.load of a table says what the kernel lacks).
      for (Value v : inner->getOperands())
        if (!region->isAncestor(v.getParentRegion()) &&
            !(matchPattern(v, m_Constant()) && v.getDefiningOp() &&
              isa<arith::ConstantOp>(v.getDefiningOp())))
          bad = "score/mask regions on sm90 cannot use values defined outside "
                "them (a bias table or document ids need a kernel argument)";
    });
    if (!bad.empty())
      return fail(bad);
  }
  return success();
}

std::string mlir::flashattn::sm90OperandsUnsupported(AttentionOp op) {
  std::string why;
  Fail fail{why};
  if (failed(checkOperands(op, fail)) || failed(checkRegions(op, fail)))
    return why;
  return "";
}
