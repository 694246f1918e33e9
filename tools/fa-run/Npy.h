//===- Npy.h - .npy input and output for fa-run -----------------*- C++ -*-===//
//
// NumPy .npy files: read by a checking reader of its own (the header
// against the file's size, before anything else is read), written through
// xtensor's xnpy (Debian libxtensor-dev), compiled in its own translation
// unit with exceptions enabled so that a failed write becomes an error
// message instead of an abort.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_TOOLS_FARUN_NPY_H
#define FLASHATTN_TOOLS_FARUN_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace farun {

/// Reads a C-order .npy array of float32, float64, int32 or int64 into
/// `values` (as double) and `shape`: a regular file (opened without
/// blocking), versions 1 to 3, a header that fits the file and data of
/// exactly the size its shape says. Returns "" or an error message naming
/// the defect.
std::string readNpy(const std::string &path, std::vector<double> &values,
                    std::vector<int64_t> &shape);

/// Writes `values` with `shape` as float32 (or int32 when `asInt`).
/// Returns "" or an error message.
std::string writeNpy(const std::string &path, const std::vector<double> &values,
                     const std::vector<int64_t> &shape, bool asInt);

} // namespace farun

#endif
