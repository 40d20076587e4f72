// Who may reach the emulator service. It binds to loopback by default; any other address
// exposes a simulator that accepts arbitrary bytes, so a non-loopback bind requires ZeroMQ
// CURVE (encryption, and clients must know the server's public key). Key files hold one Z85
// key (40 characters); `gradwire curve-keygen PREFIX` writes PREFIX.secret and PREFIX.public.
#pragma once

#include <string>

namespace gradwire {

struct CurveKeyPair {
  std::string public_key;  ///< Z85, 40 characters
  std::string secret_key;  ///< Z85, 40 characters
};

/// True for endpoints only this machine can reach: tcp:// on 127.0.0.0/8, localhost or ::1,
/// and ipc:// / inproc://. Wildcards (*, 0.0.0.0, ::) and interface names are not local.
bool is_loopback_endpoint(const std::string& endpoint);

/// A fresh key pair (ConfigError when this libzmq has no CURVE support).
CurveKeyPair make_curve_keypair();

/// Reads a secret key file and derives its public key. ConfigError naming `option` on a
/// missing, unreadable or malformed file.
CurveKeyPair read_curve_secret_key(const std::string& path, const std::string& option);

/// Reads a public key file. ConfigError naming `option` on failure.
std::string read_curve_public_key(const std::string& path, const std::string& option);

/// Writes PREFIX.secret (mode 0600) and PREFIX.public; returns the pair.
CurveKeyPair write_curve_keypair(const std::string& prefix);

}  // namespace gradwire
