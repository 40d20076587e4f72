#include "sim/engine/ScenarioRules.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

#include "codecs/CodecRegistry.h"
#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "nodes/training/DatasetRegistry.h"
#include "nodes/training/ModelFileError.h"
#include "nodes/training/ModelRegistry.h"
#include "nodes/training/TorchScriptModel.h"

namespace gradwire {

namespace {

ModelInput expected_input(const DatasetSpec& d) {
  return DatasetRegistry::builtin().at(d.kind).input(d);
}

/// The model kind must read the dataset's samples; sizes that depend on the data (patches,
/// image sides) are checked here too, so a mismatch is a scenario error, not a failed run.
void check_model_fits_data(const Scenario& s) {
  const ModelInfo& info = ModelRegistry::builtin().at(s.model.kind);
  const ModelInput in = expected_input(s.dataset);
  const bool images = !in.tokens && in.sample_shape.size() == 3;
  const std::string samples =
      in.tokens ? "token sequences (dataset " + s.dataset.kind + ")"
                : "samples shaped " + shape_text(in.sample_shape) + " (dataset " +
                      s.dataset.kind + ")";
  bool fits = true;
  switch (info.data) {
    case ModelData::kAny: fits = !in.tokens; break;
    case ModelData::kImages: fits = images; break;
    case ModelData::kTokens: fits = in.tokens; break;
    case ModelData::kTokensOrImages: fits = in.tokens || images; break;
    case ModelData::kFromFile: fits = !in.tokens; break;
  }
  if (!fits) {
    throw ConfigError("model.kind", "expected a model for " + samples + "; \"" + info.name +
                                        "\" reads " + model_data_text(info.data) +
                                        (in.tokens ? " (use \"lstm_lm\" or \"transformer\")"
                                                   : ""));
  }
  if (info.check_data) info.check_data(s.model, in);
}

/// Host indices in `impairments` (hosts, outages[].hosts, background[].target) must name a
/// host: 0 .. n-1, or -n .. -1 counted from the end. A hybrid group's hosts and outages count
/// within the group (`listed_hosts` is its workers); background targets count over the run.
void check_impairment_hosts(const nlohmann::json& network, const std::string& path,
                            std::int64_t listed_hosts, std::int64_t run_hosts) {
  const auto check = [](const nlohmann::json& index, const std::string& where,
                        std::int64_t hosts) {
    if (!index.is_number_integer()) return;  // the network's own reader reports the type
    const std::int64_t h = index.get<std::int64_t>();
    if (h >= hosts || h < -hosts) {
      throw ConfigError(where, "expected a host index in [0, " + std::to_string(hosts - 1) +
                                   "] or [-" + std::to_string(hosts) + ", -1] (this run has " +
                                   std::to_string(hosts) + " hosts), got " + std::to_string(h));
    }
  };
  const auto check_list = [&](const nlohmann::json& list, const std::string& where) {
    if (!list.is_array()) return;
    for (std::size_t i = 0; i < list.size(); ++i) {
      check(list[i], where + "[" + std::to_string(i) + "]", listed_hosts);
    }
  };
  const auto it = network.find("impairments");
  if (it != network.end() && it->is_object()) {
    const std::string base = path + ".impairments";
    if (it->contains("hosts")) check_list(it->at("hosts"), base + ".hosts");
    const auto& outages = it->value("outages", nlohmann::json::array());
    for (std::size_t i = 0; outages.is_array() && i < outages.size(); ++i) {
      const std::string where = base + ".outages[" + std::to_string(i) + "]";
      if (outages[i].is_object() && outages[i].contains("hosts")) {
        check_list(outages[i].at("hosts"), where + ".hosts");
      }
    }
    const auto& background = it->value("background", nlohmann::json::array());
    for (std::size_t i = 0; background.is_array() && i < background.size(); ++i) {
      if (background[i].is_object() && background[i].contains("target")) {
        check(background[i].at("target"),
              base + ".background[" + std::to_string(i) + "].target", run_hosts);
      }
    }
  }
  const auto groups = network.find("groups");
  if (groups != network.end() && groups->is_array()) {
    for (std::size_t g = 0; g < groups->size(); ++g) {
      const nlohmann::json& group = (*groups)[g];
      const auto workers = group.find("workers");
      check_impairment_hosts(group, path + ".groups[" + std::to_string(g) + "]",
                             workers != group.end() && workers->is_number_integer()
                                 ? workers->get<std::int64_t>()
                                 : run_hosts,
                             run_hosts);
    }
  }
}

std::string gib(double bytes) {
  const double value = bytes / (1024.0 * 1024.0 * 1024.0);
  char buf[48];
  std::snprintf(buf, sizeof buf, value < 1e5 ? "%.1f GiB" : "%.3g GiB", value);
  return std::string(buf);
}

/// What an in-process run holds, estimated from the scenario's sizes before anything is
/// allocated. Everything is counted in double: sizes such as [3, 2^32, 2^32] overflow int64,
/// and an estimate past double's range is infinite, which no machine fits.
///  - per model: weights, gradient, momentum, the flat gradient and a codec's residual, 4 bytes
///    each; every worker and the evaluation model have one;
///  - the data set, held once: float32 samples (int64 token ids and as many targets);
///  - activations: what a pass keeps per sample until backward (ModelInfo::activations) times
///    the batch, for each pass that runs at once (workers compute one after another unless
///    compute.parallel_workers runs several together).
///  `file_parameters` >= 0: a TorchScript file's own count instead of the kind's estimate.
void check_memory(const Scenario& s, std::int64_t train_samples, double file_parameters = -1) {
  const ModelInput in = expected_input(s.dataset);
  const ModelInfo& model = ModelRegistry::builtin().at(s.model.kind);
  const DatasetInfo& data = DatasetRegistry::builtin().at(s.dataset.kind);
  double elements = 1;
  for (std::int64_t d : in.sample_shape) elements *= static_cast<double>(d);

  const double parameters =
      file_parameters >= 0 ? file_parameters : model.parameters(s.model, in);
  const double per_model = 5 * 4 * parameters;
  const double models = static_cast<double>(s.training.workers) + 1;
  const double samples = static_cast<double>(train_samples) +
                         static_cast<double>(data.test_size ? data.test_size(s.dataset) : 0);
  const double data_bytes = samples * (in.tokens ? 16 * elements : 4 * elements + 8);
  const double per_sample = model.activations
                                ? model.activations(s.model, in)
                                : 2 * (elements + static_cast<double>(in.classes));
  const double passes = static_cast<double>(
      std::min<std::int64_t>(s.training.workers, std::max(1, s.compute.parallel_workers)));
  const double activation_bytes =
      4 * per_sample * static_cast<double>(s.training.batch) * passes;
  const double total = per_model * models + data_bytes + activation_bytes;

  const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES));
  const double memory = pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double fits = 0.8 * memory;
  if (memory <= 0 || total <= fits) return;  // an infinite or NaN total does not fit

