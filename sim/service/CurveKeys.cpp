#include "sim/service/CurveKeys.h"

#include <cctype>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>
#include <zmq.h>

#include "common/AtomicOutput.h"
#include "common/ConfigError.h"
#include "common/InputFile.h"

namespace gradwire {

namespace {

constexpr std::size_t kZ85KeyChars = 40;

std::string read_key_file(const std::string& path, const std::string& option) {
  // A key file holds 40 characters and a newline; no key file comes near 4 KiB.
  std::string text;
  try {
    text = read_input_file(path, 4096, "key file");
  } catch (const InputFileError& e) {
    throw ConfigError(option, e.what());
  }
  std::string key;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) key += c;
  }
  if (key.size() != kZ85KeyChars) {
    throw ConfigError(option, path + " does not hold one Z85 CURVE key (40 characters, as "
                                     "written by `gradwire curve-keygen`)");
  }
  return key;
}

void require_curve(const std::string& option) {
  if (!zmq_has("curve")) {
    throw ConfigError(option, "this libzmq was built without CURVE support");
  }
}

}  // namespace

bool is_loopback_endpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return true;
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  std::string host = endpoint.substr(6);
  // tcp://HOST:PORT or tcp://[IPV6]:PORT; a "source;" prefix is for connects only.
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
  } else {
    const auto colon = host.rfind(':');
    if (colon == std::string::npos) return false;
    host = host.substr(0, colon);
  }
  if (host == "localhost" || host == "::1") return true;
  if (host.rfind("127.", 0) != 0) return false;
  // 127.a.b.c with numeric parts only (not an interface named "127.x").
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots == 3;
}

CurveKeyPair make_curve_keypair() {
  require_curve("curve");
  char pub[41] = {0};
  char sec[41] = {0};
  if (zmq_curve_keypair(pub, sec) != 0) throw ConfigError("curve", "zmq_curve_keypair failed");
  return CurveKeyPair{pub, sec};
}

CurveKeyPair read_curve_secret_key(const std::string& path, const std::string& option) {
  require_curve(option);
  const std::string secret = read_key_file(path, option);
  char pub[41] = {0};
  if (zmq_curve_public(pub, secret.c_str()) != 0) {
    throw ConfigError(option, path + " is not a valid Z85 CURVE secret key");
  }
  return CurveKeyPair{pub, secret};
}

std::string read_curve_public_key(const std::string& path, const std::string& option) {
  require_curve(option);
  return read_key_file(path, option);
}

CurveKeyPair write_curve_keypair(const std::string& prefix) {
  const CurveKeyPair keys = make_curve_keypair();
  const std::string secret_path = prefix + ".secret";
  // Created owner-only from the start, and never over an existing key.
  const int fd = ::open(secret_path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    throw ConfigError("curve-keygen", "cannot create " + secret_path + ": " +
                                          std::strerror(errno) + " (an existing key is never "
                                          "overwritten)");
  }
  const std::string line = keys.secret_key + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + secret_path);
  write_file_atomically(prefix + ".public", keys.public_key + "\n");
  return keys;
}

}  // namespace gradwire
