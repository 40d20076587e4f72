// The Python scripts of analysis/ (reports, advice) as the commands call them: where they are,
// which interpreter runs them, and starting them as child processes.
#pragma once

#include <string>
#include <vector>

namespace gradwire {

/// Runs argv without a shell and waits; returns its exit status (127 when it cannot start,
/// 128 when a signal ended it). `silence`: its stdout and stderr go to /dev/null.
int run_child_process(const std::vector<std::string>& argv, bool silence);

/// The analysis/ folder: $GRADWIRE_ANALYSIS_DIR, the one beside the executable's folder (an
/// installed tree), else the source tree's.
std::string analysis_dir();

/// A Python interpreter that can import matplotlib: $GRADWIRE_PYTHON, /usr/bin/python3 (where
/// Debian's python3-matplotlib lives), then python3 on PATH. Empty when none can.
std::string find_matplotlib_python();

/// A Python 3 for the scripts that need only the standard library: $GRADWIRE_PYTHON,
/// /usr/bin/python3, then python3 on PATH. Empty when none runs.
std::string find_python();

}  // namespace gradwire