  // The key to change: the part that alone does not fit, or else the largest part.
  std::string where;
  if (!(per_model <= fits)) {
    where = "model";
  } else if (!(per_model * models <= fits)) {
    where = "training.workers";
  } else if (!(data_bytes <= fits)) {
    where = "dataset";
  } else if (!(activation_bytes <= fits)) {
    where = "training.batch";
  } else {
    const double largest = std::max({per_model * models, data_bytes, activation_bytes});
    where = largest == per_model * models ? "training.workers"
            : largest == data_bytes       ? "dataset"
                                          : "training.batch";
  }
  const auto count = [](double n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, n < 1e15 ? "%.0f" : "%.3g", n);
    return std::string(buf);
  };
  throw ConfigError(
      where, "expected a run that fits in memory: " + std::to_string(s.training.workers) +
                 " workers x " + count(parameters) + " parameters (weights, gradients, optimizer "
                 "and codec state) need about " + gib(per_model * models) + ", the data set (" +
                 count(samples) + " samples shaped " + shape_text(in.sample_shape) + ") " +
                 gib(data_bytes) + ", activations (" + count(passes) + " pass(es) at once x " +
                 std::to_string(s.training.batch) + " samples x " + count(per_sample) +
                 " values) " + gib(activation_bytes) + "; " + gib(total) + " in all, this "
                 "machine has " + gib(memory));
}

/// A TorchScript file is checked before any data is loaded: it must load, have parameters,
/// and (when it states them) fit the dataset's sample shape and classes; a compute profile
/// needs the FLOPs the exporter counts. Returns the module's parameter count.
double check_torchscript(const Scenario& s) {
  const std::string& path = s.model.settings_as<TorchScriptSettings>().path;
  TorchScriptInfo info;
  try {
    info = read_torchscript_info(path);
  } catch (const ModelFileError& e) {
    throw ConfigError("model.path", e.what());
  }
  const ModelInput input = expected_input(s.dataset);
  const std::vector<std::int64_t>& shape = input.sample_shape;
  const std::int64_t classes = input.classes;
  if (!info.input_shape.empty() && info.input_shape != shape) {
    throw ConfigError("model.path", "expected a model for samples shaped " + shape_text(shape) +
                                        " (" + s.dataset.kind + "); " + path +
                                        " was exported for " + shape_text(info.input_shape));
  }
  if (info.classes > 0 && info.classes != classes) {
    throw ConfigError("model.path", "expected a model with " + std::to_string(classes) +
                                        " classes (" + s.dataset.kind + "); " + path +
                                        " has " + std::to_string(info.classes));
  }
  // Loading is not training: one step on two samples finds a forward that does not fit the
  // data and a backward that fails, and the outputs' width must be the data's classes (more
  // outputs would train silently on classes that never occur, fewer fail mid-run).
  std::int64_t outputs = 0;
  try {
    outputs = try_torchscript_step(path, shape);
  } catch (const ModelFileError& e) {
    throw ConfigError("model.path", e.what());
  }
  if (outputs != classes) {
    throw ConfigError("model.path", "expected a model with " + std::to_string(classes) +
                                        " outputs, one per class (" + s.dataset.kind + "); " +
                                        path + " has " + std::to_string(outputs));
  }
  if (s.compute.mode == "profile" && !s.compute.profile_of(0).empty() &&
      s.compute.flops_per_sample <= 0 && info.forward_flops_per_sample <= 0) {
    throw ConfigError("compute.profile",
                      "expected a model whose file states its FLOPs per sample (export it with "
                      "scripts/export-model), compute.flops_per_sample, or "
                      "compute.seconds_per_sample");
  }
  return static_cast<double>(info.parameters);
}

