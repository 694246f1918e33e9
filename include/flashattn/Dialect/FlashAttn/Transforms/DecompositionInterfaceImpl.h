//===- DecompositionInterfaceImpl.h - flashattn in linalg --------*- C++ -*-===//
//
// The external model of linalg::AggregatedOpInterface for
// flashattn.attention: decomposeOperation rewrites the tensor form of a
// dense op into linalg.generic ops computing docs/SEMANTICS.md's formula
// unfused (flashattn-decompose-to-linalg runs it; so does upstream's
// transform.structured.decompose_interface).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_DIALECT_FLASHATTN_TRANSFORMS_DECOMPOSITIONINTERFACEIMPL_H
#define FLASHATTN_DIALECT_FLASHATTN_TRANSFORMS_DECOMPOSITIONINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace flashattn {
void registerDecompositionInterfaceExternalModels(DialectRegistry &registry);
} // namespace flashattn
} // namespace mlir

#endif
