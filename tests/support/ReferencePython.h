// The Python interpreter that runs the real-kernel references' PyTorch jobs (gloo all-reduces,
// DDP training): $GRADWIRE_PYTHON where set, else Debian's /usr/bin/python3, which holds
// Debian's PyTorch. A machine whose PyTorch lives elsewhere (a GPU machine's virtual
// environment) names its interpreter through the variable.
#pragma once

#include <cstdlib>
#include <string>

namespace gradwire::testing {

inline std::string reference_python() {
  const char* chosen = std::getenv("GRADWIRE_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen : "/usr/bin/python3";
}

}  // namespace gradwire::testing
