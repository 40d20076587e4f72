#include "common/AtomicOutput.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "common/InterruptCleanup.h"

namespace gradwire {

namespace fs = std::filesystem;

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
  std::error_code ec;
  fs::remove_all(staging_, ec);
  // Staging folders of this name whose process is gone were left by a run killed without a
  // chance to clean up (SIGKILL, a power cut): nobody will finish them.
  const std::string prefix = "." + name + ".partial-";
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(file.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
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
}

}  // namespace gradwire
