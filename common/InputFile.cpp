#include "common/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gradwire {

namespace {

/// Closes the descriptor however the reader leaves.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string too_large(const std::string& path, const std::string& what, std::uint64_t size,
                      std::uint64_t max_bytes) {
  return path + ": expected a " + what + " of at most " + byte_limit_text(max_bytes) +
         ", it has " + (size == 0 ? std::string("more") : std::to_string(size) + " bytes");
}

/// Opens `path` for reading without blocking on a FIFO, and refuses anything but a regular
/// file of at most `max_bytes`. Returns the descriptor (blocking again) and the size.
int open_checked(const std::string& path, std::uint64_t max_bytes, const std::string& what,
                 std::uint64_t& size) {
  if (path.empty()) throw InputFileError("expected the path of a " + what + ", got an empty one");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int code = errno;
    throw InputFileError(path + ": cannot read the " + what + " (" + std::strerror(code) + ")");
  }
  Descriptor guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int code = errno;
    throw InputFileError(path + ": cannot read the " + what + " (" + std::strerror(code) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputFileError(path + " is " + kind_of(st.st_mode) + "; expected the " + what +
                         " as a regular file");
  }
  size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) throw InputFileError(too_large(path, what, size, max_bytes));
  // A regular file never blocks; clear the flag anyway so later reads are ordinary ones.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return guard.release();
}

}  // namespace

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string byte_limit_text(std::uint64_t bytes) {
  constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::uint64_t check_input_file(const std::string& path, std::uint64_t max_bytes,
                               const std::string& what) {
  std::uint64_t size = 0;
  Descriptor fd(open_checked(path, max_bytes, what, size));
  return size;
}

std::string read_input_file(const std::string& path, std::uint64_t max_bytes,
                            const std::string& what) {
  std::uint64_t size = 0;
  Descriptor fd(open_checked(path, max_bytes, what, size));
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int code = errno;
      throw InputFileError(path + ": cannot read the " + what + " (" + std::strerror(code) +
                           ")");
    }
    if (got == 0) break;
    // A file that grows while it is read (a log being written) is held to the same limit.
    if (text.size() + static_cast<std::size_t>(got) > max_bytes) {
      throw InputFileError(too_large(path, what, 0, max_bytes));
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

}  // namespace gradwire
