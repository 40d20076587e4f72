#include "sim/emulate/NetworkNamespace.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "sim/emulate/IpCommand.h"
#include "sim/emulate/NamespaceProcesses.h"

namespace gradwire {

NetworkNamespace::NetworkNamespace(std::string name) : name_(std::move(name)) {
  run_ip({"netns", "add", name_});
  try {
    ip({"link", "set", "lo", "up"});
  } catch (...) {
    try_ip({"netns", "del", name_});
    throw;
  }
}

NetworkNamespace::~NetworkNamespace() {
  kill_namespace_processes(file_of(name_));
  try_ip({"netns", "del", name_});
}

std::string NetworkNamespace::file_of(const std::string& name) { return "/run/netns/" + name; }

void NetworkNamespace::ip(const std::vector<std::string>& args) const {
  std::vector<std::string> full{"-n", name_};
  full.insert(full.end(), args.begin(), args.end());
  run_ip(full);
}

void NetworkNamespace::sysctl(const std::string& key, const std::string& value) const {
  access_sysctl(key, &value);
}

std::string NetworkNamespace::read_sysctl(const std::string& key) const {
  return access_sysctl(key, nullptr);
}

std::string NetworkNamespace::access_sysctl(const std::string& key, const std::string* value) const {
  // /proc/sys/net shows the namespace of the thread that opens it: a short-lived thread
  // enters the namespace, reads or writes, and ends, so no other thread changes namespace.
  std::string problem;
  std::string read;
  std::thread worker([&] {
    const std::string path = file_of(name_);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      problem = path + ": " + std::strerror(errno);
      return;
    }
    // A thread of its own file-system context, so setns does not touch the process's.
    if (::unshare(CLONE_FS) != 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      problem = std::string("setns: ") + std::strerror(errno);
      ::close(fd);
      return;
    }
    ::close(fd);
    if (value == nullptr) {
      std::ifstream file("/proc/sys/" + key);
      if (!std::getline(file, read)) problem = "cannot read /proc/sys/" + key;
      return;
    }
    std::ofstream file("/proc/sys/" + key);
    file << *value;
    file.flush();
    if (!file) problem = "cannot write /proc/sys/" + key;
  });
  worker.join();
  if (!problem.empty()) throw EmulationError("namespace " + name_ + ": " + problem);
  return read;
}

}  // namespace gradwire
