// tuning_db: the SQLite schema and its migrations, recording, queries, pruning, and JSON export and import.
#include "tuner/tuning_db.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "convgen/error.hpp"
#include "convgen/version.hpp"
#include "generator/gpu_json.hpp"
#include "generator/kernel_spec.hpp"
#include "runtime/paths.hpp"
#include "tuner/sqlite_check.hpp"

namespace convgen {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The schema, one step per version: migrations[i] takes a file from version i to version i + 1. Steps are only
// ever appended; a released step never changes, because files in users' hands were made by it.
const std::array<const char*, tuning_db_schema_version> kMigrations = {
    // 1: GPUs, measurements with their provenance, and the best choice per (GPU, problem, precision).
    R"sql(
CREATE TABLE gpus (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  arch TEXT NOT NULL,
  sm_count INTEGER NOT NULL,
  descriptor_json TEXT NOT NULL,
  UNIQUE (name, arch, sm_count)
);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  problem_key TEXT NOT NULL,
  precision TEXT NOT NULL,
  kernel TEXT NOT NULL,
  family TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'compile_error', 'resources', 'launch_error', 'wrong_result')),
  error_text TEXT NOT NULL DEFAULT '',
  median_us REAL NOT NULL DEFAULT 0,
  p10_us REAL NOT NULL DEFAULT 0,
  p90_us REAL NOT NULL DEFAULT 0,
  samples_json TEXT NOT NULL DEFAULT '[]',
  rel_l2_error REAL NOT NULL DEFAULT 0,
  energy_mj REAL,
  registers INTEGER NOT NULL DEFAULT 0,
  spill_bytes INTEGER NOT NULL DEFAULT 0,
  smem_bytes INTEGER NOT NULL DEFAULT 0,
  sm_clock_start_mhz REAL NOT NULL DEFAULT 0,
  sm_clock_end_mhz REAL NOT NULL DEFAULT 0,
  driver TEXT NOT NULL DEFAULT '',
  nvrtc TEXT NOT NULL DEFAULT '',
  convgen TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL
);
CREATE INDEX measurements_by_problem ON measurements (gpu_id, problem_key, precision);
CREATE TABLE best (
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  problem_key TEXT NOT NULL,
  precision TEXT NOT NULL,
  kernel TEXT NOT NULL,
  median_us REAL NOT NULL,
  measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  PRIMARY KEY (gpu_id, problem_key, precision)
);
)sql",
    // 2: the cost model: its prediction kept with each measurement, and its calibration per GPU.
    R"sql(
ALTER TABLE measurements ADD COLUMN predicted_us REAL;
CREATE TABLE calibration (
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  model_version INTEGER NOT NULL,
  coefficients_json TEXT NOT NULL,
  fitted_at INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  PRIMARY KEY (gpu_id, model_version)
);
)sql",
    // 3: kernel names in the families' own schemas (issue 10): direct names lose the three fields direct never
    // used, so a record written before and one written after name the same kernel alike.
    R"sql(
UPDATE measurements SET kernel = substr(kernel, 1, length(kernel) - 11)
  WHERE family = 'direct' AND kernel LIKE '%\_st1\_sk1\_v1' ESCAPE '\';
UPDATE best SET kernel = substr(kernel, 1, length(kernel) - 11)
  WHERE kernel LIKE 'direct\_%\_st1\_sk1\_v1' ESCAPE '\';
)sql",
};

