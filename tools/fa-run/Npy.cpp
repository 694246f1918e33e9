//===- Npy.cpp - .npy input and output for fa-run -------------------------===//
//
// Reading is done here, not through xtensor's load_npy: that one trusts the
// header (a negative or 2^64 dimension threw bad_alloc, a header_len of
// 0xFFFFFFFF allocated 4 GiB, missing data was read as uninitialized memory,
// a shape of 60.5 or trailing bytes were accepted, a FIFO blocked). The
// header is checked against the file's size before anything else is read.
// Writing stays with xtensor's dump_npy.

#include "Npy.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {
/// A cursor over the header's dict text: {'descr': '<f4', 'fortran_order':
/// False, 'shape': (60, 4, 64), } with optional spaces, as NumPy writes it.
struct HeaderParser {
  const std::string &text;
  size_t pos = 0;

  void skipSpaces() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
      ++pos;
  }
  bool eat(char c) {
    skipSpaces();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool quoted(std::string &out) {
    skipSpaces();
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char q = text[pos++];
    size_t end = text.find(q, pos);
    if (end == std::string::npos)
      return false;
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }
  bool word(const char *w) {
    skipSpaces();
    size_t n = std::strlen(w);
    if (text.compare(pos, n, w) != 0)
      return false;
    pos += n;
    return true;
  }
  /// A tuple of non-negative decimal integers, each below 2^63; `why` says
  /// what is wrong when it is not.
  bool shape(std::vector<int64_t> &dims, std::string &why) {
    why = "not a tuple";
    if (!eat('('))
      return false;
    while (!eat(')')) {
      skipSpaces();
      size_t start = pos;
      int64_t d = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (d > (INT64_MAX - 9) / 10) {
          why = "a dimension past 2^63";
          return false;
        }
        d = d * 10 + (text[pos++] - '0');
      }
      if (pos == start) {
        why = "a dimension that is not a non-negative integer";
        return false; // "-1", "1e3", ...
      }
      dims.push_back(d);
      if (!eat(',')) {
        if (!eat(')')) {
          why = "a dimension that is not a non-negative integer";
          return false; // "60.5", ...
        }
        // (n) is an int in parentheses in Python, not a tuple: NumPy writes
        // (n,) for one dimension.
        if (dims.size() == 1)
          why = "(n) is not a tuple (one dimension is written (n,))";
        return dims.size() != 1;
      }
    }
    return true;
  }
};

std::string readAll(int fd, char *out, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, out, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return std::strerror(errno);
    if (r == 0)
      return "the file ended early";
    out += r;
    n -= static_cast<size_t>(r);
  }
  return "";
}
} // namespace

