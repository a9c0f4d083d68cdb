// gpu_json_test: GPU descriptor files load, round-trip, and every kind of bad key is named in the error.
#include "generator/gpu_json.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/errors.hpp"
#include "support/scratch_dir.hpp"
#include <nlohmann/json.hpp>

#include "convgen/error.hpp"
#include "generator/csv.hpp"

namespace convgen {
namespace {

const std::filesystem::path kGpus = std::filesystem::path(CONVGEN_SOURCE_DIR) / "gpus";

using testing_support::input_error;

const Gpu kSample{.name = "Sample GPU",
                  .arch = "sm_80",
                  .sm_count = 10,
                  .max_threads_per_sm = 2048,
                  .max_threads_per_block = 1024,
                  .max_blocks_per_sm = 32,
                  .regs_per_sm = 65536,
                  .regs_per_block = 65536,
                  .max_regs_per_thread = 255,
                  .smem_per_sm_bytes = 167936,
                  .smem_per_block_bytes = 49152,
                  .smem_per_block_optin_bytes = 166912,
                  .l2_bytes = 41943040,
                  .dram_bandwidth_gbs = 2039,
                  .clock_mhz = 1410,
                  .peak_fp32_tflops = 19.5,
                  .peak_tf32_tflops = 156,
                  .peak_fp16_tflops = 312,
                  .peak_bf16_tflops = 312.5};

// Returns the error for the sample descriptor with `key` set to `value`.
std::string error_with(const std::string& key, const nlohmann::json& value) {
  nlohmann::json doc = nlohmann::json::parse(gpu_to_json(kSample));
  doc[key] = value;
  return input_error([&] { parse_gpu_json(doc.dump(), "gpus/x.json"); });
}

// Returns the error for the sample descriptor without `key`.
std::string error_without(const std::string& key) {
  nlohmann::json doc = nlohmann::json::parse(gpu_to_json(kSample));
  doc.erase(key);
  return input_error([&] { parse_gpu_json(doc.dump(), "gpus/x.json"); });
}

TEST(GpuJson, EveryDescriptorInGpusLoadsAndIsWrittenInCanonicalForm) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kGpus)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    const Gpu gpu = load_gpu(entry.path());
    EXPECT_EQ(gpu_to_json(gpu), read_text_file(entry.path()).value());
    EXPECT_GE(peak_tflops(gpu, Precision::tf32), peak_tflops(gpu, Precision::fp32));
    EXPECT_GE(peak_tflops(gpu, Precision::fp16), peak_tflops(gpu, Precision::fp32));
  }
  EXPECT_GE(files, 6);
}

