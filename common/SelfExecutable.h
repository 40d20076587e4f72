// The running program's own path, for commands that start more processes of the same build
// (sweep runs, worker processes).
#pragma once

#include <string>

namespace gradwire {

/// /proc/self/exe resolved; "gradwire" (found on PATH) where it cannot be read.
std::string self_executable();

}  // namespace gradwire
