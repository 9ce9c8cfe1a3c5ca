// Plain-text output of the command-line tools: tables whose columns are padded to their
// widest cell, and printf-style number formatting.
#pragma once

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace schedfarm {

// A table printed with two spaces of indent and two between columns; `right` says
// which columns are right-aligned.
class TextTable {
 public:
  TextTable(std::vector<std::string> header, std::vector<bool> right) : right_(std::move(right)) {
    rows_.push_back(std::move(header));
  }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto& row : rows_) {
      for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    for (const auto& row : rows_) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c) {
        const std::string pad(width[c] - row[c].size(), ' ');
        const bool last = c + 1 == row.size();
        line += right_[c] ? pad + row[c] : row[c] + (last ? "" : pad);
        if (!last) line += "  ";
      }
      out << "  " << line << "\n";
    }
  }

 private:
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// `v` formatted by the printf format `fmt` (one double conversion).
inline std::string FormatNumber(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

}  // namespace schedfarm
