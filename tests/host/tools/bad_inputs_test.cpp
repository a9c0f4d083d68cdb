// bad_inputs_test: every row of docs/bad-inputs.md run as it stands: the command, from tests/host/tools/bad_inputs,
// must exit with the row's code and print exactly the row's message. The table is the specification; a message
// changed in the code without the table (or the other way round) fails here.
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_convgen.hpp"
#include "support/scratch_dir.hpp"

namespace convgen {
namespace {

struct BadInput {
  std::string name;  // the test's name: the row's class, in identifier characters
  std::string kind;
  std::string command;  // starts with "convgen "
  std::string message;
  int exit_code = 0;
};

// The text of a table cell: trimmed, one level of `code` or ``code`` quotes removed, "\|" unescaped, "<br>" a
// line break.
std::string cell_text(std::string cell) {
  const auto first = cell.find_first_not_of(' ');
  const auto last = cell.find_last_not_of(' ');
  cell = first == std::string::npos ? "" : cell.substr(first, last - first + 1);
  for (const std::string quote : {"`` ", "`"})
    if (cell.starts_with(quote) && cell.size() >= 2 * quote.size()) {
      const std::string closing = quote == "`` " ? " ``" : "`";
      if (cell.ends_with(closing)) {
        cell = cell.substr(quote.size(), cell.size() - quote.size() - closing.size());
        break;
      }
    }
  std::string out;
  for (std::size_t i = 0; i < cell.size(); ++i) {
    if (cell[i] == '\\' && i + 1 < cell.size() && cell[i + 1] == '|') continue;
    if (cell.compare(i, 4, "<br>") == 0) {
      out += '\n';
      i += 3;
      continue;
    }
    out += cell[i];
  }
  return out;
}

// Splits a table row at the '|' that are not escaped.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string current;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|' && line[i - 1] != '\\') {
      out.push_back(current);
      current.clear();
    } else {
      current += line[i];
    }
  }
  return out;
}

// The rows of the table under "| class | command | exit | message |".
std::vector<BadInput> table_rows() {
  std::ifstream in(std::string(CONVGEN_SOURCE_DIR) + "/docs/bad-inputs.md");
  std::vector<BadInput> rows;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("|")) {
      in_table = false;
      continue;
    }
    const std::vector<std::string> c = cells(line);
    if (c.size() == 4 && cell_text(c[0]) == "class") {
      in_table = true;
      continue;
    }
    if (!in_table || line.starts_with("|---") || c.size() != 4) continue;
    BadInput row{.kind = cell_text(c[0]),
                 .command = cell_text(c[1]),
                 .message = cell_text(c[3]),
                 .exit_code = std::stoi(cell_text(c[2]))};
    for (const char ch : row.kind) row.name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    row.name.append("_").append(std::to_string(rows.size() + 1));
    rows.push_back(row);
  }
  return rows;
}

void PrintTo(const BadInput& row, std::ostream* os) { *os << row.command; }

class BadInputs : public testing::TestWithParam<BadInput> {};

TEST_P(BadInputs, PrintTheDocumentedMessageAndExitCode) {
  const BadInput& row = GetParam();
  ASSERT_TRUE(row.command.starts_with("convgen ")) << row.command;
  // In a scratch copy of the fixtures: commands that write (--out, --db) write there, and HOME points there too.
  const auto scratch = testing_support::process_scratch() / ("convgen-bad-inputs-" + row.name);
  std::filesystem::remove_all(scratch);
  std::filesystem::copy(std::string(CONVGEN_SOURCE_DIR) + "/tests/host/tools/bad_inputs", scratch,
                        std::filesystem::copy_options::recursive);
  const testing_support::CommandResult r =
      testing_support::run_command("cd " + scratch.string() + " && export HOME=" + scratch.string() +
                                   " CONVGEN_CACHE_DIR=" + (scratch / "jit").string() + " && " +
                                   std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen " + row.command.substr(8));
  std::filesystem::remove_all(scratch);
  EXPECT_EQ(r.output, row.message + "\n") << row.command;
  EXPECT_EQ(r.exit_code, row.exit_code) << row.command;
}

TEST(BadInputsTable, HasARowForEveryClassOfBadInput) { EXPECT_GE(table_rows().size(), 20u); }

INSTANTIATE_TEST_SUITE_P(Table, BadInputs, testing::ValuesIn(table_rows()),
                         [](const testing::TestParamInfo<BadInput>& info) { return info.param.name; });

}  // namespace
}  // namespace convgen
