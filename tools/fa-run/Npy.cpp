//===- Npy.cpp - .npy input and output for fa-run (xtensor xnpy) ----------===//

#include "Npy.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include <fstream>
#include <stdexcept>

namespace {
template <typename T>
bool tryLoad(const std::string &path, std::vector<double> &values,
             std::vector<int64_t> &shape) {
  try {
    auto a = xt::load_npy<T>(path);
    shape.assign(a.shape().begin(), a.shape().end());
    values.assign(a.begin(), a.end());
    return true;
  } catch (const std::runtime_error &) {
    return false;
  }
}
} // namespace

std::string farun::readNpy(const std::string &path, std::vector<double> &values,
                           std::vector<int64_t> &shape) {
  std::ifstream probe(path, std::ios::binary);
  if (!probe)
    return "cannot open " + path;
  probe.close();
  if (tryLoad<float>(path, values, shape) ||
      tryLoad<double>(path, values, shape) ||
      tryLoad<int32_t>(path, values, shape) ||
      tryLoad<int64_t>(path, values, shape))
    return "";
  return path + " is not a C-order .npy array of float32, float64, int32 or "
                "int64";
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
