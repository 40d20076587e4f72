#include "sim/emulate/NamespaceProcesses.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <set>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gradwire {

namespace {

struct NamespaceId {
  dev_t device = 0;
  ino_t inode = 0;
};

bool identify(const std::string& file, NamespaceId& id) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) return false;
  id.device = info.st_dev;
  id.inode = info.st_ino;
  return true;
}

bool in_namespace(pid_t pid, const NamespaceId& target) {
  NamespaceId id;
  return identify("/proc/" + std::to_string(pid) + "/ns/net", id) && id.device == target.device &&
         id.inode == target.inode;
}

std::vector<pid_t> scan(const NamespaceId& target) {
  std::vector<pid_t> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0 || pid == self) continue;
    if (in_namespace(static_cast<pid_t>(pid), target)) pids.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return pids;
}

/// SIGKILL to `pid` if it is still in the namespace. Through a pidfd, so a pid reused between
/// the scan and the kill is never signalled: the namespace is checked on the process the pidfd
/// holds.
bool kill_if_inside(pid_t pid, const NamespaceId& target) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    bool sent = false;
    if (in_namespace(pid, target)) {
      sent = ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0;
    }
    ::close(pidfd);
    return sent;
  }
  if (errno != ENOSYS) return false;  // gone already
#endif
  return in_namespace(pid, target) && ::kill(pid, SIGKILL) == 0;
}

}  // namespace

std::vector<pid_t> processes_in_namespace(const std::string& namespace_file) {
  NamespaceId target;
  if (!identify(namespace_file, target)) return {};
  return scan(target);
}

std::size_t kill_namespace_processes(const std::string& namespace_file) {
  NamespaceId target;
  if (!identify(namespace_file, target)) return 0;
  std::set<pid_t> signalled;
  // A killed process stays in the namespace until the kernel has torn it down; a few seconds
  // bound the wait for a machine under load.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    const std::vector<pid_t> pids = scan(target);
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      if (kill_if_inside(pid, target)) signalled.insert(pid);
    }
    if (std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return signalled.size();
}

}  // namespace gradwire
