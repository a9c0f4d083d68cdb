// sqlite_check: the SQLite check function and the prepared-statement wrapper.
#include "tuner/sqlite_check.hpp"

#include <fmt/format.h>

namespace convgen {

namespace detail {

void sqlite_check(int result, sqlite3* db, const char* expr, const char* file, int line) {
  if (result == SQLITE_OK || result == SQLITE_ROW || result == SQLITE_DONE) return;
  // The connection's message is more specific ("no such table: x") when it belongs to this error.
  const char* message = db != nullptr && sqlite3_errcode(db) == result ? sqlite3_errmsg(db) : sqlite3_errstr(result);
  throw ApiError(fmt::format("{}:{}: {} failed: {} ({})", file, line, expr, sqlite3_errstr(result), message));
}

}  // namespace detail

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
  CONVGEN_SQLITE_CHECK(db_, sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &statement_, nullptr));
}

Statement::~Statement() { sqlite3_finalize(statement_); }

void Statement::bind(int index, std::int64_t value) {
  CONVGEN_SQLITE_CHECK(db_, sqlite3_bind_int64(statement_, index, value));
}

void Statement::bind(int index, double value) {
  CONVGEN_SQLITE_CHECK(db_, sqlite3_bind_double(statement_, index, value));
}

void Statement::bind(int index, std::string_view value) {
  CONVGEN_SQLITE_CHECK(
      db_, sqlite3_bind_text(statement_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT));
}

void Statement::bind(int index, const std::optional<double>& value) {
  if (value) {
    bind(index, *value);
  } else {
    CONVGEN_SQLITE_CHECK(db_, sqlite3_bind_null(statement_, index));
  }
}

bool Statement::step() {
  const int result = sqlite3_step(statement_);
  CONVGEN_SQLITE_CHECK(db_, result);
  return result == SQLITE_ROW;
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(statement_, column); }

double Statement::real(int column) const { return sqlite3_column_double(statement_, column); }

std::string Statement::text(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement_, column));
  return text != nullptr ? std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)))
                         : std::string{};
}

std::optional<double> Statement::optional_real(int column) const {
  if (sqlite3_column_type(statement_, column) == SQLITE_NULL) return std::nullopt;
  return real(column);
}

void execute(sqlite3* db, const char* sql) {
  CONVGEN_SQLITE_CHECK(db, sqlite3_exec(db, sql, nullptr, nullptr, nullptr));
}

}  // namespace convgen
