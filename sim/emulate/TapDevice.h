// A TAP device opened on /dev/net/tun. It is not persistent: it exists while this object holds
// its file descriptor, so even a crashed emulator leaves no TAP behind. The descriptor stays
// attached when the link is moved into another network namespace.
#pragma once

#include <string>

namespace gradwire {

class TapDevice {
 public:
  /// Creates the TAP `name` (at most 15 characters) in the current namespace; EmulationError
  /// when it cannot.
  explicit TapDevice(std::string name);
  ~TapDevice();
  TapDevice(const TapDevice&) = delete;
  TapDevice& operator=(const TapDevice&) = delete;

  const std::string& name() const { return name_; }
  /// Reads give one Ethernet frame each, writes take one (no packet-information prefix).
  int fd() const { return fd_; }

 private:
  std::string name_;
  int fd_ = -1;
};

}  // namespace gradwire
