// Segment offload against per-frame simulation: for every transfer or all-reduce of the grid,
// the simulated time with `network.offload` off and on, their difference, and the wall time
// each took. The accuracy bound in netmodels/README.md is this table's worst row.
//
//   offload_accuracy_bench [--kinds transfer,ring,ps] [--workers 2,8,16,64]
//                          [--bytes 1e3,1e4,1e5,1e6,1e7,1e8] [--rates 1e9,1e10,2.5e10]
//                          [--frames 44] [--max-frame-bytes 2e9]
// Rows whose per-frame run would move more than --max-frame-bytes in total are skipped (the
// per-frame simulation of 64 workers x 100 MB takes many minutes). --frames 1 turns offload
// off altogether (EthernetConfig::offload_active), so both columns are then per-frame.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "BenchArguments.h"
#include "CollectiveTiming.h"

namespace {

using gradwire::testing::number_list;
using gradwire::testing::split_list;

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> kinds = {"transfer", "ring", "ps"};
  std::vector<double> workers = {2, 8, 16, 64};
  std::vector<double> sizes = {1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
  std::vector<double> rates = {1e9, 1e10, 2.5e10};
  double frames = gradwire::EthernetConfig{}.offload_frames;
  double max_bytes = 2e9;
  double queue = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--kinds") kinds = split_list(value);
    else if (flag == "--workers") workers = number_list(value);
    else if (flag == "--bytes") sizes = number_list(value);
    else if (flag == "--rates") rates = number_list(value);
    else if (flag == "--frames") frames = std::stod(value);
    else if (flag == "--max-frame-bytes") max_bytes = std::stod(value);
    else if (flag == "--queue") queue = std::stod(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::printf("%-8s %4s %10s %6s %12s %12s %8s %9s %9s\n", "kind", "n", "bytes", "Gbps",
              "frame_s", "offload_s", "err_%", "wall_fr", "wall_off");
  double worst = 0;
  for (const auto& kind : kinds) {
    for (const double n : workers) {
      if (kind == "transfer" && n != workers.front()) continue;
      for (const double bytes : sizes) {
        const double moved = kind == "transfer" ? bytes : 2 * n * bytes;
        if (moved > max_bytes) continue;
        for (const double rate : rates) {
          gradwire::EthernetConfig config;
          config.rate_bps = rate;
          config.queue_packets = static_cast<std::uint32_t>(queue);
          config.offload = false;
          const auto per_frame = gradwire::testing::time_collective(
              kind, static_cast<int>(n), static_cast<std::int64_t>(bytes), config);
          config.offload = true;
          config.offload_frames = static_cast<std::uint32_t>(frames);
          const auto offload = gradwire::testing::time_collective(
              kind, static_cast<int>(n), static_cast<std::int64_t>(bytes), config);
          const double err = 100.0 * (offload.simulated_s - per_frame.simulated_s) /
                             per_frame.simulated_s;
          worst = std::max(worst, std::fabs(err));
          std::printf("%-8s %4d %10.0f %6.1f %12.6f %12.6f %+8.3f %9.3f %9.3f\n", kind.c_str(),
                      kind == "transfer" ? 2 : static_cast<int>(n), bytes, rate / 1e9,
                      per_frame.simulated_s, offload.simulated_s, err, per_frame.wall_s,
                      offload.wall_s);
          std::fflush(stdout);
        }
      }
    }
  }
  std::printf("worst |error| %.3f %%\n", worst);
  return 0;
}
