#include "sim/emulate/StaleEmulations.h"

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <map>
#include <ostream>
#include <regex>

#include <fcntl.h>
#include <net/if.h>
#include <sys/file.h>
#include <unistd.h>

#include "sim/emulate/EmulationLease.h"
#include "sim/emulate/IpCommand.h"
#include "sim/emulate/NamespaceProcesses.h"

namespace gradwire {

namespace {

namespace fs = std::filesystem;

const std::string kNetnsDirectory = "/run/netns";

/// Holds a dead emulator's lease while its remains are removed, so two cleaning runs do not
/// both remove them, and removes the lease file afterwards.
class AbandonedLease {
 public:
  /// Whether emulator `pid` is gone (its lease taken here).
  bool claim(pid_t pid) {
    pid_ = pid;
    if (pid == ::getpid()) return true;  // a predecessor with our pid: we make nothing yet
    fd_ = ::open(EmulationLease::path_for(pid).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ < 0) return errno == ENOENT && ::kill(pid, 0) != 0 && errno == ESRCH;
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  ~AbandonedLease() {
    if (fd_ < 0) return;
    ::unlink(EmulationLease::path_for(pid_).c_str());
    ::close(fd_);
  }

 private:
  pid_t pid_ = 0;
  int fd_ = -1;
};

pid_t pid_in(const std::string& text) {
  try {
    const long long value = std::stoll(text);
    return value > 0 && value < (1LL << 31) ? static_cast<pid_t>(value) : 0;
  } catch (...) {
    return 0;
  }
}

std::vector<std::string> links_here() {
  std::vector<std::string> names;
  if (struct if_nameindex* all = ::if_nameindex()) {
    for (struct if_nameindex* i = all; i->if_index != 0; ++i) names.emplace_back(i->if_name);
    ::if_freenameindex(all);
  }
  return names;
}

}  // namespace

std::vector<StaleEmulation> remove_stale_emulations() {
  std::map<pid_t, StaleEmulation> found;
  const std::regex namespace_name("gradwire-([0-9]+)-h[0-9]+");
  const std::regex tap_name("gw([0-9]+)t[0-9]+");
  const std::regex lease_name("emulate-([0-9]+)\\.lock");
  std::error_code ignored;
  std::smatch m;
  for (const auto& entry : fs::directory_iterator(kNetnsDirectory, ignored)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, namespace_name)) {
      if (const pid_t pid = pid_in(m[1])) found[pid].namespaces.push_back(name);
    }
  }
  for (const std::string& name : links_here()) {
    if (std::regex_match(name, m, tap_name)) {
      if (const pid_t pid = pid_in(m[1])) found[pid].taps.push_back(name);
    }
  }
  // Leases of emulators killed before they made anything: removed without a word.
  for (const auto& entry : fs::directory_iterator(EmulationLease::directory(), ignored)) {
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, lease_name)) continue;
    const pid_t pid = pid_in(m[1]);
    if (pid == 0 || pid == ::getpid() || found.count(pid) != 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      AbandonedLease lease;
      lease.claim(pid);
    }
  }

  std::vector<StaleEmulation> removed;
  for (auto& [pid, remains] : found) {
    AbandonedLease lease;
    if (!lease.claim(pid)) continue;  // a live emulator's
    StaleEmulation done;
    done.emulator = pid;
    for (const std::string& name : remains.namespaces) {
      // Its processes first: a namespace deleted under them keeps them running, unreachable.
      done.processes += kill_namespace_processes(kNetnsDirectory + "/" + name);
      if (try_ip({"netns", "del", name})) {
        done.namespaces.push_back(name);
      } else {
        done.failures.push_back("namespace " + name + " (`ip netns del " + name + "` failed)");
      }
    }
    for (const std::string& name : remains.taps) {
      if (try_ip({"link", "del", name})) {
        done.taps.push_back(name);
      } else {
        done.failures.push_back("TAP " + name + " (`ip link del " + name + "` failed)");
      }
    }
    removed.push_back(std::move(done));
  }
  return removed;
}

void report_stale_emulations(const std::vector<StaleEmulation>& removed, std::ostream& err) {
  const auto list = [](const std::vector<std::string>& names) {
    std::string text;
    for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
    return text;
  };
  for (const StaleEmulation& s : removed) {
    err << "emulate: emulator " << s.emulator << " no longer runs; removed what it left:";
    bool first = true;
    const auto part = [&](const std::string& text) {
      err << (first ? " " : "; ") << text;
      first = false;
    };
    if (!s.namespaces.empty()) part("namespaces " + list(s.namespaces));
    if (!s.taps.empty()) part("TAP devices " + list(s.taps));
    part(std::to_string(s.processes) + (s.processes == 1 ? " process" : " processes") +
         " still running in them");
    if (!s.failures.empty()) part("could not remove " + list(s.failures));
    err << "\n";
  }
}

}  // namespace gradwire
