// The `gradwire` command line: run, validate, codecs. Kept apart from main() so tests can call
// it in-process. Exit codes: 0 success, 1 runtime failure, 2 bad input (scenario, flags).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gradwire {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace gradwire
