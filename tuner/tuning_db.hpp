// tuning_db: the tuning database: every measurement with its provenance, and the best kernel per GPU and problem.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convgen/enum_names.hpp"
#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"

struct sqlite3;

namespace convgen {

// How a candidate's measurement ended. Only `ok` measurements have times and can be best.
enum class MeasurementStatus { ok, compile_error, resources, launch_error, wrong_result };

template <>
struct EnumNames<MeasurementStatus> {
  static constexpr std::array table = {
      std::pair{MeasurementStatus::ok, std::string_view("ok")},
      std::pair{MeasurementStatus::compile_error, std::string_view("compile_error")},
      std::pair{MeasurementStatus::resources, std::string_view("resources")},
      std::pair{MeasurementStatus::launch_error, std::string_view("launch_error")},
      std::pair{MeasurementStatus::wrong_result, std::string_view("wrong_result")},
  };
};

// One candidate measured (or failed) on one GPU for one problem, with everything needed to trust it later.
// The precision is the problem's; the family is the kernel name's prefix.
struct MeasurementRecord {
  std::int64_t id = 0;  // assigned by the database; ignored by record()
  Gpu gpu;
  Problem problem;
  std::string kernel;  // canonical kernel name (kernel_name)
  MeasurementStatus status = MeasurementStatus::ok;
  std::string error_text;  // why it failed; empty when ok
  double median_us = 0;    // per call; 0 unless ok
  double p10_us = 0;
  double p90_us = 0;
  std::vector<double> samples_us;   // every sample, per call
  double rel_l2_error = 0;          // of the verification run
  std::optional<double> energy_mj;  // per call; nothing without an energy counter
  int registers = 0;                // from the ptxas report
  int spill_bytes = 0;
  int smem_bytes = 0;
  std::optional<double> predicted_us;  // the cost model's prediction when the tuner ranked with it
  double sm_clock_start_mhz = 0;
  double sm_clock_end_mhz = 0;
  std::string driver;           // CUDA driver version, "13.0"
  std::string nvrtc;            // NVRTC version
  std::string convgen;          // convgen version and commit
  std::int64_t created_at = 0;  // Unix seconds; 0 means now, at record()
  bool operator==(const MeasurementRecord&) const = default;
};

// The fastest verified kernel known for a problem on a GPU.
struct BestChoice {
  Gpu gpu;
  Problem problem;
  std::string kernel;
  double median_us = 0;
  std::int64_t measurement_id = 0;
  bool operator==(const BestChoice&) const = default;
};

// Which measurements to read; every field left empty matches all.
struct MeasurementFilter {
  std::optional<Gpu> gpu;  // same GPU (same_gpu)
  std::optional<Problem> problem;
  std::string kernel;
  std::optional<MeasurementStatus> status;
};

// What to remove. Measurements that are a current best are kept unless `everything` is set.
struct PruneOptions {
  std::optional<Gpu> gpu;              // only this GPU's records; all GPUs when empty
  bool not_best = false;               // measurements that are not a current best
  bool failed = false;                 // measurements whose status is not ok
  std::optional<int> older_than_days;  // measurements older than this many days
  bool everything = false;             // every record of the GPU (or of all): measurements, best, calibration
};

struct PruneStats {
  std::int64_t measurements_removed = 0;
  std::int64_t best_removed = 0;
  bool operator==(const PruneStats&) const = default;
};

struct ImportStats {
  std::int64_t measurements_imported = 0;
  std::int64_t duplicates_skipped = 0;  // already in the database (same GPU, problem, kernel, status, time, samples)
  std::int64_t best_updated = 0;        // best choices added or replaced by a faster imported measurement
  bool operator==(const ImportStats&) const = default;
};

// A cost-model calibration as stored: the model's own JSON for its coefficients.
struct StoredCalibration {
  int model_version = 0;
  std::string coefficients_json;
  std::int64_t fitted_at = 0;  // Unix seconds
  int samples = 0;             // measurements the fit used
  bool operator==(const StoredCalibration&) const = default;
};

// The measurements of an export (the JSON `TuningDb::export_json` writes), each checked as an import checks it.
// Throws InputError naming `source` and the place for text that is not such an export.
std::vector<MeasurementRecord> parse_export_json(std::string_view text, std::string_view source);

// The schema version this code writes; older files are migrated on open, newer ones refused.
inline constexpr int tuning_db_schema_version = 3;

// Returns true when two descriptors name the same GPU: same name, arch and SM count (clocks may differ).
bool same_gpu(const Gpu& a, const Gpu& b);

// Returns "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)".
std::string describe_gpu(const Gpu& gpu);

// A connection to a tuning database file: SQLite in WAL mode, safe with several writers (processes or threads,
// each with its own TuningDb). Writes are single transactions that wait for the write lock up to busy_timeout.
//   TuningDb db = TuningDb::open(TuningDb::default_path());
//   db.record({.gpu = gpu, .problem = problem, .kernel = "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1", .median_us = 41.5});
//   if (auto best = db.best(gpu, problem)) use(best->kernel);
class TuningDb {
 public:
  // How long a write waits for another writer's lock before failing.
  static constexpr std::chrono::milliseconds busy_timeout{30000};