// The export format's version; import reads this one and older.
constexpr int kExportVersion = 1;
constexpr std::string_view kExportFormat = "convgen-tuning";

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Runs `sql` and retries while another connection holds the lock SQLite needs. The busy handler waits inside
// most calls, but some (BEGIN IMMEDIATE racing a WAL checkpoint, switching to WAL) return SQLITE_BUSY at once.
void execute_retrying(sqlite3* db, const char* sql) {
  const auto deadline = Clock::now() + TuningDb::busy_timeout;
  for (;;) {
    const int result = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if ((result == SQLITE_BUSY || result == SQLITE_LOCKED) && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    detail::sqlite_check(result, db, sql, __FILE__, __LINE__);
    return;
  }
}

// A write transaction: BEGIN IMMEDIATE takes the write lock up front, so a transaction never fails half way
// because another writer got there first. Rolled back unless committed.
class WriteTransaction {
 public:
  explicit WriteTransaction(sqlite3* db) : db_(db) { execute_retrying(db_, "BEGIN IMMEDIATE"); }
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  ~WriteTransaction() {
    if (!committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    execute_retrying(db_, "COMMIT");
    committed_ = true;
  }

 private:
  sqlite3* db_;
  bool committed_ = false;
};

int user_version(sqlite3* db) {
  Statement s(db, "PRAGMA user_version");
  s.step();
  return static_cast<int>(s.integer(0));
}

// The family column, kept for queries by family: the registered family that prefixes the name (the longest, so
// "igemm_tc_..." is igemm_tc), else the name's first token.
std::string family_of(const std::string& kernel) {
  const std::string_view registered = family_name_of(kernel);
  return registered.empty() ? kernel.substr(0, kernel.find('_')) : std::string(registered);
}

void check_record(const MeasurementRecord& m) {
  if (m.kernel.empty()) throw InputError("measurement: kernel name must not be empty");
  if (m.gpu.name.empty() || m.gpu.arch.empty() || m.gpu.sm_count <= 0)
    throw InputError(fmt::format("measurement of {}: the GPU must have a name, an arch and SMs", m.kernel));
  if (const std::string why = validate(m.problem); !why.empty())
    throw InputError(fmt::format("measurement of {}: invalid problem: {}", m.kernel, why));
  if (m.status == MeasurementStatus::ok && !(m.median_us > 0 && std::isfinite(m.median_us)))
    throw InputError(
        fmt::format("measurement of {}: an ok measurement must have a positive median, got {}", m.kernel, m.median_us));
}

// Columns read into a MeasurementRecord by read_measurement, in this order.
constexpr std::string_view kMeasurementColumns =
    "m.id, g.descriptor_json, m.problem_key, m.kernel, m.status, m.error_text, m.median_us, m.p10_us, m.p90_us, "
    "m.samples_json, m.rel_l2_error, m.energy_mj, m.registers, m.spill_bytes, m.smem_bytes, m.predicted_us, "
    "m.sm_clock_start_mhz, m.sm_clock_end_mhz, m.driver, m.nvrtc, m.convgen, m.created_at";

// Parses GPU descriptors once per distinct text: a query returns the same GPU on many rows.
class GpuCache {
 public:
  explicit GpuCache(std::string name) : name_(std::move(name)) {}
  const Gpu& get(const std::string& descriptor_json) {
    auto it = cache_.find(descriptor_json);
    if (it == cache_.end()) it = cache_.emplace(descriptor_json, parse_gpu_json(descriptor_json, name_)).first;
    return it->second;
  }

 private:
  std::string name_;
  std::map<std::string, Gpu> cache_;
};

MeasurementRecord read_measurement(const Statement& s, GpuCache& gpus, const std::string& db_name) {
  MeasurementRecord m{
      .id = s.integer(0),
      .gpu = gpus.get(s.text(1)),
      .problem = parse_problem_key(s.text(2)),
      .kernel = s.text(3),
      .error_text = s.text(5),
      .median_us = s.real(6),
      .p10_us = s.real(7),
      .p90_us = s.real(8),
      .samples_us = json::parse(s.text(9)).get<std::vector<double>>(),
      .rel_l2_error = s.real(10),
      .energy_mj = s.optional_real(11),
      .registers = static_cast<int>(s.integer(12)),
      .spill_bytes = static_cast<int>(s.integer(13)),
      .smem_bytes = static_cast<int>(s.integer(14)),
      .predicted_us = s.optional_real(15),
      .sm_clock_start_mhz = s.real(16),
      .sm_clock_end_mhz = s.real(17),
      .driver = s.text(18),
      .nvrtc = s.text(19),
      .convgen = s.text(20),
      .created_at = s.integer(21),
  };
  const std::string status = s.text(4);
  const auto parsed = parse_enum<MeasurementStatus>(status);
  if (!parsed) throw InputError(fmt::format("{}: measurement {} has unknown status '{}'", db_name, m.id, status));
  m.status = *parsed;
  return m;
}

// --- JSON export form of a measurement -------------------------------------------------------------------------

json measurement_to_json(const MeasurementRecord& m, std::size_t gpu_index) {
  const auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return json{
      {"gpu", gpu_index},
      {"problem", problem_key(m.problem)},
      {"kernel", m.kernel},
      {"status", to_string(m.status)},
      {"error_text", m.error_text},
      {"median_us", m.median_us},
      {"p10_us", m.p10_us},
      {"p90_us", m.p90_us},
      {"samples_us", m.samples_us},
      {"rel_l2_error", m.rel_l2_error},
      {"energy_mj", optional(m.energy_mj)},
      {"registers", m.registers},
      {"spill_bytes", m.spill_bytes},
      {"smem_bytes", m.smem_bytes},
      {"predicted_us", optional(m.predicted_us)},
      {"sm_clock_start_mhz", m.sm_clock_start_mhz},
      {"sm_clock_end_mhz", m.sm_clock_end_mhz},
      {"driver", m.driver},
      {"nvrtc", m.nvrtc},
      {"convgen", m.convgen},
      {"created_at", m.created_at},
  };
}

// Reads keys of one JSON object with messages naming the input, the object and the key.
class JsonReader {
 public:
  JsonReader(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) fail_type("", "an object");
  }

  const json& at(std::string_view key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) throw InputError(fmt::format("{}: key '{}' is missing", where_, key));
    return *it;
  }
  std::string string(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_string()) fail_type(key, "a string");
    return v.get<std::string>();
  }
  double number(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_number()) fail_type(key, "a number");
    return v.get<double>();
  }
  std::int64_t integer(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_number_integer()) fail_type(key, "an integer");
    return v.get<std::int64_t>();
  }
  std::optional<double> optional_number(std::string_view key) const {
    const json& v = at(key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) fail_type(key, "a number or null");
    return v.get<double>();
  }
  std::vector<double> numbers(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); }))
      fail_type(key, "an array of numbers");
    return v.get<std::vector<double>>();
  }
  const std::string& where() const { return where_; }

 private:
  [[noreturn]] void fail_type(std::string_view key, std::string_view expected) const {
    const json& v = key.empty() ? object_ : object_.at(key);
    std::string shown = v.dump();
    if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
    if (key.empty()) throw InputError(fmt::format("{}: must be {}, got {}", where_, expected, shown));
    throw InputError(fmt::format("{}: key '{}' must be {}, got {}", where_, key, expected, shown));
  }

  const json& object_;
  std::string where_;
};

