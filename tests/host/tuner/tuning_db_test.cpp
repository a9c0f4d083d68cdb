// tuning_db_test: the tuning database: schema and migrations, recording and best choices, refusals, concurrency.
#include "tuner/tuning_db.hpp"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "convgen/error.hpp"
#include "tests/host/tuner/fixtures.hpp"
#include "tuner/sqlite_check.hpp"

namespace convgen {
namespace {

using namespace testing_tuner;

// Runs one query on its own connection and returns the first column of the first row as text.
std::string query_text(const std::filesystem::path& path, const char* sql) {
  sqlite3* raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  SqliteHandle db(raw);
  Statement s(db.get(), sql);
  return s.step() ? s.text(0) : std::string{};
}

TEST(TuningDb, OpeningCreatesTheFileAndItsFolderInWalModeAtTheCurrentSchemaVersion) {
  ScratchDir dir;
  const auto path = dir / "nested/folder/tuning.sqlite";
  TuningDb db = TuningDb::open(path);
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(db.schema_version(), tuning_db_schema_version);
  EXPECT_EQ(query_text(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_text(path, "PRAGMA user_version"), std::to_string(tuning_db_schema_version));
}

TEST(TuningDb, TheDefaultPathIsInTheUserDataFolder) {
  const char* old = std::getenv("CONVGEN_DATA_DIR");
  const std::string saved = old ? old : "";
  setenv("CONVGEN_DATA_DIR", "/tmp/convgen-data-for-test", 1);
  EXPECT_EQ(TuningDb::default_path(), std::filesystem::path("/tmp/convgen-data-for-test/tuning.sqlite"));
  if (old) {
    setenv("CONVGEN_DATA_DIR", saved.c_str(), 1);
  } else {
    unsetenv("CONVGEN_DATA_DIR");
  }
}

TEST(TuningDb, ARecordReadsBackWithEveryField) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  MeasurementRecord m = measured(h100(), conv3x3(), igemm(64), 41.25);
  m.energy_mj = 0.75;
  m.predicted_us = 38.5;
  m.spill_bytes = 8;
  const std::int64_t id = db.record(m);
  EXPECT_GT(id, 0);
  EXPECT_EQ(db.measurements(), std::vector{with_id(m, id)});
  EXPECT_EQ(db.gpus(), std::vector{h100()});
}

TEST(TuningDb, ARecordWithoutACreationTimeGetsTheCurrentTime) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  const auto before = std::chrono::system_clock::now().time_since_epoch();
  db.record(measured(h100(), conv3x3(), igemm(64), 41.0, /*created_at=*/0));
  const std::int64_t created = db.measurements()[0].created_at;
  EXPECT_GE(created, std::chrono::duration_cast<std::chrono::seconds>(before).count());
  EXPECT_LE(created, std::chrono::duration_cast<std::chrono::seconds>(before).count() + 60);
}

TEST(TuningDb, AFasterMeasurementReplacesTheBestAndASlowerOneDoesNot) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  EXPECT_EQ(db.best(h100(), conv3x3()), std::nullopt);
  db.record(measured(h100(), conv3x3(), igemm(64), 50.0));
  const std::int64_t faster = db.record(measured(h100(), conv3x3(), igemm(128), 40.0));
  db.record(measured(h100(), conv3x3(), igemm(32), 45.0));
  const auto best = db.best(h100(), conv3x3());
  ASSERT_TRUE(best);
  EXPECT_EQ(
      *best,
      (BestChoice{
          .gpu = h100(), .problem = conv3x3(), .kernel = igemm(128), .median_us = 40.0, .measurement_id = faster}));
}

TEST(TuningDb, AnEqualTimeKeepsTheKernelMeasuredFirst) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 40.0));
  db.record(measured(h100(), conv3x3(), igemm(128), 40.0));
  EXPECT_EQ(db.best(h100(), conv3x3())->kernel, igemm(64));
}

TEST(TuningDb, FailedMeasurementsAreKeptButNeverBest) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.record(failed(h100(), conv3x3(), igemm(128), MeasurementStatus::wrong_result, "rel_l2 0.5 > 1e-05"));
  EXPECT_EQ(db.best(h100(), conv3x3()), std::nullopt);
  db.record(measured(h100(), conv3x3(), igemm(64), 40.0));
  db.record(failed(h100(), conv3x3(), igemm(32), MeasurementStatus::resources, "too many resources requested"));
  EXPECT_EQ(db.best(h100(), conv3x3())->kernel, igemm(64));
  const auto failures = db.measurements({.status = MeasurementStatus::wrong_result});
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].error_text, "rel_l2 0.5 > 1e-05");
}

TEST(TuningDb, TheBestChoiceIsPerGpuProblemAndPrecision) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 40.0));
  db.record(measured(h100(), conv3x3(Precision::tf32), igemm(128), 20.0));
  db.record(measured(h200(), conv3x3(), igemm(32), 35.0));
  db.record(measured(h100(), conv1x1(), igemm(128), 60.0));
  EXPECT_EQ(db.best(h100(), conv3x3())->kernel, igemm(64));
  EXPECT_EQ(db.best(h100(), conv3x3(Precision::tf32))->kernel, igemm(128));
  EXPECT_EQ(db.best(h200(), conv3x3())->kernel, igemm(32));
  EXPECT_EQ(db.best(h200(), conv1x1()), std::nullopt);
  EXPECT_EQ(db.list_best().size(), 4u);
  const auto h200_best = db.list_best(h200());
  ASSERT_EQ(h200_best.size(), 1u);
  EXPECT_EQ(h200_best[0].kernel, igemm(32));
}

