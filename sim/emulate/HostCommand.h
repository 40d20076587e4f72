// What runs on one emulated host: the user's command with its placeholders filled in, and the
// environment torch.distributed reads, started inside the host's network namespace.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gradwire {

struct HostCommand {
  std::size_t host = 0;
  std::string label;      ///< "h0": the prefix of its output lines
  std::string netns;      ///< the namespace it runs in
  std::vector<std::string> argv;
  std::vector<std::string> environment;  ///< "KEY=VALUE" added to (or replacing in) ours
};

/// Replaces every `{name}` of `values` in each word ({rank}, {world}, {addr}, {master_addr},
/// {addr:N}); other braces are left as they are.
std::vector<std::string> substitute_placeholders(const std::vector<std::string>& words,
                                                 const std::map<std::string, std::string>& values);

}  // namespace gradwire