MeasurementRecord measurement_from_json(const json& j, const std::vector<Gpu>& gpus, const std::string& where) {
  const JsonReader r(j, where);
  const std::int64_t gpu_index = r.integer("gpu");
  if (gpu_index < 0 || gpu_index >= static_cast<std::int64_t>(gpus.size()))
    throw InputError(fmt::format("{}: key 'gpu' must index the 'gpus' array (0 to {}), got {}", where,
                                 static_cast<std::int64_t>(gpus.size()) - 1, gpu_index));
  const std::string status = r.string("status");
  const auto parsed_status = parse_enum<MeasurementStatus>(status);
  if (!parsed_status)
    throw InputError(
        fmt::format("{}: key 'status' must be one of {}, got '{}'", where, enum_choices<MeasurementStatus>(), status));
  Problem problem;
  try {
    problem = parse_problem_key(r.string("problem"));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
  MeasurementRecord m{
      .gpu = gpus[static_cast<std::size_t>(gpu_index)],
      .problem = problem,
      .kernel = r.string("kernel"),
      .status = *parsed_status,
      .error_text = r.string("error_text"),
      .median_us = r.number("median_us"),
      .p10_us = r.number("p10_us"),
      .p90_us = r.number("p90_us"),
      .samples_us = r.numbers("samples_us"),
      .rel_l2_error = r.number("rel_l2_error"),
      .energy_mj = r.optional_number("energy_mj"),
      .registers = static_cast<int>(r.integer("registers")),
      .spill_bytes = static_cast<int>(r.integer("spill_bytes")),
      .smem_bytes = static_cast<int>(r.integer("smem_bytes")),
      .predicted_us = r.optional_number("predicted_us"),
      .sm_clock_start_mhz = r.number("sm_clock_start_mhz"),
      .sm_clock_end_mhz = r.number("sm_clock_end_mhz"),
      .driver = r.string("driver"),
      .nvrtc = r.string("nvrtc"),
      .convgen = r.string("convgen"),
      .created_at = r.integer("created_at"),
  };
  try {
    check_record(m);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
  return m;
}

}  // namespace

bool same_gpu(const Gpu& a, const Gpu& b) { return a.name == b.name && a.arch == b.arch && a.sm_count == b.sm_count; }

std::string describe_gpu(const Gpu& gpu) { return fmt::format("{} ({}, {} SMs)", gpu.name, gpu.arch, gpu.sm_count); }

void TuningDb::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

TuningDb::TuningDb(std::filesystem::path path, sqlite3* db) : path_(std::move(path)), db_(db) {}
TuningDb::TuningDb(TuningDb&&) noexcept = default;
TuningDb& TuningDb::operator=(TuningDb&&) noexcept = default;
TuningDb::~TuningDb() = default;

std::filesystem::path TuningDb::default_path() { return user_data_dir() / "tuning.sqlite"; }

TuningDb TuningDb::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) throw InputError(fmt::format("{}: cannot create the folder: {}", name, ec.message()));
  }
  sqlite3* raw = nullptr;
  const int opened = sqlite3_open_v2(name.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  TuningDb db(path, raw);  // owns the handle even when the open failed
  if (opened != SQLITE_OK)
    throw InputError(fmt::format("{}: cannot open the tuning database: {}", name,
                                 raw ? sqlite3_errmsg(raw) : sqlite3_errstr(opened)));
  sqlite3* c = db.db_.get();
  const auto damaged = [&name](std::string_view what) {
    return InputError(
        fmt::format("{}: the tuning database is damaged ({}); convgen leaves the file as it is: "
                    "restore a copy, or move it away to start a new one",
                    name, what));
  };
  CONVGEN_SQLITE_CHECK(c, sqlite3_busy_timeout(c, static_cast<int>(busy_timeout.count())));

  // The first statement reads the file header: that is where a file that is not a database shows.
  int version = 0;
  try {
    version = user_version(c);
  } catch (const ApiError&) {
    if (sqlite3_errcode(c) == SQLITE_NOTADB)
      throw InputError(fmt::format("{}: not a tuning database (the file is not SQLite)", name));
    if (sqlite3_errcode(c) == SQLITE_CORRUPT) throw damaged(sqlite3_errmsg(c));
    throw;
  }
  if (version > tuning_db_schema_version)
    throw InputError(fmt::format("{}: schema version {} is newer than this convgen knows ({}); use a newer convgen",
                                 name, version, tuning_db_schema_version));
  // A damaged file is refused before anything writes to it (switching to WAL writes the header): convgen never
  // overwrites what may be the only copy of a long tuning run. quick_check reads every page (milliseconds for a
  // database of thousands of records) but skips the index-content checks of integrity_check.
  std::string damage;
  try {
    Statement check(c, "PRAGMA quick_check(1)");
    damage = check.step() ? check.text(0) : "no answer";
    // Its finding may start with "*** in database main ***" and a line break: one line for the message.
    if (damage.starts_with("*** in database main ***\n")) damage.erase(0, 25);
    std::replace(damage.begin(), damage.end(), '\n', ' ');
  } catch (const ApiError&) {
    if (sqlite3_errcode(c) != SQLITE_CORRUPT && sqlite3_errcode(c) != SQLITE_NOTADB) throw;
    damage = sqlite3_errmsg(c);
  }
  if (damage != "ok") throw damaged(damage);
  // WAL lets readers run beside the one writer, and several processes write to one file in turn.
  // synchronous=NORMAL is safe from corruption in WAL mode; a power loss may drop the last transactions only.
  execute_retrying(c, "PRAGMA journal_mode = WAL");
  if (Statement mode(c, "PRAGMA journal_mode"); mode.step() && mode.text(0) != "wal")
    throw InputError(fmt::format("{}: cannot use WAL mode here (the journal mode stays '{}')", name, mode.text(0)));
  execute(c, "PRAGMA synchronous = NORMAL");
  execute(c, "PRAGMA foreign_keys = ON");

  if (version < tuning_db_schema_version) {
    WriteTransaction transaction(c);
    // Another process may have migrated the file while this one waited for the lock: read the version again.
    version = user_version(c);
    for (int step = version; step < tuning_db_schema_version; ++step) execute(c, kMigrations[step]);
    execute(c, fmt::format("PRAGMA user_version = {}", tuning_db_schema_version).c_str());
    transaction.commit();
  }
  return db;
}

