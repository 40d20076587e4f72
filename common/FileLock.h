// An exclusive advisory lock on a file (flock), held while the object lives. The kernel drops
// it when its holder exits however it exits, so a lock left by a killed process is never stale.
#pragma once

#include <string>

namespace gradwire {

class FileLock {
 public:
  /// Creates `path` if needed and tries to lock it without waiting. held() says whether it
  /// succeeded; std::runtime_error when the file cannot be opened.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

}  // namespace gradwire
