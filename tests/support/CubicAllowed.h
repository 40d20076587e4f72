// CUBIC for the network namespaces of the real-kernel references and the emulator. gradwire's
// simulated TCP is CUBIC (Linux's default), so the references it is held against should run it
// too. A namespace may choose only what the machine's own namespace allows
// (net.ipv4.tcp_allowed_congestion_control): a machine whose own default is BBR allows only
// "reno bbr" although its kernel has CUBIC (tcp_available_congestion_control). While an
// instance lives, root adds CUBIC to that list where the kernel has it and the list leaves it
// out; the destructor writes the list back as it was. Where the list cannot be written (not
// root, a read-only /proc), nothing changes and the callers fall back (Reno for the
// references, the namespace's default for the emulator), saying so.
#pragma once

#include <fstream>
#include <string>

#include "sim/emulate/CongestionControl.h"

namespace gradwire::testing {

class CubicAllowed {
 public:
  CubicAllowed() {
    const std::string allowed = congestion_control_list(kAllowedCongestionControlFile);
    if (congestion_control_listed(allowed, "cubic") ||
        !congestion_control_listed(congestion_control_list(kAvailableCongestionControlFile), "cubic")) {
      return;
    }
    if (write(allowed + " cubic") &&
        congestion_control_listed(congestion_control_list(kAllowedCongestionControlFile), "cubic")) {
      original_ = allowed;
    }
  }
  ~CubicAllowed() {
    if (!original_.empty()) write(original_);
  }
  CubicAllowed(const CubicAllowed&) = delete;
  CubicAllowed& operator=(const CubicAllowed&) = delete;

 private:
  static bool write(const std::string& list) {
    std::ofstream file(kAllowedCongestionControlFile);
    file << list << '\n';
    file.flush();
    return static_cast<bool>(file);
  }

  std::string original_;  ///< the list before CUBIC was added; empty: nothing was changed
};

}  // namespace gradwire::testing