int TuningDb::schema_version() const { return user_version(db_.get()); }

std::int64_t TuningDb::gpu_id(const Gpu& gpu) const {
  Statement s(db_.get(), "SELECT id FROM gpus WHERE name = ? AND arch = ? AND sm_count = ?");
  s.bind(1, gpu.name);
  s.bind(2, gpu.arch);
  s.bind(3, gpu.sm_count);
  return s.step() ? s.integer(0) : 0;
}

std::int64_t TuningDb::ensure_gpu(const Gpu& gpu) {
  // The latest descriptor of a GPU wins: clocks and measured peaks may be refined over time.
  Statement s(db_.get(),
              "INSERT INTO gpus (name, arch, sm_count, descriptor_json) VALUES (?, ?, ?, ?) "
              "ON CONFLICT (name, arch, sm_count) DO UPDATE SET descriptor_json = excluded.descriptor_json "
              "RETURNING id");
  s.bind(1, gpu.name);
  s.bind(2, gpu.arch);
  s.bind(3, gpu.sm_count);
  s.bind(4, gpu_to_json(gpu));
  s.step();
  const std::int64_t id = s.integer(0);
  s.run();
  return id;
}

TuningDb::Inserted TuningDb::insert_measurement(const MeasurementRecord& m, std::int64_t gpu, bool skip_duplicate) {
  sqlite3* c = db_.get();
  const std::string key = problem_key(m.problem);
  const std::string samples = json(m.samples_us).dump();
  const std::int64_t created_at = m.created_at != 0 ? m.created_at : now_seconds();
  if (skip_duplicate) {
    Statement s(c,
                "SELECT 1 FROM measurements WHERE gpu_id = ? AND problem_key = ? AND kernel = ? AND status = ? "
                "AND created_at = ? AND samples_json = ? LIMIT 1");
    s.bind(1, gpu);
    s.bind(2, key);
    s.bind(3, m.kernel);
    s.bind(4, to_string(m.status));
    s.bind(5, created_at);
    s.bind(6, samples);
    if (s.step()) return {};
  }
  Statement insert(c,
                   "INSERT INTO measurements (gpu_id, problem_key, precision, kernel, family, status, error_text, "
                   "median_us, p10_us, p90_us, samples_json, rel_l2_error, energy_mj, registers, spill_bytes, "
                   "smem_bytes, predicted_us, sm_clock_start_mhz, sm_clock_end_mhz, driver, nvrtc, convgen, "
                   "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int i = 0;
  insert.bind(++i, gpu);
  insert.bind(++i, key);
  insert.bind(++i, to_string(m.problem.precision));
  insert.bind(++i, m.kernel);
  insert.bind(++i, family_of(m.kernel));
  insert.bind(++i, to_string(m.status));
  insert.bind(++i, m.error_text);
  insert.bind(++i, m.median_us);
  insert.bind(++i, m.p10_us);
  insert.bind(++i, m.p90_us);
  insert.bind(++i, samples);
  insert.bind(++i, m.rel_l2_error);
  insert.bind(++i, m.energy_mj);
  insert.bind(++i, m.registers);
  insert.bind(++i, m.spill_bytes);
  insert.bind(++i, m.smem_bytes);
  insert.bind(++i, m.predicted_us);
  insert.bind(++i, m.sm_clock_start_mhz);
  insert.bind(++i, m.sm_clock_end_mhz);
  insert.bind(++i, m.driver);
  insert.bind(++i, m.nvrtc);
  insert.bind(++i, m.convgen);
  insert.bind(++i, created_at);
  insert.run();
  Inserted result{.id = sqlite3_last_insert_rowid(c)};
  if (m.status != MeasurementStatus::ok) return result;

  // Replaces the best only with a strictly faster measurement: ties keep the one measured first.
  Statement best(c,
                 "INSERT INTO best (gpu_id, problem_key, precision, kernel, median_us, measurement_id) "
                 "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (gpu_id, problem_key, precision) DO UPDATE SET "
                 "kernel = excluded.kernel, median_us = excluded.median_us, measurement_id = excluded.measurement_id "
                 "WHERE excluded.median_us < best.median_us");
  best.bind(1, gpu);
  best.bind(2, key);
  best.bind(3, to_string(m.problem.precision));
  best.bind(4, m.kernel);
  best.bind(5, m.median_us);
  best.bind(6, result.id);
  best.run();
  result.best_changed = sqlite3_changes(c) > 0;
  return result;
}

std::int64_t TuningDb::record(const MeasurementRecord& measurement) {
  check_record(measurement);
  WriteTransaction transaction(db_.get());
  const Inserted inserted = insert_measurement(measurement, ensure_gpu(measurement.gpu), false);
  transaction.commit();
  return inserted.id;
}

std::optional<BestChoice> TuningDb::best(const Gpu& gpu, const Problem& problem) const {
  Statement s(db_.get(),
              "SELECT b.kernel, b.median_us, b.measurement_id, g.descriptor_json FROM best b "
              "JOIN gpus g ON g.id = b.gpu_id "
              "WHERE g.name = ? AND g.arch = ? AND g.sm_count = ? AND b.problem_key = ? AND b.precision = ?");
  s.bind(1, gpu.name);
  s.bind(2, gpu.arch);
  s.bind(3, gpu.sm_count);
  s.bind(4, problem_key(problem));
  s.bind(5, to_string(problem.precision));
  if (!s.step()) return std::nullopt;
  return BestChoice{.gpu = parse_gpu_json(s.text(3), path_.string()),
                    .problem = problem,
                    .kernel = s.text(0),
                    .median_us = s.real(1),
                    .measurement_id = s.integer(2)};
}

std::vector<BestChoice> TuningDb::list_best(const std::optional<Gpu>& gpu) const {
  std::string sql =
      "SELECT g.descriptor_json, b.problem_key, b.kernel, b.median_us, b.measurement_id FROM best b "
      "JOIN gpus g ON g.id = b.gpu_id";
  if (gpu) sql += " WHERE b.gpu_id = ?";
  sql += " ORDER BY g.name, g.arch, g.sm_count, b.problem_key";
  Statement s(db_.get(), sql);
  if (gpu) s.bind(1, gpu_id(*gpu));
  GpuCache gpus(path_.string());
  std::vector<BestChoice> out;
  while (s.step())
    out.push_back({.gpu = gpus.get(s.text(0)),
                   .problem = parse_problem_key(s.text(1)),
                   .kernel = s.text(2),
                   .median_us = s.real(3),
                   .measurement_id = s.integer(4)});
  return out;
}

std::vector<MeasurementRecord> TuningDb::measurements(const MeasurementFilter& filter) const {
  std::string sql =
      fmt::format("SELECT {} FROM measurements m JOIN gpus g ON g.id = m.gpu_id WHERE 1", kMeasurementColumns);
  if (filter.gpu) sql += " AND m.gpu_id = ?1";
  if (filter.problem) sql += " AND m.problem_key = ?2 AND m.precision = ?3";
  if (!filter.kernel.empty()) sql += " AND m.kernel = ?4";
  if (filter.status) sql += " AND m.status = ?5";
  sql += " ORDER BY m.created_at, m.id";
  Statement s(db_.get(), sql);
  if (filter.gpu) s.bind(1, gpu_id(*filter.gpu));
  if (filter.problem) {
    s.bind(2, problem_key(*filter.problem));
    s.bind(3, to_string(filter.problem->precision));
  }
  if (!filter.kernel.empty()) s.bind(4, filter.kernel);
  if (filter.status) s.bind(5, to_string(*filter.status));
  GpuCache gpus(path_.string());
  std::vector<MeasurementRecord> out;
  while (s.step()) out.push_back(read_measurement(s, gpus, path_.string()));
  return out;
}

std::vector<Gpu> TuningDb::gpus() const {
  Statement s(db_.get(), "SELECT descriptor_json FROM gpus ORDER BY name, arch, sm_count");
  std::vector<Gpu> out;
  while (s.step()) out.push_back(parse_gpu_json(s.text(0), path_.string()));
  return out;
}

PruneStats TuningDb::prune(const PruneOptions& options) {
  if (!options.not_best && !options.failed && !options.older_than_days && !options.everything)
    throw InputError("prune: nothing to remove: choose not-best, failed, older-than or everything");
  if (options.older_than_days && *options.older_than_days < 0)
    throw InputError(fmt::format("prune: older-than must be a number of days >= 0, got {}", *options.older_than_days));
  sqlite3* c = db_.get();
  WriteTransaction transaction(c);
  PruneStats stats;
  // ?1 is the GPU's id, bound only with a GPU filter; without one the clause is always true.
  const std::string where_gpu = options.gpu ? "gpu_id = ?1" : "1";
  const std::int64_t id = options.gpu ? gpu_id(*options.gpu) : 0;
  if (options.gpu && id == 0) return stats;  // nothing recorded for this GPU
  const auto remove = [&](const std::string& sql, std::optional<std::int64_t> second = std::nullopt) {
    Statement s(c, sql);
    if (options.gpu) s.bind(1, id);
    if (second) s.bind(2, *second);
    s.run();
    return static_cast<std::int64_t>(sqlite3_changes(c));
  };
  if (options.everything) {
    stats.best_removed += remove("DELETE FROM best WHERE " + where_gpu);
    remove("DELETE FROM calibration WHERE " + where_gpu);
    stats.measurements_removed += remove("DELETE FROM measurements WHERE " + where_gpu);
    remove(options.gpu ? "DELETE FROM gpus WHERE id = ?1" : "DELETE FROM gpus");
  } else {
    const std::string not_a_best = " AND id NOT IN (SELECT measurement_id FROM best)";
    if (options.failed)
      stats.measurements_removed += remove("DELETE FROM measurements WHERE " + where_gpu + " AND status != 'ok'");
    if (options.not_best)
      stats.measurements_removed += remove("DELETE FROM measurements WHERE " + where_gpu + not_a_best);
    if (options.older_than_days)
      stats.measurements_removed +=
          remove("DELETE FROM measurements WHERE " + where_gpu + " AND created_at < ?2" + not_a_best,
                 now_seconds() - static_cast<std::int64_t>(*options.older_than_days) * 86400);
  }
  transaction.commit();
  return stats;
}

std::string TuningDb::export_json(const std::optional<Gpu>& gpu) const {
  const std::vector<MeasurementRecord> records = measurements({.gpu = gpu});
  json gpus = json::array();
  std::vector<Gpu> seen;
  json items = json::array();
  for (const MeasurementRecord& m : records) {
    auto it = std::find_if(seen.begin(), seen.end(), [&](const Gpu& g) { return same_gpu(g, m.gpu); });
    if (it == seen.end()) {
      seen.push_back(m.gpu);
      gpus.push_back(json::parse(gpu_to_json(m.gpu)));
      it = seen.end() - 1;
    }
    items.push_back(measurement_to_json(m, static_cast<std::size_t>(it - seen.begin())));
  }
  const json out{
      {"format", kExportFormat},
      {"version", kExportVersion},
      {"exported_by", fmt::format("convgen {} ({})", build_version(), build_commit())},
      {"exported_at", now_seconds()},
      {"gpus", gpus},
      {"measurements", items},
  };
  return out.dump(1);
}

std::vector<MeasurementRecord> parse_export_json(std::string_view text, std::string_view source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // Not only parse errors: a number past a double's range is out_of_range.406 ("number overflow parsing '1e999'").
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: ..."; keep what follows the tag.
    std::string_view message = e.what();
    if (const auto tag_end = message.find("] "); tag_end != std::string_view::npos) message.remove_prefix(tag_end + 2);
    throw InputError(fmt::format("{}: not valid JSON: {}", source, message));
  }
  const JsonReader top(root, std::string(source));
  if (!root.contains("format") || root["format"] != kExportFormat)
    throw InputError(
        fmt::format("{}: not a convgen tuning export (key 'format' must be \"{}\")", source, kExportFormat));
  const std::int64_t version = top.integer("version");
  if (version < 1 || version > kExportVersion)
    throw InputError(fmt::format("{}: export format version {} is not one this convgen reads (1 to {})", source,
                                 version, kExportVersion));
  const json& gpu_list = top.at("gpus");
  const json& measurement_list = top.at("measurements");
  if (!gpu_list.is_array()) throw InputError(fmt::format("{}: key 'gpus' must be an array", source));
  if (!measurement_list.is_array()) throw InputError(fmt::format("{}: key 'measurements' must be an array", source));

  std::vector<Gpu> gpus;
  for (std::size_t i = 0; i < gpu_list.size(); ++i)
    gpus.push_back(parse_gpu_json(gpu_list[i].dump(), fmt::format("{}: gpus[{}]", source, i)));
  std::vector<MeasurementRecord> records;
  for (std::size_t i = 0; i < measurement_list.size(); ++i)
    records.push_back(measurement_from_json(measurement_list[i], gpus, fmt::format("{}: measurements[{}]", source, i)));
  return records;
}

