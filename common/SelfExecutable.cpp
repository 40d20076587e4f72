#include "common/SelfExecutable.h"

#include <filesystem>
#include <system_error>

namespace gradwire {

std::string self_executable() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("gradwire") : p.string();
}

}  // namespace gradwire
