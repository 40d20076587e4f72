#include "sim/cli/AnalysisScripts.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include "common/InterruptCleanup.h"
#include "common/SelfExecutable.h"

namespace gradwire {

namespace {

namespace fs = std::filesystem;

std::string first_python_that_runs(const std::string& check) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("GRADWIRE_PYTHON")) candidates.emplace_back(env);
  candidates.emplace_back("/usr/bin/python3");
  candidates.emplace_back("python3");
  for (const auto& python : candidates) {
    if (run_child_process({python, "-c", check}, true) == 0) return python;
  }
  return "";
}

}  // namespace

int run_child_process(const std::vector<std::string>& argv, bool silence) {
  const pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    InterruptCleanup::prepare_child();
    if (silence) {
      if (FILE* null = std::fopen("/dev/null", "w")) {
        ::dup2(fileno(null), 1);
        ::dup2(fileno(null), 2);
      }
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string analysis_dir() {
  if (const char* env = std::getenv("GRADWIRE_ANALYSIS_DIR")) return env;
  const fs::path beside = fs::path(self_executable()).parent_path().parent_path() / "analysis";
  if (fs::exists(beside / "report.py")) return beside.string();
  return std::string(GRADWIRE_SOURCE_DIR) + "/analysis";
}

std::string find_matplotlib_python() { return first_python_that_runs("import matplotlib"); }

std::string find_python() { return first_python_that_runs("import json, sys"); }

}  // namespace gradwire
