// tensor_alignment_gpu_test: what each family's plan says it needs of the caller's tensor addresses
// (LaunchPlan::tensor_alignment) is all it needs. Every family's default kernel and the candidates whose plans need
// something else of the addresses, on layers of the edge-case corpus in each precision and layout the family serves,
// run with the activation, the filter and the output exactly as many bytes past a 256-byte boundary as declared (an
// element where nothing is), and so aligned to nothing more: each output must match the float64 reference. A tensor
// at half the declared alignment is refused before anything is enqueued (InputError).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "reference/inputs.hpp"
#include "reference/pruning.hpp"
#include "reference/reference.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using testing_support::edge_cases;

// A device copy of `bytes` bytes `offset` bytes past the start of its allocation (which the driver aligns to 256).
class OffsetBuffer {
 public:
  OffsetBuffer(std::size_t bytes, std::size_t offset) : buffer_(bytes + offset), offset_(offset), bytes_(bytes) {}
  CUdeviceptr ptr() const { return buffer_.ptr() + offset_; }
  void upload(const HostTensor& tensor) {
    std::vector<unsigned char> staged(offset_ + bytes_, 0xff);  // NaN around it
    std::memcpy(staged.data() + offset_, tensor.bytes().data(), bytes_);
    buffer_.upload_bytes(staged.data(), staged.size());
  }
  void poison(CUstream stream) { buffer_.fill_u8(0xff, stream); }
  void download(HostTensor& tensor) const {
    std::vector<unsigned char> staged(offset_ + bytes_);
    buffer_.download_bytes(staged.data(), staged.size());
    std::memcpy(tensor.bytes().data(), staged.data() + offset_, bytes_);
  }

 private:
  DeviceBuffer buffer_;
  std::size_t offset_;
  std::size_t bytes_;
};

// The offset of a tensor that the plan needs `declared` bytes of alignment of (0: an element).
std::size_t least_offset(int declared, int element) { return static_cast<std::size_t>(std::max(declared, element)); }

// Runs `kernel` once with its tensors at their least aligned offsets; returns whether the output matches the
// reference (EXPECTs it, labelled).
bool verify_at_least_alignment(const BuiltKernel& kernel, std::uint64_t seed) {
  const Problem& p = kernel.problem;
  const TensorAlignment& a = kernel.plan.tensor_alignment;
  const int element = element_bytes(p.precision);
  const std::string label = fmt::format("{} {} (activation +{}, filter +{}, output +{})", problem_key(p),
                                        kernel.source.entry, least_offset(a.activation, element),
                                        least_offset(a.filter, element), least_offset(a.output, element));
  const InputTensors inputs = make_inputs(p, expected_inputs(p, SparsityPattern::blob, seed));
  HostTensor result = HostTensor::for_problem(p, TensorRole::output);
  OffsetBuffer activation(inputs.activation.size_bytes(), least_offset(a.activation, element));
  OffsetBuffer filter(inputs.filter.size_bytes(), least_offset(a.filter, element));
  OffsetBuffer output(result.size_bytes(), least_offset(a.output, element));
  DeviceBuffer workspace(static_cast<std::size_t>(std::max<std::int64_t>(kernel.plan.workspace_bytes(), 4)));
  activation.upload(inputs.activation);
  filter.upload(inputs.filter);
  ConvLauncher launcher(kernel);
  Stream stream;
  output.poison(stream.get());
  launcher.prepare(filter.ptr(), stream.get());
  launcher.launch(activation.ptr(), filter.ptr(), output.ptr(), workspace.ptr(), stream.get());
  stream.synchronize();
  output.download(result);
  const ErrorStats error = compare(result, reference_conv(p, inputs.activation, inputs.filter));
  const bool passed = passes(error, p.precision);
  EXPECT_TRUE(passed) << label << ": rel L2 " << error.rel_l2 << ", " << error.nan_count << " NaN";
  return passed;
}

