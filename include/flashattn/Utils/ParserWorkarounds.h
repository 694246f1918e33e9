//===- ParserWorkarounds.h - inputs that crash MLIR 22's parser -*- C++ -*-===//
//
// Debian's MLIR 22 parser crashes (instead of reporting an error) on a dense
// array of `index` elements, `array<index: ...>` (llvm/llvm-project#179045,
// fixed upstream after 22.1). fa-opt and the compiler's region parsing look
// for it first and report it as an error.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_UTILS_PARSERWORKAROUNDS_H
#define FLASHATTN_UTILS_PARSERWORKAROUNDS_H

#include "llvm/ADT/StringRef.h"

#include <cctype>

namespace mlir::flashattn {

/// The error for findKnownParserCrash's construct.
inline constexpr const char *kIndexDenseArrayError =
    "a dense array of index elements (array<index: ...>) is not supported: MLIR 22's "
    "parser crashes on it (llvm/llvm-project#179045); use i64";

/// The offset in `text` of `array<index` (spaces allowed, outside comments
/// and string literals), or StringRef::npos.
inline size_t findKnownParserCrash(llvm::StringRef text) {
  auto skipSpace = [&](size_t i) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    return i;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '/' && text.substr(i).starts_with("//")) {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        return llvm::StringRef::npos;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        i += text[i] == '\\';
    } else if (text.substr(i).starts_with("array") &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                            text[i - 1] == '_'))) {
      size_t j = skipSpace(i + 5);
      if (j < text.size() && text[j] == '<' && text.substr(skipSpace(j + 1)).starts_with("index"))
        return i;
    }
  }
  return llvm::StringRef::npos;
}

} // namespace mlir::flashattn

#endif