std::string farun::readNpy(const std::string &path, std::vector<double> &values,
                           std::vector<int64_t> &shape) {
  // Without blocking (a FIFO or device would wait for a writer forever) and
  // only a regular file, whose size bounds everything the header claims.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return "cannot open " + path + ": " + std::strerror(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return "cannot stat " + path + ": " + std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return path + " is not a regular file";
  const uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  auto bad = [&](const std::string &why) {
    return path + " is not a valid .npy file: " + why;
  };

  // Magic, version, header length (2 bytes in version 1, 4 in 2 and 3).
  char pre[12];
  if (fileSize < 10)
    return bad("shorter than the 10-byte preamble");
  if (std::string err = readAll(fd, pre, 10); !err.empty())
    return bad(err);
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0)
    return bad("no \\x93NUMPY magic");
  unsigned major = static_cast<unsigned char>(pre[6]);
  if (major < 1 || major > 3)
    return bad("unknown version " + std::to_string(major));
  uint64_t headerLen, preamble = major == 1 ? 10 : 12;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(pre[8]) |
                static_cast<unsigned>(static_cast<unsigned char>(pre[9])) << 8;
  } else {
    if (fileSize < 12)
      return bad("shorter than the 12-byte preamble");
    if (std::string err = readAll(fd, pre + 10, 2); !err.empty())
      return bad(err);
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = headerLen << 8 | static_cast<unsigned char>(pre[8 + i]);
  }
  if (headerLen == 0 || headerLen > fileSize - preamble)
    return bad("header of " + std::to_string(headerLen) + " bytes in a file of " +
               std::to_string(fileSize) + " bytes");
  std::string header(headerLen, '\0');
  if (std::string err = readAll(fd, header.data(), headerLen); !err.empty())
    return bad(err);
  // The dict ends in a newline, padded with spaces before it.
  while (!header.empty() && (header.back() == '\n' || header.back() == ' '))
    header.pop_back();

  HeaderParser p{header};
  std::string descr;
  std::optional<bool> fortran;
  bool haveShape = false;
  shape.clear();
  if (!p.eat('{'))
    return bad("the header is not a dict");
  while (!p.eat('}')) {
    std::string key;
    if (!p.quoted(key) || !p.eat(':'))
      return bad("malformed header '" + header + "'");
    bool ok;
    if (key == "descr" && descr.empty()) {
      ok = p.quoted(descr) && !descr.empty();
    } else if (key == "fortran_order" && !fortran) {
      ok = true;
      if (p.word("False"))
        fortran = false;
      else if (p.word("True"))
        fortran = true;
      else
        ok = false;
    } else if (key == "shape" && !haveShape) {
      std::string why;
      if (!p.shape(shape, why))
        return bad("shape: " + why + " in header '" + header + "'");
      ok = haveShape = true;
    } else {
      return bad("unexpected or repeated key '" + key + "' in the header");
    }
    if (!ok)
      return bad("bad value of '" + key + "' in header '" + header + "'");
    if (!p.eat(',')) {
      if (!p.eat('}'))
        return bad("malformed header '" + header + "'");
      break;
    }
  }
  p.skipSpaces();
  if (p.pos != header.size())
    return bad("text after the header's dict");
  if (descr.empty() || !fortran || !haveShape)
    return bad("the header needs descr, fortran_order and shape");
  if (*fortran)
    return path + " is Fortran-order; fa-run reads C-order arrays";

  // The element type, little-endian ('|' for one-byte types does not occur).
  enum { F32, F64, I32, I64 } kind;
  uint64_t itemSize;
  if (descr == "<f4")
    kind = F32, itemSize = 4;
  else if (descr == "<f8")
    kind = F64, itemSize = 8;
  else if (descr == "<i4")
    kind = I32, itemSize = 4;
  else if (descr == "<i8")
    kind = I64, itemSize = 8;
  else
    return path + " has dtype '" + descr +
           "'; fa-run reads little-endian float32, float64, int32 or int64";

  // The data must be exactly what the shape says, checked before any
  // allocation (a header can claim any size).
  const uint64_t dataBytes = fileSize - preamble - headerLen;
  uint64_t count = 1, need = 0;
  bool overflow = false;
  for (int64_t d : shape)
    overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(d), &count);
  overflow |= __builtin_mul_overflow(count, itemSize, &need);
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    count = need = 0, overflow = false;
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? "x" : "") + std::to_string(shape[i]);
  if (overflow || need != dataBytes)
    return bad("shape (" + dims + ") of " + descr + " needs " +
               (overflow ? std::string("more than 2^64") : std::to_string(need)) +
               " data bytes, the file has " + std::to_string(dataBytes));
  std::vector<char> data(dataBytes);
  if (std::string err = readAll(fd, data.data(), dataBytes); !err.empty())
    return bad(err);
  values.resize(count);
  for (uint64_t e = 0; e < count; ++e) {
    const char *at = data.data() + e * itemSize;
    switch (kind) {
    case F32: { float v; std::memcpy(&v, at, 4); values[e] = v; break; }
    case F64: { double v; std::memcpy(&v, at, 8); values[e] = v; break; }
    case I32: { int32_t v; std::memcpy(&v, at, 4); values[e] = v; break; }
    case I64: { int64_t v; std::memcpy(&v, at, 8); values[e] = static_cast<double>(v); break; }
    }
  }
  return "";
}

std::string farun::writeNpy(const std::string &path,
                            const std::vector<double> &values,
                            const std::vector<int64_t> &shape, bool asInt) {
  std::vector<std::size_t> s(shape.begin(), shape.end());
  try {
    if (asInt) {
      std::vector<int32_t> v(values.begin(), values.end());
      xt::dump_npy(path, xt::adapt(v, s));
    } else {
      std::vector<float> v(values.begin(), values.end());
      xt::dump_npy(path, xt::adapt(v, s));
    }
  } catch (const std::exception &e) {
    return "writing " + path + " failed: " + e.what();
  }
  return "";
}
