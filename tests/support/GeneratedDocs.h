// Reads the generated part of a reference page in docs/: the lines between
// `<!-- BEGIN gradwire X -->` and `<!-- END gradwire X -->`. Tests compare it with what the
// declaration produces now, so a page cannot drift from the code it documents.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace gradwire::docs {

/// The text between the BEGIN and END markers for `command` ("networks --markdown"), without
/// the newline that ends the BEGIN line. std::runtime_error when a marker is missing.
inline std::string generated_block(const std::string& file, const std::string& command) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const std::string begin = "<!-- BEGIN gradwire " + command + " -->\n";
  const std::string end = "<!-- END gradwire " + command + " -->";
  const auto b = text.find(begin);
  const auto e = text.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) {
    throw std::runtime_error(file + " lacks the markers of `gradwire " + command + "`");
  }
  return text.substr(b + begin.size(), e - b - begin.size());
}

}  // namespace gradwire::docs
