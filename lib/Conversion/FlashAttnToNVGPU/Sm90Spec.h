//===- Sm90Spec.h - which sm_90a kernel a planned attention gets -*- C++ -*-===//

#ifndef FLASHATTN_LIB_CONVERSION_FLASHATTNTONVGPU_SM90SPEC_H
#define FLASHATTN_LIB_CONVERSION_FLASHATTNTONVGPU_SM90SPEC_H

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"
#include "flashattn/Conversion/Passes.h"
#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

namespace mlir::flashattn {

/// The kernel spec of a planned (target sm90), memref-form `op`, or a
/// failure with the reason in `why`.
FailureOr<Sm90KernelSpec> sm90SpecFor(AttentionOp op, std::string &why);

/// Why the sm90 kernels cannot take `op`'s operands, element types, head
/// dims or regions (the checks sm90SpecFor starts with), or "".
std::string sm90OperandsUnsupported(AttentionOp op);


} // namespace mlir::flashattn

#endif
