// A setup step of the emulator failed: an `ip` command, a TAP device, a system call. The
// message says which and why; `gradwire emulate` reports it with exit 1 after removing what
// it had made.
#pragma once

#include <stdexcept>

namespace gradwire {

class EmulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gradwire