TEST(TuningDb, AGpuIsKnownByNameArchAndSmCountAndKeepsItsLatestDescriptor) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 40.0));
  Gpu reclocked = h100();
  reclocked.clock_mhz = 1755;
  db.record(measured(reclocked, conv3x3(), igemm(128), 45.0));
  EXPECT_EQ(db.gpus(), std::vector{reclocked});
  EXPECT_EQ(db.best(h100(), conv3x3())->kernel, igemm(64));
  Gpu fewer_sms = h100();
  fewer_sms.sm_count = 114;
  EXPECT_EQ(db.best(fewer_sms, conv3x3()), std::nullopt);
  EXPECT_TRUE(same_gpu(h100(), reclocked));
  EXPECT_FALSE(same_gpu(h100(), fewer_sms));
}

TEST(TuningDb, MeasurementsFilterByGpuProblemKernelAndStatus) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 40.0));
  db.record(measured(h100(), conv3x3(), igemm(128), 30.0));
  db.record(measured(h100(), conv1x1(), igemm(64), 50.0));
  db.record(measured(h200(), conv3x3(), igemm(64), 35.0));
  db.record(failed(h100(), conv3x3(), igemm(32), MeasurementStatus::compile_error, "error: x"));
  EXPECT_EQ(db.measurements().size(), 5u);
  EXPECT_EQ(db.measurements({.gpu = h100()}).size(), 4u);
  EXPECT_EQ(db.measurements({.gpu = h100(), .problem = conv3x3()}).size(), 3u);
  EXPECT_EQ(db.measurements({.problem = conv3x3(), .kernel = igemm(64)}).size(), 2u);
  EXPECT_EQ(db.measurements({.status = MeasurementStatus::ok}).size(), 4u);
  EXPECT_EQ(db.measurements({.problem = conv3x3(Precision::tf32)}).size(), 0u);
}

TEST(TuningDb, RecordRefusesAnOkMeasurementWithoutAPositiveTime) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "t.sqlite");
  MeasurementRecord m = measured(h100(), conv3x3(), igemm(64), 0.0);
  try {
    db.record(m);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "measurement of igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1: an ok measurement must have a "
                 "positive median, got 0");
  }
  m.median_us = 10;
  m.gpu = Gpu{};
  EXPECT_THROW(db.record(m), InputError);
  m.gpu = h100();
  m.kernel.clear();
  EXPECT_THROW(db.record(m), InputError);
  EXPECT_TRUE(db.measurements().empty());
}

// The schema as version 1 created it, copied here on purpose: migration 1 must never change.
constexpr const char* kVersion1Schema = R"sql(
CREATE TABLE gpus (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, arch TEXT NOT NULL, sm_count INTEGER NOT NULL,
  descriptor_json TEXT NOT NULL, UNIQUE (name, arch, sm_count));
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY, gpu_id INTEGER NOT NULL REFERENCES gpus (id), problem_key TEXT NOT NULL,
  precision TEXT NOT NULL, kernel TEXT NOT NULL, family TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'compile_error', 'resources', 'launch_error', 'wrong_result')),
  error_text TEXT NOT NULL DEFAULT '', median_us REAL NOT NULL DEFAULT 0, p10_us REAL NOT NULL DEFAULT 0,
  p90_us REAL NOT NULL DEFAULT 0, samples_json TEXT NOT NULL DEFAULT '[]', rel_l2_error REAL NOT NULL DEFAULT 0,
  energy_mj REAL, registers INTEGER NOT NULL DEFAULT 0, spill_bytes INTEGER NOT NULL DEFAULT 0,
  smem_bytes INTEGER NOT NULL DEFAULT 0, sm_clock_start_mhz REAL NOT NULL DEFAULT 0,
  sm_clock_end_mhz REAL NOT NULL DEFAULT 0, driver TEXT NOT NULL DEFAULT '', nvrtc TEXT NOT NULL DEFAULT '',
  convgen TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);
CREATE INDEX measurements_by_problem ON measurements (gpu_id, problem_key, precision);
CREATE TABLE best (
  gpu_id INTEGER NOT NULL REFERENCES gpus (id), problem_key TEXT NOT NULL, precision TEXT NOT NULL,
  kernel TEXT NOT NULL, median_us REAL NOT NULL, measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  PRIMARY KEY (gpu_id, problem_key, precision));
PRAGMA user_version = 1;
)sql";

void create_file(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  SqliteHandle db(raw);
  execute(db.get(), sql.c_str());
}

