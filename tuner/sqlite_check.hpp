// sqlite_check: the one check macro for SQLite calls, and RAII handles for connections and prepared statements.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "convgen/error.hpp"

namespace convgen {

namespace detail {

// Throws ApiError "<file>:<line>: <expr> failed: <error> (<connection's message>)" unless `result` is SQLITE_OK,
// SQLITE_ROW or SQLITE_DONE. `db` may be null (before a connection exists).
void sqlite_check(int result, sqlite3* db, const char* expr, const char* file, int line);

}  // namespace detail

// Closes a connection; sqlite3_close_v2 defers the close until every statement is finalized.
struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using SqliteHandle = std::unique_ptr<sqlite3, SqliteCloser>;

// A prepared statement. Bind with 1-based indices, step until it returns false, read columns 0-based.
//   Statement s(db, "SELECT kernel FROM best WHERE gpu_id = ?");
//   s.bind(1, gpu_id);
//   while (s.step()) names.push_back(s.text(0));
class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  void bind(int index, std::int64_t value);
  void bind(int index, int value) { bind(index, static_cast<std::int64_t>(value)); }
  void bind(int index, double value);
  void bind(int index, std::string_view value);
  void bind(int index, const std::optional<double>& value);

  // Runs one step: true when a row is ready, false when the statement is done. Throws ApiError on failure.
  bool step();
  // Steps a statement that returns no rows (INSERT, UPDATE, DELETE).
  void run();
  void reset();

  std::int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::optional<double> optional_real(int column) const;  // nothing for NULL

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
};

// Runs SQL that returns no rows (one or several statements). Throws ApiError on failure.
void execute(sqlite3* db, const char* sql);

}  // namespace convgen

// Calls a SQLite function on connection `db` and throws ApiError naming the expression, the error, file and line.
#define CONVGEN_SQLITE_CHECK(db, expr) ::convgen::detail::sqlite_check((expr), (db), #expr, __FILE__, __LINE__)
