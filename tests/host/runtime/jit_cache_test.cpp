// jit_cache_test: memory and disk hits, results remembered per cache object, keys that change with the binary,
// corrupt entries recompiled, one compile per key under concurrency, and the faults of a shared disk folder: entries
// of another NVRTC version, a read-only folder, a full disk, four processes filling one folder at once (real NVRTC
// compiles of tiny kernels).
#include "runtime/jit_cache.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <latch>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace convgen {
namespace {

namespace fs = std::filesystem;

const Program kScale{
    .name = "scale.cu",
    .source = "extern \"C\" __global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n",
};

// A fresh folder per test, removed afterwards.
class JitCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    std::random_device random;
    dir_ = fs::temp_directory_path() / ("convgen-jit-test-" + std::to_string(random()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<fs::path> files() const {
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(dir_)) found.push_back(entry.path());
    return found;
  }

  fs::path dir_;
};

using Stats = JitCache::Stats;

// The digests xxHash's own command line prints for the same bytes (xxhsum -H2, Debian's xxhash 0.8.1).
TEST(Digest, IsXxh3With128BitsAsXxhsumPrintsIt) {
  EXPECT_EQ(digest_hex(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(digest_hex("abc"), "06b05ab6733a618578af5f94892f3950");
  EXPECT_EQ(digest_hex(std::string(1000000, 'a')), "a545df8e384a9579b1fd6fae5285c4eb");
}

TEST_F(JitCacheTest, TheSecondRequestIsAMemoryHit) {
  JitCache cache(dir_);
  const Cubin first = cache.get_or_compile(kScale, {.arch = "sm_90"});
  const Cubin second = cache.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_EQ((cache.stats()), (Stats{.memory_hits = 1, .misses = 1, .compiles = 1}));
  EXPECT_EQ(first.image, second.image);
  EXPECT_GT(first.compile_ms, 0);
  EXPECT_EQ(second.compile_ms, 0);
}

TEST_F(JitCacheTest, AFreshCacheFindsTheEntryOnDisk) {
  const Cubin compiled = JitCache(dir_).get_or_compile(kScale, {.arch = "sm_90"});
  JitCache fresh(dir_);
  const Cubin loaded = fresh.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_EQ((fresh.stats()), (Stats{.disk_hits = 1}));
  EXPECT_EQ(loaded.arch, "sm_90");
  EXPECT_EQ(loaded.image, compiled.image);
  EXPECT_EQ(loaded.log, compiled.log);
  EXPECT_EQ(loaded.report, compiled.report);
  EXPECT_GT(loaded.report.registers, 0);
}

TEST_F(JitCacheTest, ChangingSourceOptionsOrArchIsAMiss) {
  JitCache cache(dir_);
  Program other_source = kScale;
  other_source.source += "// a comment changes the key\n";
  cache.get_or_compile(kScale, {.arch = "sm_90"});
  cache.get_or_compile(other_source, {.arch = "sm_90"});
  cache.get_or_compile(kScale, {.arch = "sm_80"});
  cache.get_or_compile(kScale, {.arch = "sm_90", .extra = {"--use_fast_math"}});
  EXPECT_EQ((cache.stats()), (Stats{.misses = 4, .compiles = 4}));
  EXPECT_EQ(files().size(), 4u);
}

TEST_F(JitCacheTest, KeyCoversHeadersAndIsStableAcrossCacheObjects) {
  JitCache cache(std::nullopt);
  const std::string key = cache.key(kScale, {.arch = "sm_90"});
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key, JitCache(std::nullopt).key(kScale, {.arch = "sm_90"}));
  Program with_header = kScale;
  with_header.headers = {{"tile.cuh", "constexpr int kTile = 4;"}};
  Program other_header = kScale;
  other_header.headers = {{"tile.cuh", "constexpr int kTile = 8;"}};
  Program renamed_header = kScale;
  renamed_header.headers = {{"tiles.cuh", "constexpr int kTile = 4;"}};
  EXPECT_NE(cache.key(with_header, {}), cache.key(kScale, {}));
  EXPECT_NE(cache.key(with_header, {}), cache.key(other_header, {}));
  EXPECT_NE(cache.key(with_header, {}), cache.key(renamed_header, {}));
}

// Damages the only entry in `dir` with `damage`, then checks that a fresh cache recompiles and rewrites it.
void expect_recompiled_after(const fs::path& dir, const std::function<void(const fs::path&)>& damage) {
  JitCache(dir).get_or_compile(kScale, {.arch = "sm_90"});
  JitCache probe(std::nullopt);
  const fs::path entry = dir / (probe.key(kScale, {.arch = "sm_90"}) + ".cgjit");
  ASSERT_TRUE(fs::exists(entry));
  damage(entry);

  JitCache after(dir);
  const Cubin cubin = after.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_EQ((after.stats()), (Stats{.misses = 1, .corrupt_entries = 1, .compiles = 1}));
  EXPECT_GT(cubin.image.size(), 4u);
  JitCache again(dir);
  again.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_EQ((again.stats()), (Stats{.disk_hits = 1})) << "the recompile should have rewritten the entry";
}

TEST_F(JitCacheTest, AFlippedByteIsCaughtByTheChecksum) {
  expect_recompiled_after(dir_, [](const fs::path& entry) {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(entry) / 2));
    file.put('\x5a');
  });
}