TEST(TuningDb, AVersionOneFileIsMigratedAndKeepsItsRecords) {
  ScratchDir dir;
  const auto path = dir / "v1.sqlite";
  const std::string key = problem_key(conv3x3());
  create_file(path, std::string(kVersion1Schema) +
                        fmt::format("INSERT INTO gpus VALUES (1, '{}', 'sm_90', 132, '{}');"
                                    "INSERT INTO measurements (id, gpu_id, problem_key, precision, kernel, family, "
                                    "status, median_us, samples_json, created_at) VALUES (7, 1, '{}', 'fp32', '{}', "
                                    "'igemm', 'ok', 42.5, '[42.0,42.5,43.0]', 1600000000);"
                                    "INSERT INTO best VALUES (1, '{}', 'fp32', '{}', 42.5, 7);",
                                    h100().name, gpu_to_json(h100()), key, igemm(64), key, igemm(64)));
  TuningDb db = TuningDb::open(path);
  EXPECT_EQ(db.schema_version(), tuning_db_schema_version);
  const auto records = db.measurements();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].id, 7);
  EXPECT_EQ(records[0].samples_us, (std::vector{42.0, 42.5, 43.0}));
  EXPECT_EQ(records[0].predicted_us, std::nullopt);  // the column version 2 added
  EXPECT_EQ(db.best(h100(), conv3x3())->measurement_id, 7);
  // The calibration table version 2 added works, and a new record goes in beside the old one.
  db.save_calibration(h100(), {.model_version = 1, .coefficients_json = "{}", .fitted_at = 5, .samples = 3});
  EXPECT_EQ(db.load_calibration(h100(), 1),
            (StoredCalibration{.model_version = 1, .coefficients_json = "{}", .fitted_at = 5, .samples = 3}));
  db.record(measured(h100(), conv3x3(), igemm(128), 30.0));
  EXPECT_EQ(db.best(h100(), conv3x3())->kernel, igemm(128));
}

TEST(TuningDb, KernelNamesOfEarlierVersionsAreRewrittenInTheirFamilysSchema) {
  // A file written before the families had their own parameters: direct names carried "_st1_sk1_v1".
  ScratchDir dir;
  const auto path = dir / "old-names.sqlite";
  const std::string key = problem_key(conv1x1());
  const std::string old_direct = "direct_m16_n64_k8_tm4_tn4_st1_sk1_v1";
  create_file(path,
              std::string(kVersion1Schema) +
                  fmt::format("INSERT INTO gpus VALUES (1, '{}', 'sm_90', 132, '{}');"
                              "INSERT INTO measurements (id, gpu_id, problem_key, precision, kernel, family, "
                              "status, median_us, samples_json, created_at) VALUES (3, 1, '{}', 'fp32', '{}', "
                              "'direct', 'ok', 9.5, '[9.5]', 1600000000), (4, 1, '{}', 'fp32', '{}', 'igemm', "
                              "'ok', 12.0, '[12.0]', 1600000000);"
                              "INSERT INTO best VALUES (1, '{}', 'fp32', '{}', 9.5, 3);",
                              h100().name, gpu_to_json(h100()), key, old_direct, key, igemm(64), key, old_direct));
  TuningDb db = TuningDb::open(path);
  const auto records = db.measurements();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kernel, "direct_m16_n64_k8_tm4_tn4");
  EXPECT_EQ(records[1].kernel, igemm(64));  // igemm names were already in igemm's schema
  const auto best = db.best(h100(), conv1x1());
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->kernel, "direct_m16_n64_k8_tm4_tn4");
  EXPECT_EQ(parse_kernel_name(best->kernel), parse_kernel_name(old_direct));
}

TEST(TuningDb, TheFamilyColumnIsTheRegisteredFamilyThatPrefixesTheKernelName) {
  ScratchDir dir;
  const auto path = dir / "t.sqlite";
  {
    TuningDb db = TuningDb::open(path);
    db.record(measured(h100(), conv3x3(), igemm(64), 30.0));
  }
  EXPECT_EQ(query_text(path, "SELECT family FROM measurements"), "igemm");
}

TEST(TuningDb, AFileWithANewerSchemaIsRefused) {
  ScratchDir dir;
  const auto path = dir / "future.sqlite";
  create_file(path, "CREATE TABLE x (y); PRAGMA user_version = 9;");
  try {
    TuningDb::open(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path.string() + ": schema version 9 is newer than this convgen knows (3); use a newer convgen");
  }
}

TEST(TuningDb, AFileThatIsNotADatabaseIsRefused) {
  ScratchDir dir;
  const auto path = dir / "notes.sqlite";
  std::ofstream(path) << "these are not the tables you are looking for, but the header must be long enough\n";
  try {
    TuningDb::open(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": not a tuning database (the file is not SQLite)");
  }
}

TEST(TuningDb, TheSqliteCheckNamesTheCallTheErrorAndTheLine) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &raw), SQLITE_OK);
  SqliteHandle db(raw);
  const int line = __LINE__ + 2;
  try {
    CONVGEN_SQLITE_CHECK(db.get(), sqlite3_exec(db.get(), "SELEC 1", nullptr, nullptr, nullptr));
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("{}:{}: sqlite3_exec(db.get(), \"SELEC 1\", nullptr, nullptr, nullptr) failed: SQL logic "
                          "error (near \"SELEC\": syntax error)",
                          __FILE__, line));
  }
}

