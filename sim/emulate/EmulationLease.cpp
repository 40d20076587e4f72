#include "sim/emulate/EmulationLease.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/emulate/EmulationError.h"

namespace gradwire {

std::string EmulationLease::directory() { return "/run/gradwire"; }

std::string EmulationLease::path_for(pid_t pid) {
  return directory() + "/emulate-" + std::to_string(pid) + ".lock";
}

EmulationLease::EmulationLease() : path_(path_for(::getpid())) {
  if (::mkdir(directory().c_str(), 0755) != 0 && errno != EEXIST) {
    throw EmulationError(directory() + ": " + std::strerror(errno));
  }
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) throw EmulationError(path_ + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    throw EmulationError(path_ + ": cannot lock: " + std::strerror(error));
  }
}

EmulationLease::~EmulationLease() {
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace gradwire
