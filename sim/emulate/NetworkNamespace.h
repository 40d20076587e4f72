// One Linux network namespace (`ip netns add`), named so that runs in parallel never collide,
// removed (`ip netns del`) by the destructor on every exit path, after every process still
// inside it is killed (a namespace deleted under its processes keeps them running, unlisted).
#pragma once

#include <string>
#include <vector>

namespace gradwire {

class NetworkNamespace {
 public:
  /// Creates the namespace `name` with its loopback up; EmulationError when it cannot.
  explicit NetworkNamespace(std::string name);
  ~NetworkNamespace();
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;

  const std::string& name() const { return name_; }
  /// The file that holds namespace `name` open (/run/netns/NAME).
  static std::string file_of(const std::string& name);

  /// `ip -n NAME ARGS...` (EmulationError on failure).
  void ip(const std::vector<std::string>& args) const;

  /// Writes a sysctl inside the namespace ("net/ipv6/conf/all/disable_ipv6" = "1").
  void sysctl(const std::string& key, const std::string& value) const;
  /// Reads a sysctl inside the namespace, without its trailing newline.
  std::string read_sysctl(const std::string& key) const;

 private:
  /// Writes `*value` to /proc/sys/`key` inside the namespace, or reads it when `value` is null.
  std::string access_sysctl(const std::string& key, const std::string* value) const;

  std::string name_;
};

}  // namespace gradwire