// Records `count` measurements for two problems, times spread so that each writer has its own fastest one.
void write_many(const std::filesystem::path& path, int writer, int count) {
  TuningDb db = TuningDb::open(path);
  for (int i = 0; i < count; ++i) {
    const double time = 100.0 + (i * 37 % count) + writer * 0.25;
    db.record(measured(h100(), i % 2 ? conv1x1() : conv3x3(), igemm(32 << (i % 3)), time));
  }
}

// Checks that the best of each problem is the fastest ok measurement and points at it.
void expect_consistent_best(const TuningDb& db) {
  for (const Problem& p : {conv3x3(), conv1x1()}) {
    const auto all = db.measurements({.gpu = h100(), .problem = p, .status = MeasurementStatus::ok});
    ASSERT_FALSE(all.empty());
    const auto fastest = std::min_element(all.begin(), all.end(),
                                          [](const auto& a, const auto& b) { return a.median_us < b.median_us; });
    const auto best = db.best(h100(), p);
    ASSERT_TRUE(best);
    EXPECT_EQ(best->median_us, fastest->median_us);
    const auto pointed = db.measurements({.gpu = h100(), .problem = p, .kernel = best->kernel});
    EXPECT_TRUE(std::any_of(pointed.begin(), pointed.end(), [&](const MeasurementRecord& m) {
      return m.id == best->measurement_id && m.median_us == best->median_us;
    }));
  }
}

// Runs write(0) and write(1) in two child processes at once and expects both to exit 0. Gtest assertions
// cannot run in a child, so a child reports only its exit status (and _exits, so no test state is torn down).
void in_two_processes_at_once(const std::function<void(int writer)>& write) {
  // Both children wait on this pipe until the parent closes it, so that their writes overlap.
  int start[2];
  ASSERT_EQ(pipe(start), 0);
  std::vector<pid_t> children;
  for (int writer = 0; writer < 2; ++writer) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(start[1]);
      char byte = 0;
      [[maybe_unused]] const auto got = read(start[0], &byte, 1);  // returns 0 when the parent closes its end
      int status = 0;
      try {
        write(writer);
      } catch (const std::exception& e) {
        fmt::print(stderr, "writer {}: {}\n", writer, e.what());
        status = 1;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  close(start[0]);
  close(start[1]);
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

TEST(TuningDb, TwoProcessesWritingToOneFileAtOnceLoseNothing) {
  ScratchDir dir;
  const auto path = dir / "shared.sqlite";
  constexpr int kPerWriter = 200;
  in_two_processes_at_once([&](int writer) { write_many(path, writer, kPerWriter); });
  const TuningDb db = TuningDb::open(path);
  EXPECT_EQ(db.measurements().size(), 2u * kPerWriter);
  EXPECT_EQ(db.gpus().size(), 1u);
  EXPECT_EQ(db.list_best().size(), 2u);
  expect_consistent_best(db);
  EXPECT_EQ(db.best(h100(), conv3x3())->median_us, 100.0);  // writer 0's fastest beats writer 1's 100.25
}

TEST(TuningDb, ThreadsWithTheirOwnConnectionsLoseNothing) {
  ScratchDir dir;
  const auto path = dir / "threads.sqlite";
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        write_many(path, t, kPerThread);
      } catch (const std::exception& e) {
        fmt::print(stderr, "thread {}: {}\n", t, e.what());
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  const TuningDb db = TuningDb::open(path);
  EXPECT_EQ(db.measurements().size(), static_cast<std::size_t>(kThreads * kPerThread));
  expect_consistent_best(db);
}

// --- faults: a writer killed, a damaged file ------------------------------------------------------------------

// The child of one kill round: writes records for ever (every 8th step an import of 4, one transaction) and,
// after each commit, sends the committed medians down `report`; the medians are unique across rounds.
[[noreturn]] void write_until_killed(const std::filesystem::path& path, const Gpu& gpu, int round, int report) {
  int status = 0;
  try {
    TuningDb db = TuningDb::open(path);
    nlohmann::json batch = nlohmann::json::parse(db.export_json());
    for (std::int64_t step = 0;; ++step) {
      const auto median = [&](std::int64_t i) { return 1.0 + round * 1e6 + step * 8 + i; };
      std::vector<double> committed;
      if (step % 8 == 7 && !batch["measurements"].empty()) {
        nlohmann::json items = nlohmann::json::array();
        for (int i = 0; i < 4; ++i) {
          nlohmann::json item = batch["measurements"][0];
          item["median_us"] = median(i);
          item["samples_us"] = {median(i)};  // an import skips a record with the same samples as one it holds
          items.push_back(item);
          committed.push_back(median(i));
        }
        batch["measurements"] = items;
        db.import_json(batch.dump(), gpu, false, "batch");
      } else {
        db.record(measured(gpu, step % 2 ? conv1x1() : conv3x3(), igemm(32 << (step % 3)), median(0)));
        committed.push_back(median(0));
        if (batch["measurements"].empty()) batch = nlohmann::json::parse(db.export_json());
      }
      for (const double m : committed)
        if (write(report, &m, sizeof m) != sizeof m) _exit(3);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "writer of round {}: {}\n", round, e.what());
    status = 1;
  }
  _exit(status);
}

TEST(TuningDb, AWriterKilledAtRandomMomentsNeverLosesACommittedRecordOrDamagesTheFile) {
  ScratchDir dir;
  const auto path = dir / "killed.sqlite";
  const Gpu gpu = h100();
  constexpr int kRounds = 50;
  const unsigned seed = std::random_device{}();
  std::mt19937 random(seed);
  // Even rounds kill from 0 to 25 ms after the fork: in the open (creating the schema in round 0, recovering the WAL
  // after it) or in the first writes. Odd rounds wait for the first commit, then kill from 0 to 20 ms later: in
  // records and imports, at any point of a transaction.
  std::uniform_int_distribution<int> delay_us(0, 25000);
  std::uniform_int_distribution<int> after_commit_us(0, 20000);
  std::set<double> committed;
  int survived = 0, killed_before_a_commit = 0;
  for (int round = 0; round < kRounds; ++round) {
    int report[2];
    ASSERT_EQ(pipe(report), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(report[0]);
      write_until_killed(path, gpu, round, report[1]);
    }
    close(report[1]);
    std::size_t reported = 0;
    if (round % 2 == 1) {
      double first = 0;
      if (read(report[0], &first, sizeof first) == sizeof first) {
        committed.insert(first);
        ++reported;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(after_commit_us(random)));
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status)) << "the writer stopped before the kill (exit " << WEXITSTATUS(status) << ")";
    for (double m = 0; read(report[0], &m, sizeof m) == sizeof m; ++reported) committed.insert(m);
    close(report[0]);
    if (reported == 0) ++killed_before_a_commit;

    // The file opens (recovering the WAL), passes SQLite's full integrity check and holds every reported record.
    std::set<double> present;
    {
      const TuningDb db = TuningDb::open(path);
      for (const MeasurementRecord& m : db.measurements()) present.insert(m.median_us);
      if (!db.measurements({.problem = conv3x3()}).empty() && !db.measurements({.problem = conv1x1()}).empty())
        expect_consistent_best(db);
    }
    const std::string integrity = query_text(path, "PRAGMA integrity_check");
    EXPECT_EQ(integrity, "ok") << "round " << round;
    std::vector<double> lost;
    std::set_difference(committed.begin(), committed.end(), present.begin(), present.end(), std::back_inserter(lost));
    EXPECT_TRUE(lost.empty()) << "round " << round << ": " << lost.size() << " committed records lost";
    if (lost.empty() && integrity == "ok") ++survived;
  }
  fmt::print(
      "kill -9 of a writer: {} of {} kills survived with 0 committed records lost ({} records committed, {} "
      "kills before the first commit of their round; seed {})\n",
      survived, kRounds, committed.size(), killed_before_a_commit, seed);
  EXPECT_EQ(survived, kRounds);
}

// A database with records, closed (its WAL checkpointed into the file), to damage.
std::filesystem::path filled_database(const ScratchDir& dir) {
  const auto path = dir / "damaged.sqlite";
  {
    TuningDb db = TuningDb::open(path);
    for (int i = 0; i < 200; ++i) db.record(measured(h100(), i % 2 ? conv1x1() : conv3x3(), igemm(64), 10.0 + i));
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "damaged.sqlite-wal")) << "the last close checkpoints the WAL";
  return path;
}

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Opens the damaged file, expects the refusal, and expects the file unchanged.
void expect_refused_and_untouched(const std::filesystem::path& path, const std::string& expected_message_start) {
  const std::string before = file_bytes(path);
  try {
    TuningDb::open(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.substr(0, expected_message_start.size()), expected_message_start);
    EXPECT_TRUE(
        message.ends_with("; convgen leaves the file as it is: restore a copy, or move it away to start a "
                          "new one"))
        << message;
  }
  EXPECT_EQ(file_bytes(path), before) << "a damaged database must not be written to";
}