TEST_F(JitCacheTest, ATruncatedEntryIsRecompiled) {
  expect_recompiled_after(dir_, [](const fs::path& entry) { fs::resize_file(entry, fs::file_size(entry) - 100); });
}

TEST_F(JitCacheTest, ABadMagicIsRecompiled) {
  expect_recompiled_after(dir_, [](const fs::path& entry) {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.write("garbage!", 8);
  });
}

TEST_F(JitCacheTest, AnEntryForAnotherKeyIsRecompiled) {
  Program other = kScale;
  other.source += "// another key\n";
  expect_recompiled_after(dir_, [&](const fs::path& entry) {
    const fs::path other_dir = entry.parent_path() / "other";
    JitCache other_cache(other_dir);
    other_cache.get_or_compile(other, {.arch = "sm_90"});
    fs::copy_file(*other_cache.entry_path(other_cache.key(other, {.arch = "sm_90"})), entry,
                  fs::copy_options::overwrite_existing);
    fs::remove_all(other_dir);
  });
}

TEST_F(JitCacheTest, ConcurrentRequestsForOneKeyCompileOnce) {
  JitCache cache(dir_);
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::vector<std::vector<char>> images(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      images[i] = cache.get_or_compile(kScale, {.arch = "sm_90"}).image;
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ((cache.stats()), (Stats{.memory_hits = kThreads - 1, .misses = 1, .compiles = 1}));
  for (const auto& image : images) EXPECT_EQ(image, images[0]);
}

TEST_F(JitCacheTest, TheDiskFolderIsCreatedAndHoldsNoTemporaryFiles) {
  const fs::path nested = dir_ / "a" / "b";
  JitCache cache(nested);
  EXPECT_TRUE(fs::is_directory(nested));
  cache.get_or_compile(kScale, {.arch = "sm_90"});
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(nested)) found.push_back(entry.path().filename());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], cache.key(kScale, {.arch = "sm_90"}) + ".cgjit");
}

TEST_F(JitCacheTest, AFolderThatCannotBeCreatedIsAnInputError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "not a folder";
  try {
    JitCache cache(dir_ / "file" / "jit");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "jit cache folder '" + (dir_ / "file" / "jit").string() + "': cannot create it: Not a directory");
  }
}

TEST_F(JitCacheTest, AFailedCompileIsNotCachedAndIsTriedAgain) {
  JitCache cache(dir_);
  const Program broken{.name = "broken.cu", .source = "__global__ void k() { undeclared_thing(); }\n"};
  EXPECT_THROW(cache.get_or_compile(broken, {.arch = "sm_90"}), CompileError);
  EXPECT_THROW(cache.get_or_compile(broken, {.arch = "sm_90"}), CompileError);
  EXPECT_EQ((cache.stats()), (Stats{.misses = 2}));
  EXPECT_TRUE(files().empty());
}

