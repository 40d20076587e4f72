// The scenario's top level: each section is read by its own reader (beside the registry that
// declares its kinds, or in its own file here), then the rules between sections are checked
// (ScenarioRules) and the resolved form is assembled from the sections' writers.
#include "sim/engine/ScenarioLoader.h"

#include <cctype>

#include "codecs/CodecRegistry.h"
#include "common/ConfigError.h"
#include "common/InputFile.h"
#include "common/JsonFields.h"
#include "netmodels/NetworkFactory.h"
#include "nodes/schemes/TopologyConfig.h"
#include "nodes/training/DatasetRegistry.h"
#include "nodes/training/ModelRegistry.h"
#include "sim/engine/ComputeSection.h"
#include "sim/engine/FaultsSection.h"
#include "sim/engine/ParticipationSection.h"
#include "sim/engine/ScenarioRules.h"
#include "sim/engine/TrainingSection.h"

namespace gradwire {

namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == '=' || c == '+')) {
      return false;
    }
  }
  return true;
}

JsonFields section(const JsonFields& root, const std::string& key) {
  return JsonFields(root.object_at(key), root.path_of(key));
}

nlohmann::json to_json(const Scenario& s) {
  nlohmann::json out = {{"gradwire", kScenarioVersion},
                        {"name", s.name},
                        {"seed", s.seed},
                        {"model", model_json(s.model)},
                        {"dataset", dataset_json(s.dataset)},
                        {"training", training_json(s.training)},
                        {"compute", compute_json(s.compute)},
                        {"codec", s.codec},
                        {"topology", topology_json(s.topology, !s.faults.empty())},
                        {"network", s.network.to_json()},
                        {"output", {{"dir", s.output_dir}}}};
  if (!s.faults.empty()) out["faults"] = faults_json(s.faults);
  if (s.participation.enabled) out["participation"] = participation_json(s.participation);
  return out;
}

}  // namespace

nlohmann::json read_scenario_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, kMaxScenarioBytes, "scenario file");
  } catch (const InputFileError& e) {
    throw ConfigError("(file)", e.what());
  }
  try {
    return parse_json(text);
  } catch (const JsonTooDeep& e) {
    throw ConfigError("(file)", path + ": expected JSON nested at most " +
                                    std::to_string(kMaxJsonDepth) + " levels deep; it " +
                                    e.what());
  } catch (const JsonSyntaxError& e) {
    throw ConfigError("(file)", path + " is " + e.what());
  }
}

void apply_overrides(nlohmann::json& scenario, const std::vector<std::string>& assignments) {
  for (const std::string& a : assignments) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("(--set)", "expected path.to.key=value, got \"" + a + "\"");
    }
    const std::string path = a.substr(0, eq);
    const std::string text = a.substr(eq + 1);
    nlohmann::json value;
    try {
      value = parse_json(text);
    } catch (const JsonTooDeep& e) {
      throw ConfigError("(--set)", path + ": expected a value nested at most " +
                                       std::to_string(kMaxJsonDepth) + " levels deep; it " +
                                       e.what());
    } catch (const JsonSyntaxError&) {
      value = text;  // bare words are strings: --set codec.kind=topk
    }
    nlohmann::json* node = &scenario;
    std::size_t start = 0;
    while (true) {
      const auto dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
      if (key.empty()) throw ConfigError("(--set)", "empty key in \"" + path + "\"");
      if (!node->is_object()) {
        throw ConfigError(path.substr(0, start ? start - 1 : 0),
                          "--set cannot descend into a non-object");
      }
      if (dot == std::string::npos) {
        (*node)[key] = value;
        break;
      }
      node = &(*node)[key];
      if (node->is_null()) *node = nlohmann::json::object();
      start = dot + 1;
    }
  }
}

Scenario load_scenario(const nlohmann::json& document) {
  JsonFields root(document, "");
  root.allow({"gradwire", "name", "seed", "model", "dataset", "training", "compute", "codec",
              "topology", "network", "output", "faults", "participation"});
  if (!root.has("gradwire")) {
    throw ConfigError("gradwire", "missing; expected the format version 1");
  }
  root.integer("gradwire", 1, kScenarioVersion, kScenarioVersion);

  Scenario s;
  s.name = root.required_string("name");
  if (!valid_name(s.name)) {
    throw ConfigError("name", "expected letters, digits, '-', '_', '.', '=' or '+', not starting with '.' "
                              "(it names the run folder), got \"" + s.name + "\"");
  }
  s.seed = static_cast<std::uint64_t>(root.integer("seed", 1, 0, (std::int64_t{1} << 53)));
  s.model = read_model(section(root, "model"));
  s.dataset = read_dataset(section(root, "dataset"));
  const DatasetInfo& data = DatasetRegistry::builtin().at(s.dataset.kind);
  // Read once: a text dataset is read to be counted.
  const std::int64_t samples = data.train_size(s.dataset);
  const JsonFields training = section(root, "training");
  s.training = read_training(training, data.input(s.dataset).tokens, samples);
  s.compute = read_compute(section(root, "compute"));
  s.codec = CodecRegistry::builtin().resolve(
      root.has("codec") ? document.at("codec") : nlohmann::json{{"kind", "none"}}, "codec");
  s.topology = read_topology(section(root, "topology"));
  s.faults = read_faults(document, s.training.workers);
  s.participation = read_participation(document, s.training.workers);
  read_buckets(training, s.topology,
               !s.faults.empty()         ? "faults"
               : s.participation.enabled ? "participation"
                                         : "",
               s.training);
  s.network = resolve_network(root.object_at("network"), "network");
  resolve_worker_profiles(s.compute, s.training.workers, s.network);

  const JsonFields out = section(root, "output");
  out.allow({"dir"});
  s.output_dir = out.string("dir", "runs");
  if (s.output_dir.empty()) {
    throw ConfigError("output.dir", "expected a folder for the run folders (e.g. \"runs\"), got \"\"");
  }
  check_scenario_rules(s, samples);
  s.resolved = to_json(s);
  return s;
}

}  // namespace gradwire
