// The error every reader of untrusted bytes raises: codec payloads, datagrams, protocol frames,
// saved state. Callers catch it to reject one input and go on; it is never a crash.
#pragma once

#include <stdexcept>

namespace gradwire {

/// Malformed, truncated or mismatched bytes.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gradwire
