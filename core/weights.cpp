// weights: filter shapes, pattern hashes and checked attachment of a problem's own filter.
#include "convgen/weights.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convgen/error.hpp"
#include "convgen/hash.hpp"

namespace convgen {

FilterShape filter_shape(const Problem& p) {
  const int r = rank(p.layout);
  std::vector<std::pair<std::int64_t, char>> spatial;
  if (r == 3) spatial.emplace_back(p.filter.d, 'T');
  if (r >= 2) spatial.emplace_back(p.filter.h, 'R');
  spatial.emplace_back(p.filter.w, 'S');
  FilterShape shape;
  shape.dims.push_back(p.k);
  shape.names.push_back('K');
  const auto channels = [&] {
    shape.dims.push_back(c_per_group(p));
    shape.names.push_back('C');
  };
  if (!channels_last(p.layout)) channels();
  for (const auto& [extent, name] : spatial) {
    shape.dims.push_back(extent);
    shape.names.push_back(name);
  }
  if (channels_last(p.layout)) channels();
  return shape;
}

std::string describe(const FilterShape& shape) {
  return fmt::format("({}) ({})", fmt::join(shape.dims, ", "), fmt::join(shape.names, ", "));
}

std::string weight_pattern_hash(const Problem& p, std::span<const float> values) {
  const FilterShape shape = filter_shape(p);
  std::uint64_t hash = kFnvBasis;
  for (const std::int64_t d : shape.dims) hash = fnv1a(hash, &d, sizeof d);
  hash = fnv1a(hash, shape.names.data(), shape.names.size());
  // The nonzero mask, 64 positions per word (little-endian bit order, the same on every platform).
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0.0f) word |= std::uint64_t{1} << (i % 64);
    if (i % 64 == 63 || i + 1 == values.size()) {
      unsigned char bytes[8];
      for (int b = 0; b < 8; ++b) bytes[b] = static_cast<unsigned char>(word >> (8 * b));
      hash = fnv1a(hash, bytes, sizeof bytes);
      word = 0;
    }
  }
  return fmt::format("{:016x}", hash);
}

Problem with_weights(const Problem& p, std::vector<float> values, const std::string& source) {
  const FilterShape shape = filter_shape(p);
  const auto expected = static_cast<std::size_t>(filter_elements(p));
  if (values.size() != expected)
    throw InputError(fmt::format("{}: {} values, expected {} for the filter {}", source, values.size(), expected,
                                 describe(shape)));
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad != values.end()) {
    // The coordinates of the bad element, outermost first.
    std::int64_t index = bad - values.begin(), rest = index;
    std::vector<std::string> coords(shape.dims.size());
    for (std::size_t i = shape.dims.size(); i-- > 0;) {
      coords[i] = fmt::format("{} {}", static_cast<char>(shape.names[i] - 'A' + 'a'), rest % shape.dims[i]);
      rest /= shape.dims[i];
    }
    throw InputError(fmt::format("{}: element {} ({}) is {}, expected a finite float", source, index,
                                 fmt::join(coords, ", "), std::isnan(*bad) ? "NaN" : "infinite"));
  }
  Problem out = p;
  out.weights.pattern = weight_pattern_hash(p, values);
  out.weights.values = std::make_shared<const std::vector<float>>(std::move(values));
  return out;
}

double weight_zero_fraction(const Problem& p) {
  if (!p.weights.values || p.weights.values->empty()) return 0;
  const auto zeros = std::count(p.weights.values->begin(), p.weights.values->end(), 0.0f);
  return static_cast<double>(zeros) / static_cast<double>(p.weights.values->size());
}

bool is_two_four_sparse(const Problem& p) {
  if (!p.weights.values || p.weights.values->empty()) return false;
  const std::vector<float>& v = *p.weights.values;
  const std::size_t row = v.size() / static_cast<std::size_t>(p.k);
  for (std::size_t start = 0; start < v.size(); start += row)
    for (std::size_t chunk = 0; chunk < row; chunk += 4) {
      int nonzeros = 0;
      for (std::size_t i = chunk; i < std::min(chunk + 4, row); ++i) nonzeros += v[start + i] != 0.0f ? 1 : 0;
      if (nonzeros > 2) return false;
    }
  return true;
}

}  // namespace convgen
