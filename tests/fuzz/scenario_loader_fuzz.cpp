// libFuzzer target: the scenario loader (sim/engine/ScenarioLoader.h) on arbitrary JSON text.
//
// What must hold: a document that is not a valid scenario raises ConfigError and nothing
// else. A scenario that loads resolves (every default filled in) to a document that loads
// again to the same resolved scenario: that resolved document is what a run folder keeps as
// scenario.json, and what a rerun reads.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "ScenarioSandbox.h"
#include "common/ConfigError.h"
#include "sim/engine/ScenarioLoader.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  gradwire::fuzz::enter_sandbox(argc, argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gradwire;
  const auto document = fuzz::sandboxed_document(data, size);
  if (!document) return 0;
  Scenario scenario;
  try {
    scenario = load_scenario(*document);
  } catch (const ConfigError&) {
    return 0;
  }
  const nlohmann::json again = load_scenario(scenario.resolved).resolved;
  if (again != scenario.resolved) {
    std::fprintf(stderr, "resolved scenario changes when loaded again: %s\n",
                 nlohmann::json::diff(scenario.resolved, again).dump().c_str());
    std::abort();
  }
  return 0;
}
