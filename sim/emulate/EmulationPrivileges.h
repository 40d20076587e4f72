// What the emulator needs from the machine before it makes anything: CAP_NET_ADMIN and
// CAP_SYS_ADMIN (network namespaces, TAP devices, links), /dev/net/tun and iproute2's `ip`.
#pragma once

#include <string>

namespace gradwire {

/// "" when the emulator can run here, else what is missing, in words.
std::string missing_emulation_privileges();

}  // namespace gradwire
