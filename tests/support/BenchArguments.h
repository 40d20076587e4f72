// Benchmarks take their grids from comma-separated arguments ("4,16,64"), the grid
// being the default; this reads them.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace gradwire::testing {

inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

inline std::vector<double> number_list(const std::string& text) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) out.push_back(std::stod(item));
  return out;
}

}  // namespace gradwire::testing
