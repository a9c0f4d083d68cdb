// fixtures: what the tuner tests share: a scratch folder, GPU descriptors, problems and measurements.
#pragma once

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "convgen/problem.hpp"
#include "direct_params.hpp"
#include "generator/gpu_json.hpp"
#include "generator/kernel_spec.hpp"
#include "igemm_params.hpp"
#include "support/scratch_dir.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen::testing_tuner {

// A fresh folder under the temporary directory, removed at the end of the test.
struct ScratchDir : testing_support::ScratchDir {
  ScratchDir() : testing_support::ScratchDir("convgen-tuner-test") {}
};

inline Gpu gpu_file(const char* name) { return load_gpu(std::string(CONVGEN_SOURCE_DIR) + "/gpus/" + name + ".json"); }
inline Gpu h100() { return gpu_file("h100_sxm"); }
inline Gpu h200() { return gpu_file("h200"); }

inline Problem conv3x3(Precision precision = Precision::fp32) {
  Problem p = parse_problem_key("n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32");
  p.precision = precision;
  return p;
}
inline Problem conv1x1() { return parse_problem_key("n8_c256_k64_i1x56x56_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32"); }

inline std::string igemm(int block_m) {
  return kernel_name(to_spec(IgemmParams{.block_m = block_m, .block_n = 64, .block_k = 8}));
}

// An ok measurement with made-up but consistent statistics and provenance.
inline MeasurementRecord measured(const Gpu& gpu, const Problem& problem, const std::string& kernel, double median_us,
                                  std::int64_t created_at = 1700000000) {
  return {.gpu = gpu,
          .problem = problem,
          .kernel = kernel,
          .median_us = median_us,
          .p10_us = median_us * 0.98,
          .p90_us = median_us * 1.03,
          .samples_us = {median_us * 0.98, median_us, median_us * 1.03},
          .rel_l2_error = 1.5e-7,
          .registers = 64,
          .smem_bytes = 16384,
          .sm_clock_start_mhz = 1980,
          .sm_clock_end_mhz = 1965,
          .driver = "13.0",
          .nvrtc = "13.0",
          .convgen = "0.1.0 (test)",
          .created_at = created_at};
}

inline MeasurementRecord failed(const Gpu& gpu, const Problem& problem, const std::string& kernel,
                                MeasurementStatus status, std::string why) {
  return {.gpu = gpu,
          .problem = problem,
          .kernel = kernel,
          .status = status,
          .error_text = std::move(why),
          .created_at = 1700000000};
}

// Returns the record as read back: the database assigns the id.
inline MeasurementRecord with_id(MeasurementRecord m, std::int64_t id) {
  m.id = id;
  return m;
}

}  // namespace convgen::testing_tuner
