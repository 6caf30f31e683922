// SPDX-License-Identifier: Apache-2.0
// The method and tool tables are the protocols: what the docs list
// (docs/serve.md, docs/mcp.md) is exactly what they hold, and what each
// reader requires is what its row (or its tool's input schema) says.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "serve/mcp.h"
#include "serve/protocol.h"

namespace pmon::serve {
namespace {

std::string doc(const char* name) {
  std::ifstream in(std::string(PMON_SOURCE_DIR) + "/docs/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The cells of each row of the doc's table whose header starts with
// `header`, split at '|'.
std::vector<std::vector<std::string>> table_rows(const std::string& text, const std::string& header) {
  std::vector<std::vector<std::string>> rows;
  size_t at = text.find("\n" + header);
  if (at == std::string::npos) return rows;
  std::istringstream lines(text.substr(at + 1));
  std::string line;
  std::getline(lines, line);  // the header
  std::getline(lines, line);  // |---|
  while (std::getline(lines, line) && line.starts_with("|")) {
    std::vector<std::string> cells;
    size_t from = 1;
    for (size_t bar; (bar = line.find('|', from)) != std::string::npos; from = bar + 1) {
      std::string cell = line.substr(from, bar - from);
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

std::string without_backticks(std::string s) {
  std::erase(s, '`');
  return s;
}

// `a`, `b?` ...: the names in backticks, in order.
std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  for (size_t open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
    const size_t close = cell.find('`', open + 1);
    if (close == std::string::npos) break;
    out.push_back(cell.substr(open + 1, close - open - 1));
    open = close + 1;
  }
  return out;
}

TEST(ServeTables, TheDocsListEveryMethodAsItsRowSays) {
  auto rows = table_rows(doc("serve.md"), "| method |");
  std::vector<MethodDoc> docs = method_docs();
  ASSERT_EQ(rows.size(), docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 3u) << docs[i].name;
    EXPECT_EQ(without_backticks(rows[i][0]), docs[i].name);
    EXPECT_EQ(without_backticks(rows[i][1]), docs[i].params) << docs[i].name;
    EXPECT_EQ(without_backticks(rows[i][2]), docs[i].result) << docs[i].name;
  }
}

TEST(ServeTables, TheDocsListEveryToolWithItsSchemasArguments) {
  auto rows = table_rows(doc("mcp.md"), "| tool |");
  const Json tools = mcp::tools_list()["tools"];
  ASSERT_EQ(rows.size(), tools.size());
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    EXPECT_EQ(without_backticks(rows[i][0]), t["name"].get<std::string>());
    std::vector<std::string> args;
    const Json& schema = t["inputSchema"];
    for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
      const bool required = schema.contains("required") &&
                            std::find(schema["required"].begin(), schema["required"].end(), it.key()) !=
                                schema["required"].end();
      args.push_back(it.key() + (required ? "" : "?"));
    }
    std::vector<std::string> listed = backticked(rows[i][1]);
    std::sort(listed.begin(), listed.end());
    std::sort(args.begin(), args.end());
    EXPECT_EQ(listed, args) << t["name"];
  }
}

// The first field a method's row names without "?", or "" when none.
std::string first_required(std::string_view params) {
  std::istringstream in{std::string(params)};
  for (std::string f; std::getline(in >> std::ws, f, ',');)
    if (!f.ends_with("?")) return f;
  return "";
}

TEST(ServeTables, EachMethodRequiresWhatItsRowSays) {
  for (const MethodDoc& m : method_docs()) {
    auto r = parse_request(R"({"jsonrpc":"2.0","id":1,"method":")" + std::string(m.name) + R"(","params":{}})");
    const std::string field = first_required(m.params);
    if (field.empty()) {
      // Every field may be left out, or one of them is needed (terminal/find:
      // a name or a port), which the error names with what may stand for it.
      if (auto* bad = std::get_if<BadRequest>(&r)) {
        const std::string& msg = bad->error.message;
        const auto q = msg.find('\'');
        const std::string named = q == std::string::npos ? "" : msg.substr(q + 1, msg.find('\'', q + 1) - q - 1);
        EXPECT_NE(std::string(m.params).find(named + "?"), std::string::npos) << m.name << ": " << msg;
        EXPECT_NE(msg.find("or '"), std::string::npos) << m.name << ": " << msg;
      }
      continue;
    }
    ASSERT_TRUE(std::holds_alternative<BadRequest>(r)) << m.name;
    EXPECT_EQ(std::get<BadRequest>(r).error.message, "invalid params: '" + field + "' is required") << m.name;
  }
}

TEST(ServeTables, EachToolRequiresWhatItsSchemaSays) {
  const Json tools = mcp::tools_list()["tools"];
  for (const Json& t : tools) {
    auto r = mcp::parse_tool_call({{"name", t["name"]}, {"arguments", Json::object()}});
    const Json& schema = t["inputSchema"];
    if (!schema.contains("required")) {
      // Nothing required, or one of several (kill: an id, a name or a port),
      // which the error names with what may stand for it.
      if (auto* e = std::get_if<mcp::CallError>(&r)) {
        const std::string& msg = e->message;
        const auto q = msg.find('\'');
        const std::string named = q == std::string::npos ? "" : msg.substr(q + 1, msg.find('\'', q + 1) - q - 1);
        EXPECT_TRUE(schema["properties"].contains(named)) << t["name"] << ": " << msg;
        EXPECT_NE(msg.find("or '"), std::string::npos) << t["name"] << ": " << msg;
      }
      continue;
    }
    ASSERT_TRUE(std::holds_alternative<mcp::CallError>(r)) << t["name"];
    EXPECT_EQ(std::get<mcp::CallError>(r).message,
              "invalid arguments: '" + schema["required"][0].get<std::string>() + "' is required")
        << t["name"];
  }
}

}  // namespace
}  // namespace pmon::serve