TEST_F(JitCacheTest, AMemoryOnlyCacheWritesNothing) {
  JitCache cache(std::nullopt);
  cache.get_or_compile(kScale, {.arch = "sm_90"});
  cache.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_EQ(cache.entry_path("x"), std::nullopt);
  EXPECT_EQ((cache.stats()), (Stats{.memory_hits = 1, .misses = 1, .compiles = 1}));
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(JitCacheTest, ARememberedResultIsRecalledAsItsTypeByItsCacheAlone) {
  JitCache cache(dir_);
  EXPECT_EQ(cache.recall<std::string>("result|a"), nullptr);
  cache.remember("result|a", std::make_shared<const std::string>("first"));
  cache.remember("result|a", std::make_shared<const std::string>("second"));  // the first value stays
  const std::shared_ptr<const std::string> recalled = cache.recall<std::string>("result|a");
  ASSERT_NE(recalled, nullptr);
  EXPECT_EQ(*recalled, "first");
  EXPECT_EQ(cache.recall<int>("result|a"), nullptr);  // another type under the same id: nothing
  EXPECT_EQ(cache.recall<std::string>("result|b"), nullptr);
  EXPECT_EQ((cache.stats()), (Stats{.memory_hits = 1, .recalls = 1}));
  JitCache fresh(dir_);
  EXPECT_EQ(fresh.recall<std::string>("result|a"), nullptr);
  EXPECT_EQ((fresh.stats()), Stats{});
}

TEST_F(JitCacheTest, CompileAllKeepsEveryOutcomeInOrder) {
  JitCache cache(dir_);
  ThreadPool pool(2);
  const Program second{.name = "twice.cu",
                       .source = "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }\n"};
  const std::vector<Program> programs = {
      kScale, {.name = "broken.cu", .source = "__global__ void k() { undeclared_thing(); }\n"}, second};
  const std::vector<CompileOutcome> outcomes = compile_all(cache, programs, {.arch = "sm_90"}, pool);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_TRUE(outcomes[0].ok());
  EXPECT_FALSE(outcomes[1].ok());
  EXPECT_TRUE(outcomes[2].ok());
  EXPECT_THROW(outcomes[1].cubin(), CompileError);
  EXPECT_NE(outcomes[0].cubin().log.find("scale"), std::string::npos) << outcomes[0].cubin().log;
  EXPECT_NE(outcomes[2].cubin().log.find("twice"), std::string::npos) << outcomes[2].cubin().log;
  EXPECT_EQ(cache.stats().compiles, 2);
}

TEST(JitCacheEntry, AnEntryParsesBackAndEveryCutOrWrongKeyIsRejected) {
  const Cubin cubin{.arch = "sm_90",
                    .image = {'\x7f', 'E', 'L', 'F', '\0', '\1'},
                    .log = "ptxas info    : Used 12 registers",
                    .report = {.registers = 12, .cmem0_bytes = 360}};
  const std::string key = digest_hex("key");
  const std::string entry = jit_cache_entry(key, cubin);
  const std::optional<Cubin> parsed = parse_jit_cache_entry(entry, key);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->image, cubin.image);
  EXPECT_EQ(parsed->log, cubin.log);
  EXPECT_EQ(parsed->report, cubin.report);
  for (std::size_t size = 0; size < entry.size(); ++size)
    EXPECT_EQ(parse_jit_cache_entry(std::string_view(entry).substr(0, size), key), std::nullopt) << size;
  EXPECT_EQ(parse_jit_cache_entry(entry + "x", key), std::nullopt);
  EXPECT_EQ(parse_jit_cache_entry(entry, digest_hex("another key")), std::nullopt);
}

// --- faults of the disk folder --------------------------------------------------------------------------------

TEST_F(JitCacheTest, AnEntryOfAnotherNvrtcVersionIsNeverLoaded) {
  const CompileOptions options{.arch = "sm_90"};
  JitCache other_toolkit(dir_, "0.0 (another toolkit)");
  other_toolkit.get_or_compile(kScale, options);
  ASSERT_EQ(files().size(), 1u);

  // Its key differs, so this NVRTC misses, compiles and keeps both entries side by side.
  JitCache cache(dir_);
  EXPECT_NE(cache.key(kScale, options), other_toolkit.key(kScale, options));
  cache.get_or_compile(kScale, options);
  EXPECT_EQ((cache.stats()), (Stats{.misses = 1, .compiles = 1}));
  EXPECT_EQ(files().size(), 2u);

  // The other version's entry under this version's name (a copied or renamed file) is rejected by the key it holds.
  fs::copy_file(*other_toolkit.entry_path(other_toolkit.key(kScale, options)),
                *cache.entry_path(cache.key(kScale, options)), fs::copy_options::overwrite_existing);
  JitCache fresh(dir_);
  fresh.get_or_compile(kScale, options);
  EXPECT_EQ((fresh.stats()), (Stats{.misses = 1, .corrupt_entries = 1, .compiles = 1}));
}

TEST_F(JitCacheTest, AReadOnlyFolderStillServesCompilesAndCountsTheWriteFailure) {
  // /proc/self is a folder nobody can create files in, root included (tests may run as root, where chmod does
  // not stop a write).
  const fs::path read_only = "/proc/self";
  ASSERT_TRUE(fs::is_directory(read_only));
  JitCache cache(read_only);
  const Cubin cubin = cache.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_GT(cubin.image.size(), 4u);
  EXPECT_EQ((cache.stats()), (Stats{.misses = 1, .compiles = 1, .disk_write_failures = 1}));
  cache.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_EQ(cache.stats().memory_hits, 1) << "the compile is kept in memory";
}