  // Opens (creating it and its folder if needed) the database at `path`, sets WAL mode and the busy timeout,
  // and migrates an older schema. Throws InputError for a file that is not a database or has a newer schema.
  static TuningDb open(const std::filesystem::path& path);

  // Returns user_data_dir() / "tuning.sqlite".
  static std::filesystem::path default_path();

  TuningDb(TuningDb&&) noexcept;
  TuningDb& operator=(TuningDb&&) noexcept;
  ~TuningDb();

  const std::filesystem::path& path() const { return path_; }

  // Returns the file's schema version (PRAGMA user_version).
  int schema_version() const;

  // Stores one measurement and, when it is ok and faster than the best known, makes it the best, in one
  // transaction. Returns the measurement's id. Throws InputError for an empty kernel name, an invalid problem or
  // an ok record without a positive median.
  std::int64_t record(const MeasurementRecord& measurement);

  // Returns the best choice for the problem (its precision included) on the GPU, or nothing.
  std::optional<BestChoice> best(const Gpu& gpu, const Problem& problem) const;

  // Returns every best choice, of one GPU or of all, ordered by GPU, then problem key.
  std::vector<BestChoice> list_best(const std::optional<Gpu>& gpu = std::nullopt) const;

  // Returns the measurements that pass the filter, oldest first.
  std::vector<MeasurementRecord> measurements(const MeasurementFilter& filter = {}) const;

  // Returns every GPU the database holds records for, with its latest descriptor.
  std::vector<Gpu> gpus() const;

  // Removes records as `options` asks. Throws InputError when no criterion is set.
  PruneStats prune(const PruneOptions& options);

  // Returns the measurements (of one GPU or of all) as JSON that import_json reads on another machine.
  std::string export_json(const std::optional<Gpu>& gpu = std::nullopt) const;

  // Adds the measurements of an export, skipping those already present, and replaces a best choice only with a
  // faster one, in one transaction. Records for a GPU other than `local` (same_gpu) are refused with an
  // InputError naming both GPUs unless `allow_other_gpu`; then nothing is imported. `source` names the input in
  // error messages.
  ImportStats import_json(std::string_view text, const Gpu& local, bool allow_other_gpu,
                          std::string_view source = "import");

  // Merges other tuning databases (the files of a sharded tune) into this one, in one transaction: every
  // measurement is added unless already present (the same test as import_json), and the best per (GPU, problem,
  // precision; the problem key holds the sparsity) becomes the fastest ok measurement of all, so merging the same
  // files again changes nothing. Records of a GPU other than this database's (when it holds none: the first GPU of
  // the first input that holds any) are refused with an InputError naming each file and its GPUs unless
  // `allow_other_gpus`; then nothing is merged. Calibrations are not merged (run `db calibrate` on the result).
  // Returns what each input added, in the inputs' order. Throws InputError for an input that does not exist.
  //   TuningDb all = TuningDb::open("tune.sqlite");
  //   const std::vector<std::filesystem::path> shards{"tune-0.sqlite", "tune-1.sqlite"};
  //   all.merge(shards, false);
  std::vector<ImportStats> merge(std::span<const std::filesystem::path> inputs, bool allow_other_gpus);

  // Stores (replacing) a cost-model calibration for a GPU and model version.
  void save_calibration(const Gpu& gpu, const StoredCalibration& calibration);

  // Returns the stored calibration for the GPU and model version, or nothing.
  std::optional<StoredCalibration> load_calibration(const Gpu& gpu, int model_version) const;

 private:
  TuningDb(std::filesystem::path path, sqlite3* db);
  std::int64_t gpu_id(const Gpu& gpu) const;  // 0 when the GPU has no row
  std::int64_t ensure_gpu(const Gpu& gpu);
  struct Inserted {
    std::int64_t id = 0;  // 0 when skipped as a duplicate
    bool best_changed = false;
  };
  // Inserts within the caller's transaction and updates `best`; the caller has checked the record.
  Inserted insert_measurement(const MeasurementRecord& m, std::int64_t gpu_id, bool skip_duplicate);
  // Inserts checked records within the caller's transaction, skipping duplicates: what import and merge share.
  ImportStats insert_new(std::span<const MeasurementRecord> records);

  std::filesystem::path path_;
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace convgen
