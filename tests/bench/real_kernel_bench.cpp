// gloo's all_reduce of DDP's gradient sizes three ways: on real Linux TCP (namespaces, veths, a
// bridge and tbf: tests/support/RealKernelNetwork.h), under `gradwire emulate`, and through the
// simulator running gloo's own ring schedule over the same `ethernet` scenario. Prints a Markdown
// table of the shortest repetition's time (each repetition until its slowest rank is done) and
// the ratios simulated / real and emulated / simulated. "real on a wire" is the kernel's time
// plus tbf's head start after idle, times 1538 / 1514 (the framing a veth does not charge and a
// wire does); docs/fidelity.md explains both.
//
// Usage (root, from the repository root, after building gradwire and this benchmark):
//   build/tests/bench/real_kernel_bench [--sizes-mb 1.6,5.3,19,45] [--ranks 4,8]
//       [--repeats 3] [--rate-mbit 100] [--no-emulate]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "BenchArguments.h"
#include "EmulationFolder.h"
#include "GlooAllReduceRuns.h"
#include "RealKernelNetwork.h"
#include "SimulatedReference.h"

namespace fs = std::filesystem;
using gradwire::testing::RealKernelNetwork;

namespace {

int usage(const std::string& what) {
  std::fprintf(stderr,
               "real_kernel_bench: %s\nusage: real_kernel_bench [--sizes-mb 1.6,5.3,19,45] "
               "[--ranks 4,8] [--repeats 3] [--rate-mbit 100] [--no-emulate]\n",
               what.c_str());
  return 2;
}

std::string scenario(const fs::path& dir, int ranks, int rate_mbit) {
  return gradwire::testing::write_scenario(
      dir, "kernel-reference-" + std::to_string(ranks), ranks,
      {{"family", "ethernet"}, {"rate", std::to_string(rate_mbit) + "Mbps"}, {"delay", "0us"}});
}

std::string seconds_cell(double s) {
  if (s < 0) return "failed";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

std::string ratio_cell(double a, double b) {
  if (a < 0 || b <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", a / b);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> sizes_mb = {1.6, 5.3, 19, 45};
  std::vector<double> ranks_list = {4, 8};
  int repeats = 3;
  int rate_mbit = 100;
  bool emulate = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-emulate") {
      emulate = false;
      continue;
    }
    if (a != "--sizes-mb" && a != "--ranks" && a != "--repeats" && a != "--rate-mbit") {
      return usage("unknown option " + a);
    }
    if (i + 1 >= argc) return usage(a + " needs a value");
    const std::string value = argv[++i];
    std::vector<double> numbers;
    try {
      numbers = gradwire::testing::number_list(value);
    } catch (const std::exception&) {
      numbers.clear();
    }
    const bool whole = a == "--ranks" || a == "--repeats" || a == "--rate-mbit";
    bool good = !numbers.empty() && (a == "--sizes-mb" || a == "--ranks" || numbers.size() == 1);
    for (double n : numbers) {
      good = good && n > 0 && (!whole || n == static_cast<int>(n)) && (a != "--ranks" || n >= 2);
    }
    if (!good) {
      return usage(a + " expects " +
                   (a == "--sizes-mb"  ? std::string("positive sizes in MB, comma-separated")
                    : a == "--ranks"   ? std::string("whole numbers of ranks >= 2, comma-separated")
                                       : std::string("one positive whole number")) +
                   ", not '" + value + "'");
    }
    if (a == "--sizes-mb") sizes_mb = numbers;
    else if (a == "--ranks") ranks_list = numbers;
    else if (a == "--repeats") repeats = static_cast<int>(numbers[0]);
    else rate_mbit = static_cast<int>(numbers[0]);
  }
  if (::geteuid() != 0) return usage("needs root (network namespaces, veths, a bridge, tc)");

  const fs::path dir = fs::temp_directory_path() / ("gradwire-real-kernel-bench-" + std::to_string(::getpid()));
  gradwire::testing::make_open_folder(dir);
  const double burst_s = RealKernelNetwork::kBurstBytes * 8 / (rate_mbit * 1e6);

  std::printf("| ranks | gradient | real (s) | real on a wire (s) | emulated (s) | simulated (s) | "
              "simulated / real | emulated / simulated |\n|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  std::string congestion_control;
  for (double r : ranks_list) {
    const int ranks = static_cast<int>(r);
    const std::string path = scenario(dir, ranks, rate_mbit);
    for (double mb : sizes_mb) {
      const auto elements = static_cast<std::int64_t>(mb * 1e6 / 4);
      double real_s = -1;
      {
        RealKernelNetwork net(ranks, rate_mbit);
        if (!net.error().empty()) {
          std::fprintf(stderr, "cannot build the kernel's network: %s\n", net.error().c_str());
          fs::remove_all(dir);
          return 1;
        }
        congestion_control = net.congestion_control();
        const auto run = gradwire::testing::kernel_gloo_all_reduce(net, ranks, elements, repeats, 300);
        if (run.ranks == ranks && run.correct) real_s = run.best();
        else std::fprintf(stderr, "real kernel, %d ranks, %.1f MB:\n%s\n", ranks, mb, run.output.c_str());
      }
      const double wire_s = real_s < 0 ? -1 : (real_s + burst_s) * RealKernelNetwork::kFrameRatio;
      double emulated_s = -1;
      if (emulate) {
        const auto run = gradwire::testing::emulated_gloo_all_reduce(path, elements, repeats, 300);
        if (run.exit_code == 0 && run.ranks == ranks && run.correct) emulated_s = run.best();
        else std::fprintf(stderr, "emulated, %d ranks, %.1f MB:\n%s\n", ranks, mb, run.output.c_str());
      }
      const double simulated_s = gradwire::testing::simulated_all_reduce(path, elements, true, ranks);
      std::printf("| %d | %.1f MB | %s | %s | %s | %s | %s | %s |\n", ranks, mb,
                  seconds_cell(real_s).c_str(), seconds_cell(wire_s).c_str(),
                  emulate ? seconds_cell(emulated_s).c_str() : "-", seconds_cell(simulated_s).c_str(),
                  ratio_cell(simulated_s, wire_s).c_str(),
                  emulate ? ratio_cell(emulated_s, simulated_s).c_str() : "-");
      std::fflush(stdout);
    }
  }
  std::printf("\n%d Mbit/s; kernel TCP congestion control %s; shortest of %d repetitions.\n",
              rate_mbit, congestion_control.c_str(), repeats);
  fs::remove_all(dir);
  return 0;
}