/// Faults are replayed by the schemes that handle them, over TCP, with single-round codecs.
void check_faults(const Scenario& s) {
  if (s.faults.empty()) return;
  const TopologyConfig& tp = s.topology;
  if (!tp.scheme().faults_sync || tp.async()) {
    std::string supported;
    for (const auto& info : SchemeRegistry::builtin().list()) {
      if (!info.faults_sync) continue;
      supported += (supported.empty() ? "" : ", ") + info.name +
                   (info.has_mode(SyncMode::kAsync) ? " (sync)" : "");
    }
    throw ConfigError("faults", "supported with topology " + supported + ", not " + tp.name() +
                                    (tp.async() ? " (async)" : ""));
  }
  if (tp.scheme().check_with_faults) tp.scheme().check_with_faults(tp.settings);
  const std::string codec = s.codec.at("kind").get<std::string>();
  const CodecInfo* info = CodecRegistry::builtin().find(codec);
  if (info != nullptr && info->multi_round) {
    throw ConfigError("codec.kind", "\"" + codec + "\" exchanges in several rounds, which "
                                    "cannot be replayed when a worker leaves; faults need a "
                                    "single-round codec");
  }
  if (s.network.transport().udp()) {
    throw ConfigError("network.transport", "faults are simulated over the tcp transport only; "
                                           "remove `faults` or use \"tcp\"");
  }
}

/// Participation samples the synchronous rounds of a scheme that declares it (one whole
/// gradient per round for the parameter server, one pseudo-gradient per H local steps for
/// local-update training), with single-round codecs and without faults.
void check_participation(const Scenario& s) {
  if (!s.participation.enabled) return;
  const TopologyConfig& tp = s.topology;
  if (!tp.scheme().participation || tp.mode != SyncMode::kSync) {
    std::string supported;
    for (const auto& info : SchemeRegistry::builtin().list()) {
      if (!info.participation) continue;
      supported += (supported.empty() ? "" : ", ") + info.name +
                   (info.has_mode(SyncMode::kAsync) ? " (sync)" : "");
    }
    throw ConfigError("participation", "supported with topology " + supported + ", not " +
                                           tp.name() + (tp.async() ? " (async)" : ""));
  }
  if (tp.scheme().check_with_participation) tp.scheme().check_with_participation(tp.settings);
  if (!s.faults.empty()) {
    throw ConfigError("participation",
                      "not together with faults: availability already says when a client is "
                      "away (participation.availability)");
  }
  const std::string codec = s.codec.at("kind").get<std::string>();
  const CodecInfo* info = CodecRegistry::builtin().find(codec);
  if (info != nullptr && info->multi_round) {
    throw ConfigError("codec.kind", "\"" + codec + "\" exchanges in several rounds, which "
                                    "needs every worker in each; participation needs a "
                                    "single-round codec");
  }
}

}  // namespace

void check_scenario_rules(const Scenario& s, std::int64_t train_samples) {
  if (train_samples < s.training.workers) {
    const std::string where = s.dataset.kind == "synthetic" ? "dataset.train_samples"
                              : s.dataset.train_limit > 0   ? "dataset.train_limit"
                                                            : "dataset.path";
    throw ConfigError(where, "expected at least one training sample per worker (" +
                                 std::to_string(s.training.workers) + "), got " +
                                 std::to_string(train_samples));
  }
  if (s.compute.worker_scale.size() > static_cast<std::size_t>(s.training.workers)) {
    throw ConfigError("compute.slow_workers",
                      "expected ranks below training.workers (" +
                          std::to_string(s.training.workers) + ")");
  }
  check_faults(s);
  check_participation(s);
  const TopologyConfig& tp = s.topology;
  if (tp.scheme().check_with_workers) tp.scheme().check_with_workers(tp.settings, s.training.workers);
  const std::int64_t hosts = s.training.workers + (tp.with_server() ? 1 : 0);
  check_impairment_hosts(s.network.to_json(), "network", hosts, hosts);
  if (!tp.scheme().sends_gradients && s.codec.at("kind") != "none") {
    throw ConfigError("codec.kind", "expected \"none\" with topology " + tp.name() +
                                        ": it sends parameters, not gradients, and compressing "
                                        "parameters is not supported yet");
  }
  check_model_fits_data(s);
  check_memory(s, train_samples);
  if (s.model.kind == "torchscript") {
    // Data and activations were checked before the trial step allocates its two samples; the
    // parameters are the file's, known once it is read.
    check_memory(s, train_samples, check_torchscript(s));
  }
}

}  // namespace gradwire
