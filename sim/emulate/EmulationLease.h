// Marks this process as a live emulator for other gradwire processes: the lock file
// /run/gradwire/emulate-<pid>.lock, held (flock) while the object lives. The kernel drops the
// lock when the process ends, however it ends (SIGKILL included), so a later run can tell the
// namespaces of a live emulator (lock held) from those a dead one left behind (lock free), even
// when the dead one's pid has been reused by another program.
#pragma once

#include <sys/types.h>

#include <string>

namespace gradwire {

class EmulationLease {
 public:
  /// Takes this process's lease; EmulationError when /run/gradwire cannot hold it.
  EmulationLease();
  /// Removes the lock file and drops the lock.
  ~EmulationLease();
  EmulationLease(const EmulationLease&) = delete;
  EmulationLease& operator=(const EmulationLease&) = delete;

  /// The folder of the lock files.
  static std::string directory();
  /// The lock file of emulator `pid`.
  static std::string path_for(pid_t pid);

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace gradwire