TEST(TuningDb, ADatabaseWithADamagedPageIsRefusedAndNeverOverwritten) {
  ScratchDir dir;
  const auto path = filled_database(dir);
  {
    // Zeroes the middle of the third page: a b-tree page of the measurements table.
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    const int page = std::stoi(query_text(path, "PRAGMA page_size"));
    file.seekp(2 * page + 8);
    const std::string zeros(page / 2, '\0');
    file.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  expect_refused_and_untouched(path, path.string() + ": the tuning database is damaged (");
}

TEST(TuningDb, ATruncatedDatabaseIsRefusedAndNeverOverwritten) {
  ScratchDir dir;
  const auto path = filled_database(dir);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  expect_refused_and_untouched(path, path.string() + ": the tuning database is damaged (");
}

// --- export and import -----------------------------------------------------------------------------------------

// Drops what differs between two databases holding the same records: the row ids.
std::vector<MeasurementRecord> without_ids(std::vector<MeasurementRecord> records) {
  for (auto& m : records) m.id = 0;
  return records;
}
std::vector<BestChoice> without_ids(std::vector<BestChoice> best) {
  for (auto& b : best) b.measurement_id = 0;
  return best;
}

void fill(TuningDb& db) {
  MeasurementRecord with_energy = measured(h100(), conv3x3(), igemm(64), 41.0 + 1.0 / 3);
  with_energy.energy_mj = 0.123456789012345;
  with_energy.predicted_us = 39.0;
  db.record(with_energy);
  db.record(measured(h100(), conv3x3(), igemm(128), 38.0));
  db.record(measured(h100(), conv1x1(), igemm(32), 55.0));
  db.record(
      failed(h100(), conv1x1(), igemm(128), MeasurementStatus::launch_error, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"));
}

TEST(TuningDb, AnExportImportedIntoAnEmptyDatabaseGivesTheSameRecords) {
  ScratchDir dir;
  TuningDb source = TuningDb::open(dir / "a.sqlite");
  fill(source);
  TuningDb target = TuningDb::open(dir / "b.sqlite");
  const ImportStats stats = target.import_json(source.export_json(), h100(), false);
  EXPECT_EQ(stats, (ImportStats{.measurements_imported = 4, .duplicates_skipped = 0, .best_updated = 3}));
  EXPECT_EQ(without_ids(target.measurements()), without_ids(source.measurements()));
  EXPECT_EQ(without_ids(target.list_best()), without_ids(source.list_best()));
}

TEST(TuningDb, ImportingTheSameExportTwiceSkipsTheDuplicates) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  fill(db);
  const ImportStats stats = db.import_json(db.export_json(), h100(), false);
  EXPECT_EQ(stats, (ImportStats{.measurements_imported = 0, .duplicates_skipped = 4, .best_updated = 0}));
  EXPECT_EQ(db.measurements().size(), 4u);
}

TEST(TuningDb, ImportReplacesABestChoiceOnlyWithAFasterOne) {
  ScratchDir dir;
  TuningDb here = TuningDb::open(dir / "here.sqlite");
  here.record(measured(h100(), conv3x3(), igemm(64), 30.0));
  here.record(measured(h100(), conv1x1(), igemm(64), 80.0));
  TuningDb there = TuningDb::open(dir / "there.sqlite");
  there.record(measured(h100(), conv3x3(), igemm(128), 35.0));
  there.record(measured(h100(), conv1x1(), igemm(128), 60.0));
  const ImportStats stats = here.import_json(there.export_json(), h100(), false);
  EXPECT_EQ(stats.measurements_imported, 2);
  EXPECT_EQ(stats.best_updated, 1);
  EXPECT_EQ(here.best(h100(), conv3x3())->kernel, igemm(64));
  EXPECT_EQ(here.best(h100(), conv1x1())->kernel, igemm(128));
}

TEST(TuningDb, ImportRefusesRecordsOfAnotherGpuNamingBothAndWritesNothing) {
  ScratchDir dir;
  TuningDb there = TuningDb::open(dir / "there.sqlite");
  there.record(measured(h100(), conv3x3(), igemm(64), 30.0));
  there.record(measured(h200(), conv3x3(), igemm(64), 25.0));
  TuningDb here = TuningDb::open(dir / "here.sqlite");
  try {
    here.import_json(there.export_json(), h100(), false, "h200.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "h200.json: records are for " + describe_gpu(h200()) + ", not for this GPU, " +
                                         describe_gpu(h100()) + "; import with --allow-other-gpu to keep them anyway");
  }
  EXPECT_TRUE(here.measurements().empty());
  const ImportStats stats = here.import_json(there.export_json(), h100(), true);
  EXPECT_EQ(stats.measurements_imported, 2);
  EXPECT_EQ(here.best(h200(), conv3x3())->median_us, 25.0);
}

TEST(TuningDb, ExportOfOneGpuHoldsOnlyItsRecords) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 30.0));
  db.record(measured(h200(), conv3x3(), igemm(64), 25.0));
  TuningDb other = TuningDb::open(dir / "b.sqlite");
  EXPECT_EQ(other.import_json(db.export_json(h200()), h200(), false).measurements_imported, 1);
  EXPECT_EQ(other.gpus(), std::vector{h200()});
}

