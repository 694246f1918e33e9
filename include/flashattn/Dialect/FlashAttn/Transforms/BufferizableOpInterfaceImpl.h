//===- BufferizableOpInterfaceImpl.h - bufferization of flashattn -*- C++ -*-===//
//
// External models of BufferizableOpInterface for flashattn.attention and
// flashattn.combine, so that one-shot-bufferize turns the tensor form (what
// an ML compiler emits) into the memref form the passes lower. Both ops are
// in destination-passing style: out (and lse) bufferize in place into their
// destinations.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_DIALECT_FLASHATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define FLASHATTN_DIALECT_FLASHATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace flashattn {
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace flashattn
} // namespace mlir

#endif
