// tuning_db_fuzz: `convgen db import` (TuningDb::import_json, tuner/tuning_db.cpp) on any bytes: records or an
// InputError, never another exception; what was imported reads back and exports again. One database per process,
// emptied every 256 inputs so that it stays small.
#include "tuner/tuning_db.hpp"

#include <unistd.h>

#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "fuzz_input.hpp"
#include "generator/gpu_json.hpp"

using namespace convgen;

namespace {

struct State {
  std::filesystem::path dir;
  std::optional<TuningDb> db;
  Gpu local;
  int inputs = 0;
};

State& state() {
  static State s = [] {
    State fresh;
    fresh.dir = std::filesystem::temp_directory_path() / fmt::format("convgen-fuzz-db-{}", getpid());
    std::filesystem::remove_all(fresh.dir);
    fresh.db.emplace(TuningDb::open(fresh.dir / "fuzz.sqlite"));
    fresh.local = load_gpu(std::filesystem::path(CONVGEN_SOURCE_DIR) / "gpus" / "h100_sxm.json");
    std::atexit([] { std::filesystem::remove_all(state().dir); });
    return fresh;
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  State& s = state();
  if (++s.inputs % 256 == 0) s.db->prune({.everything = true});
  const bool allow_other_gpu = size > 0 && (data[0] & 1);
  try {
    const ImportStats stats = s.db->import_json(fuzz::text_of(data, size), s.local, allow_other_gpu, "fuzz.json");
    (void)stats;
  } catch (const InputError&) {
    return 0;
  }
  // Whatever was imported reads back and exports again; the export imports as duplicates only.
  const std::string exported = s.db->export_json();
  const ImportStats again = s.db->import_json(exported, s.local, true, "re-export");
  fuzz::require(again.measurements_imported == 0, "re-importing an export adds nothing");
  return 0;
}