ImportStats TuningDb::import_json(std::string_view text, const Gpu& local, bool allow_other_gpu,
                                  std::string_view source) {
  // Everything is checked before anything is written: an import is all or nothing.
  const std::vector<MeasurementRecord> records = parse_export_json(text, source);
  if (!allow_other_gpu) {
    for (const MeasurementRecord& m : records)
      if (!same_gpu(m.gpu, local))
        throw InputError(
            fmt::format("{}: records are for {}, not for this GPU, {}; import with --allow-other-gpu "
                        "to keep them anyway",
                        source, describe_gpu(m.gpu), describe_gpu(local)));
  }

  WriteTransaction transaction(db_.get());
  const ImportStats stats = insert_new(records);
  transaction.commit();
  return stats;
}

ImportStats TuningDb::insert_new(std::span<const MeasurementRecord> records) {
  ImportStats stats;
  std::map<std::string, std::int64_t> gpu_ids;  // by descriptor name, arch and SM count
  for (const MeasurementRecord& m : records) {
    const std::string gpu_key = describe_gpu(m.gpu);
    auto it = gpu_ids.find(gpu_key);
    if (it == gpu_ids.end()) it = gpu_ids.emplace(gpu_key, ensure_gpu(m.gpu)).first;
    const Inserted inserted = insert_measurement(m, it->second, true);
    if (inserted.id == 0) {
      ++stats.duplicates_skipped;
      continue;
    }
    ++stats.measurements_imported;
    if (inserted.best_changed) ++stats.best_updated;
  }
  return stats;
}

