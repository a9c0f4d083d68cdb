// npy_test: .npy files written and read back, and every way a file can be wrong named with the file.
#include "reference/npy.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/errors.hpp"
#include "support/scratch_dir.hpp"

namespace convgen {
namespace {

using testing_support::input_error;

std::filesystem::path write_file(const std::string& name, const std::string& bytes) {
  const auto path = testing_support::process_scratch() / ("convgen_npy_test_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(Npy, WrittenArraysReadBackEqual) {
  const NpyArray a{.shape = {2, 3, 1, 2}, .values = {1, -2, 0, 3.5f, 4, 5, 6, 7, 8, 9, 10, 11}};
  const std::string bytes = npy_bytes(a);
  EXPECT_EQ((bytes.find('\n') + 1) % 64, 0u);  // the data starts 64-byte aligned, as numpy writes it
  const NpyArray b = read_npy(write_file("roundtrip.npy", bytes));
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.values, a.values);
  const NpyArray vector = read_npy(write_file("vector.npy", npy_bytes({.shape = {3}, .values = {1, 2, 3}})));
  EXPECT_EQ(vector.shape, (std::vector<std::int64_t>{3}));
}

TEST(Npy, ReadsAHeaderAsNumpyWritesIt) {
  // numpy.save(f, numpy.ones((2, 2), numpy.float32)): version 1.0, header padded to 118 bytes.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  header.append(118 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  const float ones[4] = {1, 1, 1, 1};
  bytes.append(reinterpret_cast<const char*>(ones), sizeof ones);
  const NpyArray a = read_npy(write_file("numpy.npy", bytes));
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(a.values, (std::vector<float>{1, 1, 1, 1}));
}

TEST(Npy, EveryWrongFileIsNamedWithWhatWasExpected) {
  const auto missing = testing_support::process_scratch() / "convgen_npy_test_missing.npy";
  std::filesystem::remove(missing);
  EXPECT_EQ(input_error([&] { read_npy(missing); }),
            missing.string() + ": no such file (expected a float32 .npy file)");
  const auto text = write_file("text.npy", "name,n,c\n");
  EXPECT_EQ(input_error([&] { read_npy(text); }), text.string() + ": not a .npy file (no \\x93NUMPY magic)");
  std::string f64 = npy_bytes({.shape = {2}, .values = {1, 2}});
  f64.replace(f64.find("<f4"), 3, "<f8");
  const auto doubles = write_file("f64.npy", f64);
  EXPECT_EQ(input_error([&] { read_npy(doubles); }),
            doubles.string() + ": dtype '<f8', expected '<f4' (float32, little-endian)");
  std::string fortran = npy_bytes({.shape = {2}, .values = {1, 2}});
  fortran.replace(fortran.find("False"), 5, "True ");
  const auto f_order = write_file("fortran.npy", fortran);
  EXPECT_EQ(input_error([&] { read_npy(f_order); }),
            f_order.string() + ": Fortran-order array, expected C order (numpy.ascontiguousarray)");
  std::string short_data = npy_bytes({.shape = {4}, .values = {1, 2, 3, 4}});
  short_data.resize(short_data.size() - 4);
  const auto truncated = write_file("truncated.npy", short_data);
  EXPECT_EQ(input_error([&] { read_npy(truncated); }),
            truncated.string() + ": 12 bytes of data, expected 16 for shape (4)");
}

// A version-1.0 header declaring `shape` (text inside the parentheses) followed by `data`.
std::string with_shape(const std::string& shape, const std::string& data = "") {
  std::string bytes = npy_bytes({.shape = {1}, .values = {0}});
  bytes.resize(bytes.size() - 4);
  const std::size_t at = bytes.find("(1,)");
  bytes.replace(at, 4, "(" + shape + ")");
  const std::size_t header = bytes.size() - 10;
  bytes[8] = static_cast<char>(header & 0xff);
  bytes[9] = static_cast<char>(header >> 8);
  return bytes + data;
}

TEST(Npy, AShapeWhoseByteCountWrapsIsRefusedNotRead) {
  // 2^62 x 4 floats: 2^64 bytes, which wrapped to 0 ("enough data") before the reader counted with overflow checks.
  EXPECT_EQ(input_error([] { parse_npy(with_shape("4611686018427387904, 4"), "huge.npy"); }),
            "huge.npy: shape (4611686018427387904, 4) is too large: its byte count does not fit 64 bits");
  EXPECT_EQ(input_error([] { parse_npy(with_shape("4294967296, 4294967296"), "huge.npy"); }),
            "huge.npy: shape (4294967296, 4294967296) is too large: its byte count does not fit 64 bits");
}

TEST(Npy, ASizeWithMoreDigitsThan64BitsHoldIsRefused) {
  EXPECT_EQ(input_error([] { parse_npy(with_shape("99999999999999999999,"), "digits.npy"); }),
            "digits.npy: shape '(99999999999999999999,)' has a size that does not fit 64 bits");
}

TEST(Npy, AnArrayWithAZeroExtentReadsAsNoValues) {
  // Found by tests/fuzz/reference/npy_fuzz.cpp under UBSan: the copy of 0 bytes went to an empty vector's null data().
  const NpyArray empty = parse_npy(with_shape("2, 0, 2, 2"), "empty.npy");
  EXPECT_EQ(empty.shape, (std::vector<std::int64_t>{2, 0, 2, 2}));
  EXPECT_TRUE(empty.values.empty());
}

TEST(Npy, AHeaderLengthPastTheFileIsATruncatedHeader) {
  std::string bytes = npy_bytes({.shape = {2}, .values = {1, 2}});
  bytes[8] = '\xff';
  bytes[9] = '\xff';
  EXPECT_EQ(input_error([&] { parse_npy(bytes, "short.npy"); }), "short.npy: truncated .npy header");
}

}  // namespace
}  // namespace convgen