void expect_import_error(const std::string& text, const std::string& message) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  try {
    db.import_json(text, h100(), true, "in.json");
    FAIL() << "expected InputError for " << text;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
  EXPECT_TRUE(db.measurements().empty());
}

TEST(TuningDb, ImportOfABadFileSaysWhatIsWrongAndWhere) {
  expect_import_error("{\"format\": \"something-else\"}",
                      "in.json: not a convgen tuning export (key 'format' must be \"convgen-tuning\")");
  expect_import_error("{\"format\": \"convgen-tuning\", \"version\": 7, \"gpus\": [], \"measurements\": []}",
                      "in.json: export format version 7 is not one this convgen reads (1 to 1)");
  expect_import_error("{\"format\": \"convgen-tuning\", \"version\": 1, \"gpus\": {}, \"measurements\": []}",
                      "in.json: key 'gpus' must be an array");

  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 30.0));
  db.record(measured(h100(), conv3x3(), igemm(128), 35.0));
  auto j = nlohmann::json::parse(db.export_json());
  j["measurements"][1]["median_us"] = "fast";
  expect_import_error(j.dump(), "in.json: measurements[1]: key 'median_us' must be a number, got \"fast\"");
  j = nlohmann::json::parse(db.export_json());
  j["measurements"][0]["status"] = "great";
  expect_import_error(j.dump(),
                      "in.json: measurements[0]: key 'status' must be one of ok, compile_error, "
                      "resources, launch_error, wrong_result, got 'great'");
  j = nlohmann::json::parse(db.export_json());
  j["measurements"][0]["gpu"] = 3;
  expect_import_error(j.dump(), "in.json: measurements[0]: key 'gpu' must index the 'gpus' array (0 to 0), got 3");
  j = nlohmann::json::parse(db.export_json());
  j["measurements"][1].erase("kernel");
  expect_import_error(j.dump(), "in.json: measurements[1]: key 'kernel' is missing");
}

