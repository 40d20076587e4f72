// tests/sim/emulate/gloo_allreduce.py run for real: on the hosts of a RealKernelNetwork, or
// under `gradwire emulate`. Each repetition lasts until its slowest rank is done; the shortest
// repetition is the one least disturbed by whatever else the machine runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "RealKernelNetwork.h"
#include "ReferencePython.h"
#include "RunGradwire.h"

namespace gradwire::testing {

struct GlooAllReduceRun {
  std::vector<double> slowest;  ///< per repetition, seconds of its slowest rank
  int ranks = 0;                ///< ranks that printed their line
  bool correct = true;          ///< every rank's every sum was right
  int exit_code = 0;            ///< gradwire emulate's (0 on the kernel's network)
  std::string output;           ///< what the ranks printed

  /// The shortest repetition; -1 when no rank reported.
  double best() const {
    return slowest.empty() || ranks == 0 ? -1 : *std::min_element(slowest.begin(), slowest.end());
  }
};

/// The JSON objects in `output` (one a line, possibly after an emulator's "[hN] " prefix) that
/// have `key`.
inline std::vector<nlohmann::json> json_lines_with(const std::string& output, const std::string& key) {
  std::vector<nlohmann::json> lines;
  std::size_t at = 0;
  while ((at = output.find("{\"", at)) != std::string::npos) {
    const std::size_t end = output.find('\n', at);
    const auto line = nlohmann::json::parse(output.substr(at, end - at), nullptr, false);
    if (!line.is_discarded() && line.contains(key)) lines.push_back(line);
    at = end == std::string::npos ? output.size() : end;
  }
  return lines;
}

inline std::string gloo_allreduce_command(std::int64_t elements, int repeats) {
  return reference_python() + " " + std::string(GRADWIRE_SOURCE_DIR) +
         "/tests/sim/emulate/gloo_allreduce.py " + std::to_string(elements) + " " +
         std::to_string(repeats);
}

inline GlooAllReduceRun gloo_run_from(const std::string& output, int repeats) {
  GlooAllReduceRun run;
  run.output = output;
  run.slowest.assign(static_cast<std::size_t>(repeats), 0.0);
  for (const auto& line : json_lines_with(output, "all_seconds")) {
    ++run.ranks;
    run.correct = run.correct && line.value("correct", false);
    const auto seconds = line["all_seconds"].get<std::vector<double>>();
    run.correct = run.correct && seconds.size() == run.slowest.size();
    for (std::size_t k = 0; k < std::min(seconds.size(), run.slowest.size()); ++k) {
      run.slowest[k] = std::max(run.slowest[k], seconds[k]);
    }
  }
  return run;
}

/// gloo's all_reduce of `elements` float32 among every host of `net` over real kernel TCP,
/// each rank bound to its host's veth.
inline GlooAllReduceRun kernel_gloo_all_reduce(const RealKernelNetwork& net, int hosts,
                                               std::int64_t elements, int repeats, int timeout_s) {
  std::vector<std::string> commands;
  for (int h = 0; h < hosts; ++h) {
    commands.push_back(RealKernelNetwork::rank_environment(h, hosts, 29500) +
                       gloo_allreduce_command(elements, repeats));
  }
  std::string all;
  for (const auto& out : net.run_on_hosts(commands, timeout_s)) all += out;
  return gloo_run_from(all, repeats);
}

/// The same program under `gradwire emulate` over the scenario at `path`.
inline GlooAllReduceRun emulated_gloo_all_reduce(const std::string& path, std::int64_t elements,
                                                 int repeats, int timeout_s) {
  const auto r = run_gradwire("emulate " + path + " --timeout " + std::to_string(timeout_s) +
                              " --max-lag 250 -- " + gloo_allreduce_command(elements, repeats));
  GlooAllReduceRun run = gloo_run_from(r.output, repeats);
  run.exit_code = r.code;
  return run;
}

}  // namespace gradwire::testing
