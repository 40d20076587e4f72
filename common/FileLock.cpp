#include "common/FileLock.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace gradwire {

FileLock::FileLock(const std::string& path) {
  // Close-on-exec: children started while it is held must not keep it after we let go.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot open lock file " + path + ": " + std::strerror(errno));
  }
  held_ = ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_), held_(other.held_) {
  other.fd_ = -1;
  other.held_ = false;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

}  // namespace gradwire