TEST(TuningDb, ImportOfTextThatIsNotJsonSaysSo) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  try {
    db.import_json("not json", h100(), false, "in.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("in.json: not valid JSON: ", 0), 0u) << e.what();
  }
}

TEST(TuningDb, ImportOfANumberPastADoublesRangeSaysSo) {
  // The JSON library throws out_of_range (406), not parse_error, for it: it must still be an InputError.
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  try {
    db.import_json("{\"format\": \"convgen-tuning\", \"version\": 1e999}", h100(), false, "in.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "in.json: not valid JSON: number overflow parsing '1e999'");
  }
}

// --- prune -------------------------------------------------------------------------------------------------------

TEST(TuningDb, PruneNotBestKeepsOnlyTheBestMeasurements) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  fill(db);
  const PruneStats stats = db.prune({.not_best = true});
  EXPECT_EQ(stats, (PruneStats{.measurements_removed = 2, .best_removed = 0}));
  EXPECT_EQ(db.measurements().size(), 2u);
  EXPECT_EQ(db.best(h100(), conv3x3())->kernel, igemm(128));
  EXPECT_EQ(db.best(h100(), conv1x1())->kernel, igemm(32));
}

TEST(TuningDb, PruneFailedRemovesOnlyFailures) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  fill(db);
  EXPECT_EQ(db.prune({.failed = true}).measurements_removed, 1);
  EXPECT_TRUE(db.measurements({.status = MeasurementStatus::launch_error}).empty());
  EXPECT_EQ(db.measurements().size(), 3u);
}

TEST(TuningDb, PruneOlderThanKeepsRecentMeasurementsAndEveryBest) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  db.record(measured(h100(), conv3x3(), igemm(64), 30.0, /*created_at=*/1000));   // old, best
  db.record(measured(h100(), conv3x3(), igemm(128), 35.0, /*created_at=*/1000));  // old
  db.record(measured(h100(), conv3x3(), igemm(32), 40.0, /*created_at=*/0));      // now
  EXPECT_EQ(db.prune({.older_than_days = 30}).measurements_removed, 1);
  const auto left = db.measurements();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].kernel, igemm(64));
  EXPECT_EQ(left[1].kernel, igemm(32));
}

TEST(TuningDb, PruneEverythingOfOneGpuLeavesTheOthers) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  fill(db);
  db.record(measured(h200(), conv3x3(), igemm(64), 25.0));
  db.save_calibration(h100(), {.model_version = 1, .coefficients_json = "{}", .samples = 3});
  const PruneStats stats = db.prune({.gpu = h100(), .everything = true});
  EXPECT_EQ(stats, (PruneStats{.measurements_removed = 4, .best_removed = 2}));
  EXPECT_EQ(db.gpus(), std::vector{h200()});
  EXPECT_EQ(db.measurements().size(), 1u);
  EXPECT_EQ(db.load_calibration(h100(), 1), std::nullopt);
  EXPECT_EQ(db.prune({.gpu = h100(), .everything = true}), PruneStats{});
}

TEST(TuningDb, PruneWithNothingChosenIsRefused) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "a.sqlite");
  try {
    db.prune({.gpu = h100()});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "prune: nothing to remove: choose not-best, failed, older-than or everything");
  }
}

// --- merge -------------------------------------------------------------------------------------------------------

std::vector<std::filesystem::path> paths(std::initializer_list<std::filesystem::path> list) { return list; }

TEST(TuningDb, MergeKeepsEveryMeasurementAndMakesTheFastestTheBest) {
  ScratchDir dir;
  TuningDb shard0 = TuningDb::open(dir / "tune-0.sqlite");
  shard0.record(measured(h100(), conv3x3(), igemm(64), 30.0));
  shard0.record(failed(h100(), conv3x3(), igemm(128), MeasurementStatus::resources, "too many registers"));
  shard0.record(measured(h100(), conv3x3(Precision::fp16), igemm(64), 12.0));
  TuningDb shard1 = TuningDb::open(dir / "tune-1.sqlite");
  shard1.record(measured(h100(), conv1x1(), igemm(32), 55.0));
  shard1.record(measured(h100(), conv3x3(), igemm(32), 28.0));  // the same problem, faster
  TuningDb all = TuningDb::open(dir / "all.sqlite");
  const std::vector<ImportStats> stats = all.merge(paths({dir / "tune-0.sqlite", dir / "tune-1.sqlite"}), false);
  EXPECT_EQ(stats, (std::vector<ImportStats>{{.measurements_imported = 3, .best_updated = 2},
                                             {.measurements_imported = 2, .best_updated = 2}}));
  EXPECT_EQ(all.measurements().size(), 5u);
  EXPECT_EQ(all.list_best().size(), 3u);  // conv3x3 fp32 and fp16 are two problems
  EXPECT_EQ(all.best(h100(), conv3x3())->kernel, igemm(32));
  EXPECT_EQ(all.best(h100(), conv3x3(Precision::fp16))->median_us, 12.0);
  EXPECT_EQ(all.best(h100(), conv1x1())->median_us, 55.0);
}