TEST(GpuJson, H100DescriptorHoldsTheDatasheetValues) {
  const Gpu gpu = load_gpu(kGpus / "h100_sxm.json");
  EXPECT_EQ(gpu.sm_count, 132);
  EXPECT_EQ(compute_capability(gpu), 90);
  EXPECT_EQ(gpu.smem_per_block_optin_bytes, 227 * 1024);
  EXPECT_EQ(gpu.l2_bytes, 50 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(gpu.dram_bandwidth_gbs, 3350);
}

TEST(GpuJson, WrittenJsonParsesBackEqual) { EXPECT_EQ(parse_gpu_json(gpu_to_json(kSample), "x.json"), kSample); }

TEST(GpuJson, WrittenJsonKeepsTheStructOrder) {
  const std::string text = gpu_to_json(kSample);
  EXPECT_TRUE(text.starts_with("{\n  \"name\": \"Sample GPU\",\n  \"arch\": \"sm_80\",\n  \"sm_count\": 10,\n"))
      << text;
  EXPECT_LT(text.find("\"l2_bytes\": 41943040"), text.find("\"peak_bf16_tflops\": 312.5"));
}

TEST(GpuJson, MissingFileIsReported) {
  EXPECT_EQ(input_error([] { load_gpu("gpus/nope.json"); }), "gpus/nope.json: cannot open GPU file");
}

TEST(GpuJson, SyntaxErrorGivesLineAndColumn) {
  EXPECT_EQ(input_error([] { parse_gpu_json("{\n  \"name\": \"x\",\n}\n", "gpus/x.json"); }),
            "gpus/x.json: parse error at line 3, column 1: syntax error while parsing object key - unexpected '}'; "
            "expected string literal");
}

TEST(GpuJson, ANumberPastADoublesRangeIsAnInputErrorNotAJsonException) {
  // Found by tests/fuzz/generator/gpu_json_fuzz.cpp: nlohmann throws out_of_range (406), not parse_error, for it.
  EXPECT_EQ(input_error([] { parse_gpu_json("{\n  \" Ame9) \": 6e553255", "gpus/x.json"); }),
            "gpus/x.json: number overflow parsing '6e553255'");
}

TEST(GpuJson, NonObjectIsRejected) {
  EXPECT_EQ(input_error([] { parse_gpu_json("[1, 2]", "gpus/x.json"); }),
            "gpus/x.json: expected a JSON object of GPU fields, got array");
}

TEST(GpuJson, MissingKeyIsRejected) { EXPECT_EQ(error_without("l2_bytes"), "gpus/x.json: missing key 'l2_bytes'"); }

TEST(GpuJson, UnknownKeyListsTheKnownOnes) {
  EXPECT_EQ(error_with("sm_cout", 10),
            "gpus/x.json: unknown key 'sm_cout', expected one of name, arch, sm_count, max_threads_per_sm, "
            "max_threads_per_block, max_blocks_per_sm, regs_per_sm, regs_per_block, max_regs_per_thread, "
            "smem_per_sm_bytes, smem_per_block_bytes, smem_per_block_optin_bytes, l2_bytes, dram_bandwidth_gbs, "
            "clock_mhz, peak_fp32_tflops, peak_tf32_tflops, peak_fp16_tflops, peak_bf16_tflops");
}

TEST(GpuJson, IntegerKeysMustBePositiveIntegers) {
  EXPECT_EQ(error_with("sm_count", -3), "gpus/x.json: key 'sm_count' must be a positive integer, got -3");
  EXPECT_EQ(error_with("regs_per_sm", 0), "gpus/x.json: key 'regs_per_sm' must be a positive integer, got 0");
  EXPECT_EQ(error_with("sm_count", 10.5), "gpus/x.json: key 'sm_count' must be a positive integer, got 10.5");
  EXPECT_EQ(error_with("sm_count", "132"), "gpus/x.json: key 'sm_count' must be a positive integer, got \"132\"");
  EXPECT_EQ(error_with("smem_per_sm_bytes", 4294967296),
            "gpus/x.json: key 'smem_per_sm_bytes' must be a positive integer, got 4294967296");
}

TEST(GpuJson, L2BytesMayExceedTheIntRange) {
  nlohmann::json doc = nlohmann::json::parse(gpu_to_json(kSample));
  doc["l2_bytes"] = 4294967296;
  EXPECT_EQ(parse_gpu_json(doc.dump(), "x.json").l2_bytes, 4294967296);
}

TEST(GpuJson, RateKeysMustBePositiveNumbers) {
  EXPECT_EQ(error_with("clock_mhz", 0), "gpus/x.json: key 'clock_mhz' must be a positive number, got 0");
  EXPECT_EQ(error_with("peak_fp16_tflops", nullptr),
            "gpus/x.json: key 'peak_fp16_tflops' must be a positive number, got null");
}

TEST(GpuJson, NameMustBeANonEmptyString) {
  EXPECT_EQ(error_with("name", ""), "gpus/x.json: key 'name' must be a non-empty string, got \"\"");
  EXPECT_EQ(error_with("name", 5), "gpus/x.json: key 'name' must be a non-empty string, got 5");
}

TEST(GpuJson, ArchMustNameARealArchitecture) {
  EXPECT_EQ(error_with("arch", "compute_90"),
            "gpus/x.json: key 'arch' must look like \"sm_90\" or \"sm_90a\", got \"compute_90\"");
  EXPECT_EQ(error_with("arch", "sm_9"), "gpus/x.json: key 'arch' must look like \"sm_90\" or \"sm_90a\", got \"sm_9\"");
  EXPECT_EQ(parse_gpu_json(
                [] {
                  nlohmann::json doc = nlohmann::json::parse(gpu_to_json(kSample));
                  doc["arch"] = "sm_100a";
                  return doc.dump();
                }(),
                "x.json")
                .arch,
            "sm_100a");
}

TEST(GpuJson, OptInSharedMemoryMustCoverTheDefault) {
  EXPECT_EQ(error_with("smem_per_block_optin_bytes", 1000),
            "gpus/x.json: key 'smem_per_block_optin_bytes' must be at least smem_per_block_bytes (49152), got 1000");
}

TEST(GpuJson, SharedMemoryPerSmMustCoverOneBlock) {
  EXPECT_EQ(error_with("smem_per_sm_bytes", 100000),
            "gpus/x.json: key 'smem_per_sm_bytes' must be at least smem_per_block_optin_bytes (166912), got 100000");
}

TEST(GpuJson, BlockThreadsMustFitOnAnSm) {
  EXPECT_EQ(error_with("max_threads_per_sm", 512),
            "gpus/x.json: key 'max_threads_per_sm' must be at least max_threads_per_block (1024), got 512");
}

TEST(GpuJson, BlockRegistersMustFitOnAnSm) {
  EXPECT_EQ(error_with("regs_per_sm", 32768),
            "gpus/x.json: key 'regs_per_sm' must be at least regs_per_block (65536), got 32768");
}

TEST(GpuJson, BareNameResolvesInTheGpusFolder) {
  EXPECT_EQ(find_gpu_file("h100_sxm", kGpus), kGpus / "h100_sxm.json");
  EXPECT_EQ(load_gpu(find_gpu_file("l4", kGpus)).arch, "sm_89");
}

TEST(GpuJson, PathsAreTakenAsGiven) {
  EXPECT_EQ(find_gpu_file("my/gpu.json", kGpus), std::filesystem::path("my/gpu.json"));
  EXPECT_EQ(find_gpu_file("local.json", kGpus), std::filesystem::path("local.json"));
}

TEST(GpuJson, UnknownNameListsTheKnownOnes) {
  const auto dir = testing_support::process_scratch() / "convgen_gpu_json_test_names";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "b.json") << "{}";
  std::ofstream(dir / "a.json") << "{}";
  std::ofstream(dir / "notes.md") << "";
  EXPECT_EQ(input_error([&] { find_gpu_file("h100", dir); }),
            "unknown GPU 'h100', expected a path to a .json file or one of a, b (in " + dir.string() + ")");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace convgen