std::vector<ImportStats> TuningDb::merge(std::span<const std::filesystem::path> inputs, bool allow_other_gpus) {
  // Everything is read and checked before anything is written: a merge is all or nothing.
  std::vector<std::vector<MeasurementRecord>> records;
  std::vector<std::vector<Gpu>> gpus_of;
  for (const std::filesystem::path& input : inputs) {
    if (!std::filesystem::is_regular_file(input))
      throw InputError(fmt::format("{}: no such tuning database", input.string()));
    const TuningDb db = open(input);
    records.push_back(db.measurements());
    gpus_of.push_back(db.gpus());
  }
  if (!allow_other_gpus) {
    std::vector<Gpu> allowed = gpus();
    std::string whose = fmt::format("the GPU {} holds", path_.string());
    if (allowed.size() > 1) whose = fmt::format("the GPUs {} holds", path_.string());
    for (std::size_t i = 0; i < inputs.size() && allowed.empty(); ++i)
      if (!gpus_of[i].empty()) {
        allowed = {gpus_of[i].front()};
        whose = fmt::format("the GPU of {}, the first input", inputs[i].string());
      }
    std::string refused;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      for (const Gpu& g : gpus_of[i])
        if (std::none_of(allowed.begin(), allowed.end(), [&](const Gpu& a) { return same_gpu(a, g); }))
          refused += fmt::format("{}{}: {}", refused.empty() ? "" : ", ", inputs[i].string(), describe_gpu(g));
    if (!refused.empty()) {
      std::string allowed_names;
      for (const Gpu& g : allowed) allowed_names += (allowed_names.empty() ? "" : ", ") + describe_gpu(g);
      throw InputError(
          fmt::format("merge: records of another GPU than {} ({}): {}; merge with --allow-other-gpus to "
                      "keep them anyway",
                      allowed_names, whose, refused));
    }
  }
  WriteTransaction transaction(db_.get());
  std::vector<ImportStats> stats;
  for (const std::vector<MeasurementRecord>& input : records) stats.push_back(insert_new(input));
  transaction.commit();
  return stats;
}