TEST(TuningDb, MergingTheSameFilesAgainChangesNothing) {
  ScratchDir dir;
  TuningDb a = TuningDb::open(dir / "a.sqlite");
  fill(a);
  TuningDb b = TuningDb::open(dir / "b.sqlite");
  b.record(measured(h100(), conv3x3(), igemm(32), 37.0));
  const auto inputs = paths({dir / "a.sqlite", dir / "b.sqlite"});
  TuningDb all = TuningDb::open(dir / "all.sqlite");
  all.merge(inputs, false);
  const std::vector<MeasurementRecord> records = all.measurements();
  const std::vector<BestChoice> best = all.list_best();
  EXPECT_EQ(records.size(), 5u);
  EXPECT_EQ(all.best(h100(), conv3x3())->kernel, igemm(32));
  const std::vector<ImportStats> again = all.merge(inputs, false);
  EXPECT_EQ(again, (std::vector<ImportStats>{{.duplicates_skipped = 4}, {.duplicates_skipped = 1}}));
  EXPECT_EQ(all.measurements(), records);
  EXPECT_EQ(all.list_best(), best);
  // A file merged into itself, or listed twice, adds nothing either.
  all.merge(paths({dir / "all.sqlite", dir / "a.sqlite", dir / "a.sqlite"}), false);
  EXPECT_EQ(all.measurements(), records);
  EXPECT_EQ(all.list_best(), best);
}

TEST(TuningDb, MergeRefusesAnotherGpuNamingTheFilesAndTheirGpusAndWritesNothing) {
  ScratchDir dir;
  TuningDb a = TuningDb::open(dir / "a.sqlite");
  a.record(measured(h100(), conv3x3(), igemm(64), 30.0));
  TuningDb b = TuningDb::open(dir / "b.sqlite");
  b.record(measured(h200(), conv3x3(), igemm(64), 25.0));
  b.record(measured(h100(), conv1x1(), igemm(64), 50.0));
  const auto inputs = paths({dir / "a.sqlite", dir / "b.sqlite"});
  TuningDb empty = TuningDb::open(dir / "empty.sqlite");
  try {
    empty.merge(inputs, false);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("merge: records of another GPU than {} (the GPU of {}, the first input): {}: {}; merge with "
                          "--allow-other-gpus to keep them anyway",
                          describe_gpu(h100()), (dir / "a.sqlite").string(), (dir / "b.sqlite").string(),
                          describe_gpu(h200())));
  }
  EXPECT_TRUE(empty.measurements().empty());
  // The target's own GPU decides when it holds one.
  TuningDb h200_db = TuningDb::open(dir / "h200.sqlite");
  h200_db.record(measured(h200(), conv1x1(), igemm(32), 20.0));
  try {
    h200_db.merge(inputs, false);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("merge: records of another GPU than {} (the GPU {} holds): {}: {}, {}: {}; merge with "
                          "--allow-other-gpus to keep them anyway",
                          describe_gpu(h200()), (dir / "h200.sqlite").string(), (dir / "a.sqlite").string(),
                          describe_gpu(h100()), (dir / "b.sqlite").string(), describe_gpu(h100())));
  }
  EXPECT_EQ(h200_db.measurements().size(), 1u);
  const std::vector<ImportStats> stats = empty.merge(inputs, true);
  EXPECT_EQ(stats[1].measurements_imported, 2);
  EXPECT_EQ(empty.best(h200(), conv3x3())->median_us, 25.0);
  EXPECT_EQ(empty.best(h100(), conv3x3())->median_us, 30.0);
}

TEST(TuningDb, MergeOfAMissingFileIsRefused) {
  ScratchDir dir;
  TuningDb all = TuningDb::open(dir / "all.sqlite");
  try {
    all.merge(paths({dir / "missing.sqlite"}), false);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "missing.sqlite").string() + ": no such tuning database");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "missing.sqlite"));
}

TEST(TuningDb, FilesWrittenByTwoProcessesAtOnceMergeIntoTheirUnion) {
  ScratchDir dir;
  constexpr int kPerWriter = 150;
  // Each child writes its own file, as each task of a sharded tune does.
  in_two_processes_at_once(
      [&](int writer) { write_many(dir / fmt::format("tune-{}.sqlite", writer), writer, kPerWriter); });
  TuningDb all = TuningDb::open(dir / "all.sqlite");
  const auto inputs = paths({dir / "tune-0.sqlite", dir / "tune-1.sqlite"});
  all.merge(inputs, false);
  EXPECT_EQ(all.measurements().size(), 2u * kPerWriter);
  expect_consistent_best(all);
  EXPECT_EQ(all.best(h100(), conv3x3())->median_us, 100.0);  // writer 0's fastest beats writer 1's 100.25
  const std::size_t best_count = all.list_best().size();
  all.merge(inputs, false);
  EXPECT_EQ(all.measurements().size(), 2u * kPerWriter);
  EXPECT_EQ(all.list_best().size(), best_count);
}

}  // namespace
}  // namespace convgen
