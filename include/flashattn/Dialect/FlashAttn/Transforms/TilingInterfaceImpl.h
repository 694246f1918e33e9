//===- TilingInterfaceImpl.h - flashattn.attention tiles ---------*- C++ -*-===//
//
// The external model of TilingInterface for flashattn.attention (tensor
// form, dense layout): iteration domain (batch, kv head, query row), so
// that upstream's tiling and fusion (scf::tileUsingSCF,
// transform.structured.tile_using_for / _forall, tile-and-fuse) take it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_DIALECT_FLASHATTN_TRANSFORMS_TILINGINTERFACEIMPL_H
#define FLASHATTN_DIALECT_FLASHATTN_TRANSFORMS_TILINGINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace flashattn {
void registerTilingInterfaceExternalModels(DialectRegistry &registry);
} // namespace flashattn
} // namespace mlir

#endif
