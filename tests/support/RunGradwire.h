// Test support: runs the built gradwire executable with arguments and captures its exit code
// and combined stdout/stderr.
#pragma once

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace gradwire::testing {

struct CommandResult {
  int code;
  std::string output;
};

/// `wrapper` (e.g. "timeout -k 5 30") is put before the binary.
inline CommandResult run_gradwire(const std::string& args, const std::string& wrapper = "") {
  const std::string cmd =
      (wrapper.empty() ? "" : wrapper + " ") + std::string(GRADWIRE_BINARY) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace gradwire::testing
