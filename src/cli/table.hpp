// A small text table: aligned columns for the terminal, or CSV.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fastreduce::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;      // columns padded; first column left-aligned
  void print_csv(std::ostream& out) const;  // header line, then one line per row
  [[nodiscard]] const std::vector<std::vector<std::string>>& rows() const { return rows_; }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fastreduce::cli
