// golden_data.h: reading the golden tables in test/unit/data (facts read off Debian's jemalloc
// 5.3.0). `make check` exports top_srcdir; a binary run by hand falls back to the directory of
// this header.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace je::golden {

inline std::string data_path(const char* name) {
  if (const char* top = std::getenv("top_srcdir"); top != nullptr && *top != '\0') {
    return std::string(top) + "/test/unit/data/" + name;
  }
  std::string here = __FILE__;
  const size_t slash = here.rfind('/');
  here = slash == std::string::npos ? std::string(".") : here.substr(0, slash);
  return here + "/data/" + name;
}

using Rows = std::vector<std::vector<uint64_t>>;

/// Rows of a tab-separated file of unsigned numbers; '#' lines are headers.
inline Rows read_tsv(const char* name) {
  Rows rows;
  std::ifstream in(data_path(name));
  EXPECT_TRUE(in.good()) << "cannot open " << data_path(name);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::vector<uint64_t> row;
    uint64_t v;
    while (fields >> v) row.push_back(v);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace je::golden