// The layers a family is tried on: the edge-case corpus in each precision and layout, with the filter a weight
// family needs (pruned to 90% zeros, or 2:4 in fp16 and bf16).
std::vector<Problem> variants(const Problem& base) {
  std::vector<Problem> out;
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    for (bool last : {false, true}) {
      Problem p = base;
      p.precision = precision;
      p.layout = last ? testing_support::channels_last_of(base.layout) : base.layout;
      if (!validate(p).empty()) continue;
      out.push_back(p);
      const bool two_four = precision == Precision::fp16 || precision == Precision::bf16;
      out.push_back(with_weights(p, two_four ? two_four_pruned_random_filter(p, 7) : pruned_random_filter(p, 0.9, 7)));
    }
  return out;
}

TEST(TensorAlignmentGpu, EachFamilyIsCorrectAtTheLeastAlignmentItsPlanDeclaresAndRefusesLess) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  const Gpu gpu = query_device(0);
  JitCache cache;  // on disk ($CONVGEN_CACHE_DIR), as the other families' GPU tests
  constexpr int kProblemsPerFamilyAndPrecision = 2;
  std::map<std::string, int> verified;  // per family
  std::map<std::tuple<std::string, Precision, bool>, std::pair<int, int>> served;  // plain and wide layers
  std::map<std::string, int> refused;  // per family
  std::uint64_t seed = 1;
  for (const Layer& layer : edge_cases().layers)
    for (const Problem& p : variants(layer.problem))
      for (const Family* f : all_families()) {
        // Per family, precision and layout: one layer whose kernels need no more than an element of any tensor,
        // and kProblemsPerFamilyAndPrecision whose kernels need more of one (the corpus's small-channel layers come
        // first and have none).
        auto& [plain, wide] = served[{std::string(f->name()), p.precision, channels_last(p.layout)}];
        if (plain >= 1 && wide >= kProblemsPerFamilyAndPrecision) continue;
        // The default, and the first candidate of every other alignment its plans declare.
        std::vector<KernelSpec> specs;
        std::set<std::tuple<int, int, int>> seen;
        std::optional<KernelSpec> chosen = f->default_spec(p, gpu);
        std::vector<KernelSpec> candidates = f->enumerate(p, gpu);
        if (chosen) candidates.insert(candidates.begin(), *chosen);
        bool needs_more = false;
        for (const KernelSpec& spec : candidates) {
          if (check_support(p, gpu, spec)) continue;
          const TensorAlignment a = plan_for(p, spec).tensor_alignment;
          needs_more = needs_more || std::max({a.activation, a.filter, a.output}) > element_bytes(p.precision);
          if (seen.insert({a.activation, a.filter, a.output}).second) specs.push_back(spec);
        }
        if (specs.empty() || (needs_more ? wide : plain) >= (needs_more ? kProblemsPerFamilyAndPrecision : 1)) continue;
        ++(needs_more ? wide : plain);
        for (const KernelSpec& spec : specs) {
          const BuiltKernel kernel = build_kernel(p, spec, gpu, cache);
          if (verify_at_least_alignment(kernel, ++seed)) ++verified[std::string(f->name())];
          // Half the alignment of the first tensor that needs more than an element: refused before any launch.
          const TensorAlignment& a = kernel.plan.tensor_alignment;
          const int element = element_bytes(p.precision);
          if (std::max({a.activation, a.filter, a.output}) <= element) continue;
          ConvLauncher launcher(kernel);
          const CUdeviceptr base = 1 << 20;  // never dereferenced: the check comes first
          const auto half = [&](int declared) { return declared > element ? base + declared / 2 : base; };
          EXPECT_THROW(launcher.launch(half(a.activation), half(a.filter), half(a.output), base, nullptr), InputError)
              << kernel.source.entry;
          ++refused[std::string(f->name())];
        }
      }
  for (const auto& [family, count] : verified)
    std::cout << family << ": " << count << " kernels verified, " << refused[family]
              << " misaligned launches refused\n";
  // Every family that declares an alignment is among those verified at it and refused below it.
  for (const char* family : {"igemm", "igemm_tc", "igemm_wgmma", "sparse24_tc", "pointwise"}) {
    EXPECT_GT(verified[family], 0) << family;
    EXPECT_GT(refused[family], 0) << family;
  }
}

}  // namespace
}  // namespace convgen