TEST_F(JitCacheTest, AFullDiskLeavesNoPartialEntryAndCountsTheWriteFailure) {
  // A full disk, simulated by a file size limit: a write past it fails (EFBIG) as one past a full disk does
  // (ENOSPC). The entry of this kernel is a few kilobytes; the limit cuts it after 1024 bytes.
  const Cubin reference = JitCache(std::nullopt).get_or_compile(kScale, {.arch = "sm_90"});
  ASSERT_GT(jit_cache_entry(std::string(32, '0'), reference).size(), 2048u);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto saved_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit tiny = saved;
  tiny.rlim_cur = 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tiny), 0);
  JitCache cache(dir_);
  Cubin cubin;
  try {
    cubin = cache.get_or_compile(kScale, {.arch = "sm_90"});
  } catch (...) {
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, saved_handler);
    throw;
  }
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  signal(SIGXFSZ, saved_handler);

  EXPECT_EQ(cubin.image, reference.image);
  EXPECT_EQ((cache.stats()), (Stats{.misses = 1, .compiles = 1, .disk_write_failures = 1}));
  EXPECT_TRUE(files().empty()) << "neither the cut temporary file nor an entry may stay";
  JitCache after(dir_);
  after.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_EQ((after.stats()), (Stats{.misses = 1, .compiles = 1})) << "with room again the entry is written";
  EXPECT_EQ(files().size(), 1u);
}

TEST_F(JitCacheTest, AFolderInPlaceOfAnEntryIsAWriteFailureNotAnError) {
  // Before this test the read threw "basic_filebuf::underflow error reading the file: Is a directory".
  JitCache cache(dir_);
  fs::create_directories(*cache.entry_path(cache.key(kScale, {.arch = "sm_90"})));
  const Cubin cubin = cache.get_or_compile(kScale, {.arch = "sm_90"});
  EXPECT_GT(cubin.image.size(), 4u);
  EXPECT_EQ((cache.stats()), (Stats{.misses = 1, .compiles = 1, .disk_write_failures = 1}));
  EXPECT_EQ(files().size(), 1u) << "only the folder; the temporary file is removed";
}

// Programs that differ in source: one entry each.
std::vector<Program> kernels(int count) {
  std::vector<Program> programs;
  for (int i = 0; i < count; ++i)
    programs.push_back({.name = fmt::format("scale{}.cu", i),
                        .source = fmt::format("extern \"C\" __global__ void scale{0}(float* x, float a) {{ "
                                              "x[threadIdx.x] *= a + {0}; }}\n",
                                              i)});
  return programs;
}

TEST_F(JitCacheTest, FourProcessesCompilingTheSameKernelsIntoOneFolderNeverLoadABadEntry) {
  constexpr int kProcesses = 4;
  const std::vector<Program> programs = kernels(6);
  const CompileOptions options{.arch = "sm_90"};
  fs::create_directories(dir_);
  // Each child compiles every program through the shared folder, each in another order so that one child's write
  // meets another's read, and writes the digest of every image, in program order, to its report file. The pipe
  // holds them until all are forked.
  int start[2];
  ASSERT_EQ(pipe(start), 0);
  std::vector<pid_t> children;
  for (int child = 0; child < kProcesses; ++child) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(start[1]);
      char byte = 0;
      [[maybe_unused]] const auto got = read(start[0], &byte, 1);
      int status = 0;
      try {
        JitCache cache(dir_);
        std::vector<std::string> digests(programs.size());
        for (std::size_t n = 0; n < programs.size(); ++n) {
          const std::size_t i = (n + static_cast<std::size_t>(child) * 2) % programs.size();
          const Cubin cubin = cache.get_or_compile(programs[i], options);
          digests[i] = digest_hex(std::string_view(cubin.image.data(), cubin.image.size()));
        }
        std::ofstream report(dir_.string() + fmt::format(".child{}", child));
        for (const std::string& digest : digests) report << digest << "\n";
        if (cache.stats().corrupt_entries != 0) status = 2;
      } catch (const std::exception& e) {
        fmt::print(stderr, "child {}: {}\n", child, e.what());
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
    ASSERT_TRUE(WIFEXITED(status)) << "a child crashed";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: an exception, 2: a corrupt entry seen";
  }

  // Every child got the image a fresh compile gives, and the folder holds exactly one whole entry per program.
  JitCache memory(std::nullopt);
  std::string expected;
  for (const Program& program : programs) {
    const Cubin cubin = memory.get_or_compile(program, options);
    expected += digest_hex(std::string_view(cubin.image.data(), cubin.image.size())) + "\n";
  }
  for (int child = 0; child < kProcesses; ++child) {
    const fs::path report = dir_.string() + fmt::format(".child{}", child);
    std::ifstream in(report);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), expected) << "child " << child;
    fs::remove(report);
  }
  EXPECT_EQ(files().size(), programs.size()) << "one entry per program, no temporary file left";
  JitCache after(dir_);
  for (const Program& program : programs) after.get_or_compile(program, options);
  EXPECT_EQ((after.stats()), (Stats{.disk_hits = static_cast<std::int64_t>(programs.size())}));
}

}  // namespace
}  // namespace convgen
