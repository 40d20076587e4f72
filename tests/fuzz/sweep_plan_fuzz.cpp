// libFuzzer target: the sweep loader (sim/study/SweepPlan.h) on arbitrary JSON text. A
// string "base" names a scenario file relative to scenarios/studies/ of the source tree, as
// the shipped sweeps do ("../quickstart.json").
//
// What must hold: a document that is not a valid sweep raises ConfigError and nothing else.
// A plan that expands has one run per axis combination and seed, every run with its own
// folder name and a scenario that loads.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "ScenarioSandbox.h"
#include "common/ConfigError.h"
#include "sim/study/SweepPlan.h"

namespace {

const std::filesystem::path kScenarios = std::filesystem::path(GRADWIRE_SOURCE_DIR) / "scenarios";
const std::filesystem::path kStudies = kScenarios / "studies";

/// A string base must name a file inside scenarios/ (it may climb out of studies/).
bool base_inside_scenarios(const nlohmann::json& document) {
  const auto base = document.find("base");
  if (base == document.end() || !base->is_string()) return true;
  const std::string text = base->get<std::string>();
  if (text.empty() || text[0] == '/') return false;
  const std::string resolved = (kStudies / text).lexically_normal().string();
  const std::string root = kScenarios.string() + "/";
  return resolved.compare(0, root.size(), root) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  gradwire::fuzz::enter_sandbox(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gradwire;
  const auto document = fuzz::sandboxed_document(data, size, "base");
  if (!document || (document->is_object() && !base_inside_scenarios(*document))) return 0;
  SweepPlan plan;
  try {
    plan = SweepPlan::expand(*document, kStudies.string());
  } catch (const ConfigError&) {
    return 0;
  }
  if (plan.runs.empty() || plan.runs.size() > kMaxSweepRuns) std::abort();
  std::set<std::string> names;
  for (const SweepRun& run : plan.runs) {
    if (run.name.empty() || !names.insert(run.name).second) std::abort();
    if (run.axis_values.size() != plan.axes.size()) std::abort();
  }
  return 0;
}
