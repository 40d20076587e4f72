// Test support: a text file (an availability trace, ...) in the temporary folder, removed when
// the object goes.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace gradwire::testing {

class TemporaryTextFile {
 public:
  explicit TemporaryTextFile(const std::string& text) {
    char name[] = "/tmp/gradwire-test-file-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    ::close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TemporaryTextFile() { std::remove(path_.c_str()); }
  TemporaryTextFile(const TemporaryTextFile&) = delete;
  TemporaryTextFile& operator=(const TemporaryTextFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gradwire::testing
