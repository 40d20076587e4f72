#include "common/AtomicOutput.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "common/InterruptCleanup.h"

namespace gradwire {

namespace fs = std::filesystem;

namespace {

/// Whether process `pid` still runs. A zombie, or a process already tearing itself down after
/// SIGKILL (the kernel's PF_EXITING flag in /proc/PID/stat), will never finish a staging
/// folder, although kill(pid, 0) still finds it for a moment after it was killed.
bool process_runs(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return true;  // cannot tell: keep its folder
  // After "pid (comm) ": state, ppid, pgrp, session, tty_nr, tpgid, flags. comm may hold
  // spaces and parentheses, so fields are counted from the last ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return true;
  std::istringstream fields(text.substr(close + 1));
  char state = 0;
  long ppid = 0, pgrp = 0, session = 0, tty = 0, tpgid = 0;
  unsigned long flags = 0;
  if (!(fields >> state >> ppid >> pgrp >> session >> tty >> tpgid >> flags)) return true;
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING
  return state != 'Z' && state != 'X' && state != 'x' && (flags & kExiting) == 0;
}

/// Removes `<base>/.<name>.partial-<pid>` folders whose process no longer runs, except
/// `keep`: left by a run killed without a chance to clean up (SIGKILL, a power cut), nobody
/// will finish them. Those of running processes are theirs and stay.
void remove_abandoned_staging(const fs::path& base, const std::string& name,
                              const std::string& keep) {
  const std::string prefix = "." + name + ".partial-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) != 0 || entry.path().string() == keep) continue;
    const char* digits = file.c_str() + prefix.size();
    char* end = nullptr;
    const long pid = std::strtol(digits, &end, 10);
    if (end == digits || *end != '\0' || pid <= 0) continue;
    if (!process_runs(pid)) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << content;
    out.flush();
    if (!out) throw std::runtime_error("error writing " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

std::string prepare_output_parent(const std::string& parent) {
  const fs::path dir = parent.empty() ? fs::path(".") : fs::path(parent);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ec.message();
  if (!fs::is_directory(dir, ec)) return "not a directory";
  // A probe folder, as a run folder would be made: access(2) alone misses read-only mounts.
  const fs::path probe = dir / (".gradwire-probe-" + std::to_string(::getpid()));
  fs::create_directory(probe, ec);
  if (ec) return ec.message();
  fs::remove(probe, ec);
  return "";
}

RunDirectory::RunDirectory(const std::string& parent, const std::string& name) {
  fs::create_directories(parent.empty() ? "." : parent);
  const fs::path base = parent.empty() ? fs::path(".") : fs::path(parent);
  staging_ = (base / ("." + name + ".partial-" + std::to_string(::getpid()))).string();
  final_ = (base / name).string();
  name_ = name;
  std::error_code ec;
  fs::remove_all(staging_, ec);
  remove_abandoned_staging(base, name_, staging_);
  InterruptCleanup::remember_folder(staging_);
  fs::create_directories(staging_);
}

RunDirectory::~RunDirectory() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  InterruptCleanup::forget_folder(staging_);
}

void RunDirectory::commit() {
  // Not while an interruption is removing the staging folder; afterwards it is forgotten.
  InterruptCleanup::exclusive([this] { commit_now(); });
  // Again at the end: a run killed just before this one started may have been still exiting
  // then.
  remove_abandoned_staging(fs::path(final_).parent_path(), name_, staging_);
}

void RunDirectory::commit_now() {
  std::error_code ec;
  const std::string old = final_ + ".old-" + std::to_string(::getpid());
  if (fs::exists(final_)) {
    fs::rename(final_, old, ec);
    if (ec) throw std::runtime_error("cannot replace " + final_ + ": " + ec.message());
  }
  fs::rename(staging_, final_, ec);
  if (ec) throw std::runtime_error("cannot move results into " + final_ + ": " + ec.message());
  committed_ = true;
  fs::remove_all(old, ec);
  InterruptCleanup::committed_locked();
}

}  // namespace gradwire
