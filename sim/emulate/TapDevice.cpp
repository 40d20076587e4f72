#include "sim/emulate/TapDevice.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "sim/emulate/IpCommand.h"

namespace gradwire {

TapDevice::TapDevice(std::string name) : name_(std::move(name)) {
  if (name_.size() >= IFNAMSIZ) throw EmulationError("TAP name too long: " + name_);
  // Close-on-exec: a command the emulator starts must not hold the TAP open after we close it.
  fd_ = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd_ < 0) throw EmulationError(std::string("/dev/net/tun: ") + std::strerror(errno));
  ifreq request{};
  request.ifr_flags = IFF_TAP | IFF_NO_PI;
  std::strncpy(request.ifr_name, name_.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd_, TUNSETIFF, &request) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw EmulationError("creating TAP " + name_ + ": " + std::strerror(error));
  }
}

TapDevice::~TapDevice() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace gradwire
