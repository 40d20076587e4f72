#include "sim/emulate/EmulationPrivileges.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "sim/emulate/IpCommand.h"

namespace gradwire {

namespace {

constexpr int kCapNetAdmin = 12;
constexpr int kCapSysAdmin = 21;

std::uint64_t effective_capabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      std::uint64_t caps = 0;
      std::istringstream(line.substr(7)) >> std::hex >> caps;
      return caps;
    }
  }
  return 0;
}

}  // namespace

std::string missing_emulation_privileges() {
  const std::uint64_t caps = effective_capabilities();
  std::string missing;
  if ((caps >> kCapNetAdmin & 1) == 0) missing += "CAP_NET_ADMIN";
  if ((caps >> kCapSysAdmin & 1) == 0) missing += std::string(missing.empty() ? "" : " and ") + "CAP_SYS_ADMIN";
  if (!missing.empty()) {
    return "emulate makes network namespaces and TAP devices and needs root (or " + missing +
           "); run it with sudo";
  }
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) return "emulate needs /dev/net/tun (the tun module), which cannot be opened here";
  ::close(fd);
  if (!ip_available()) return "emulate needs iproute2's `ip` on PATH (Debian package iproute2)";
  return "";
}

}  // namespace gradwire
