// Wall time per simulated step of a synchronous run whose workers compute one after another
// (compute.parallel_workers 1) or together on the pool (nodes/schemes/ComputeBatch.h), on a
// small model where one worker's pass cannot use the machine's cores by itself. Each
// configuration runs `--repeats` times, interleaved, and the median is reported, so a load
// spike on a shared machine moves one sample rather than one configuration.
//
//   parallel_compute_bench [--model cnn|mlp] [--workers N] [--steps N] [--batch N]
//                          [--repeats N] [--topology ring|ps]
// prints one JSON object per configuration: {"parallel_workers", "threads", "wall_per_step_ms",
// "ns3_share", "passes_per_batch"} and then {"speedup": median wall of (1 worker at a time, 1 thread) / median
// wall of (2 at a time, 1 thread each)}. Besides these, (1 at a time, 2 threads) shows what
// LibTorch's intra-op threads alone give on the same model.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace {

struct Options {
  std::string model = "cnn";
  std::string topology = "ring";
  int workers = 4;
  int steps = 40;
  int batch = 64;
  int repeats = 5;
};

struct Config {
  int parallel_workers;
  int threads;
  std::vector<double> wall_per_step;
  std::vector<double> ns3_share;
  double passes_per_batch = 1;
};

nlohmann::json scenario(const Options& o, const Config& c) {
  nlohmann::json model = {{"kind", "cnn"}};
  nlohmann::json dataset = {{"kind", "synthetic"}, {"shape", {1, 28, 28}}, {"classes", 10},
                            {"train_samples", 4096}, {"test_samples", 256}};
  if (o.model == "mlp") {
    model = {{"kind", "mlp"}, {"hidden", {256, 128}}};
    dataset = {{"kind", "synthetic"}, {"features", 64}, {"train_samples", 4096},
               {"test_samples", 256}};
  }
  return {{"gradwire", 1},
          {"name", "parallel-compute-bench"},
          {"seed", 1},
          {"model", model},
          {"dataset", dataset},
          {"training", {{"workers", o.workers}, {"steps", o.steps}, {"batch", o.batch},
                        {"eval_every", o.steps}, {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.005}, {"threads", c.threads},
                       {"parallel_workers", c.parallel_workers}}},
          {"topology", {{"kind", o.topology}}},
          {"network", {{"rate", "10Gbps"}}}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--model") {
      o.model = value;
    } else if (key == "--topology") {
      o.topology = value;
    } else if (key == "--workers") {
      o.workers = std::stoi(value);
    } else if (key == "--steps") {
      o.steps = std::stoi(value);
    } else if (key == "--batch") {
      o.batch = std::stoi(value);
    } else if (key == "--repeats") {
      o.repeats = std::stoi(value);
    } else {
      std::cerr << "unknown option " << key << "\n";
      return 2;
    }
  }
  std::vector<Config> configs = {{1, 1, {}, {}}, {1, 2, {}, {}}, {2, 1, {}, {}}};
  for (int r = 0; r < o.repeats; ++r) {
    for (Config& c : configs) {
      const gradwire::RunResult result =
          gradwire::Engine(gradwire::load_scenario(scenario(o, c))).run("", nullptr);
      const double wall = result.summary["wall_time_s"].get<double>();
      c.wall_per_step.push_back(wall / o.steps);
      c.ns3_share.push_back(result.summary["ns3_wall_time_s"].get<double>() / wall);
      if (result.summary.contains("parallel_compute")) {
        const auto& counts = result.summary["parallel_compute"];
        c.passes_per_batch = counts["passes"].get<double>() / counts["batches"].get<double>();
      }
    }
  }
  for (const Config& c : configs) {
    std::cout << nlohmann::json{{"model", o.model},
                                {"topology", o.topology},
                                {"workers", o.workers},
                                {"batch", o.batch},
                                {"parallel_workers", c.parallel_workers},
                                {"threads", c.threads},
                                {"wall_per_step_ms", 1e3 * median(c.wall_per_step)},
                                {"ns3_share", median(c.ns3_share)},
                                {"passes_per_batch", c.passes_per_batch}}
                     .dump()
              << "\n";
  }
  std::cout << nlohmann::json{{"speedup", median(configs[0].wall_per_step) /
                                              median(configs[2].wall_per_step)},
                              {"speedup_over_2_threads", median(configs[1].wall_per_step) /
                                                             median(configs[2].wall_per_step)}}
                   .dump()
            << "\n";
  return 0;
}
