// Every file gradwire reads because a user named it (a scenario, a sweep, a data set's files, a
// trace, a model, a codec's input or state) is opened here first. Only regular files are
// read: a FIFO would block the open (or the read) until someone writes, a device such as
// /dev/zero or /dev/urandom never ends, and a directory is no file. The file is opened without
// blocking and checked with fstat before a byte is read, and it must fit a size limit the
// caller states, so every reader is bounded and a bad path is refused at once.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gradwire {

/// The named file cannot be read as asked (missing, not a regular file, too large, an I/O
/// error). The message starts with the path and says what was expected; callers wrap it in
/// their own error type (ConfigError with the JSON path, the CLI's usage error).
class InputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "12 MiB", "4 GiB": a size limit as messages state it.
std::string byte_limit_text(std::uint64_t bytes);

/// Checks that `path` names a regular file (symbolic links followed) of at most `max_bytes`
/// without reading it, and returns its size. `what` names the file in messages ("payload",
/// "availability trace"). Opening uses O_NONBLOCK, so a FIFO is refused, not waited for.
std::uint64_t check_input_file(const std::string& path, std::uint64_t max_bytes,
                               const std::string& what);

/// Whether `path` names a folder (symbolic links followed): a data set's or a report's folder.
/// False for anything else, a path that does not exist or cannot be looked at included.
bool is_directory(const std::string& path);

/// Reads the whole of a regular file of at most `max_bytes` (checked as check_input_file
/// does, and again while reading: a file that grows past the limit is refused too).
std::string read_input_file(const std::string& path, std::uint64_t max_bytes,
                            const std::string& what);

}  // namespace gradwire
