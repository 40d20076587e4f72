// Which hosts a scenario's run has, as clients of the emulator service see them: workers
// 0 .. workers-1, then the parameter server (host `workers`) when the scheme needs a host of
// its own for it. The same indices the in-process engine gives its Messengers.
#pragma once

#include <cstdint>
#include <string>

namespace gradwire {

struct Scenario;

struct HostLayout {
  int workers = 0;
  bool with_server = false;
  std::uint32_t hosts = 0;

  static HostLayout of(const Scenario& scenario);

  /// How logs and error messages name host `h`.
  std::string host_name(std::uint32_t h) const;
};

}  // namespace gradwire
