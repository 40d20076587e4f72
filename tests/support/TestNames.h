// Readable names for parameterised GoogleTest cases: `ctest -R` and failure lines then say
// "ring_4_workers" rather than "/3" or a byte dump of the parameter.
#pragma once

#include <cctype>
#include <string>

namespace gradwire::testing_names {

/// `text` with every character GoogleTest does not allow in a name replaced by '_'.
inline std::string sanitize(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

}  // namespace gradwire::testing_names