void TuningDb::save_calibration(const Gpu& gpu, const StoredCalibration& calibration) {
  WriteTransaction transaction(db_.get());
  Statement s(db_.get(),
              "INSERT OR REPLACE INTO calibration (gpu_id, model_version, coefficients_json, fitted_at, samples) "
              "VALUES (?, ?, ?, ?, ?)");
  s.bind(1, ensure_gpu(gpu));
  s.bind(2, calibration.model_version);
  s.bind(3, calibration.coefficients_json);
  s.bind(4, calibration.fitted_at != 0 ? calibration.fitted_at : now_seconds());
  s.bind(5, calibration.samples);
  s.run();
  transaction.commit();
}

std::optional<StoredCalibration> TuningDb::load_calibration(const Gpu& gpu, int model_version) const {
  Statement s(db_.get(),
              "SELECT coefficients_json, fitted_at, samples FROM calibration WHERE gpu_id = ? AND model_version = ?");
  s.bind(1, gpu_id(gpu));
  s.bind(2, model_version);
  if (!s.step()) return std::nullopt;
  return StoredCalibration{.model_version = model_version,
                           .coefficients_json = s.text(0),
                           .fitted_at = s.integer(1),
                           .samples = static_cast<int>(s.integer(2))};
}

}  // namespace convgen
