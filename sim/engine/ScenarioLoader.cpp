#include "sim/engine/ScenarioLoader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "codecs/CodecRegistry.h"
#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "common/ParamSpec.h"
#include "common/Units.h"
#include "netmodels/NetworkFactory.h"
#include "nodes/training/ModelFileError.h"
#include "nodes/training/ModelRegistry.h"
#include "nodes/training/TorchScriptModel.h"
#include "sim/engine/ComputeTime.h"

namespace gradwire {

namespace {

// Fashion-MNIST's training and test set sizes (Xiao et al. 2017).
constexpr std::int64_t kFashionTrain = 60000;

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

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

std::vector<std::int64_t> int_list(const JsonFields& f, const std::string& key,
                                   std::vector<std::int64_t> fallback, std::int64_t min) {
  if (!f.has(key)) return fallback;
  const auto& v = f.object().at(key);
  const std::string expected = "expected an array of integers >= " + std::to_string(min);
  if (!v.is_array()) throw ConfigError(f.path_of(key), expected + ", got " + json_brief(v));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& e = v[i];
    const std::string path = f.path_of(key) + "[" + std::to_string(i) + "]";
    if (!e.is_number_integer() || e.get<std::int64_t>() < min) {
      throw ConfigError(path, expected + ", got " + json_brief(e));
    }
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

ModelConfig read_model(const JsonFields& root) {
  JsonFields f(root.object_at("model"), root.path_of("model"));
  const ModelRegistry& registry = ModelRegistry::builtin();
  ModelConfig m;
  m.kind = f.string("kind", m.kind, registry.kinds());
  const ModelInfo& info = *registry.find(m.kind);
  std::vector<std::string> keys = param_names(info.params);
  keys.push_back("kind");
  f.allow(keys);
  const auto spec = [&info](const char* key) -> const ParamSpec& {
    return param_named(info.params, key);
  };
  if (m.kind == "torchscript") {
    m.path = f.required_string("path");
  } else if (m.kind == "mlp") {
    m.hidden = int_list(f, "hidden", m.hidden, 1);
    if (m.hidden.size() > 64) {
      throw ConfigError(f.path_of("hidden"), "expected at most 64 hidden layers, got " +
                                                 std::to_string(m.hidden.size()));
    }
  } else if (m.kind == "cnn") {
    m.conv1 = declared_integer(f, spec("conv1"));
    m.conv2 = declared_integer(f, spec("conv2"));
    m.fc1 = declared_integer(f, spec("fc1"));
    m.fc2 = declared_integer(f, spec("fc2"));
  } else if (m.kind == "mobilenetv2") {
    m.width = declared_number(f, spec("width"));
  } else if (m.kind == "lstm_lm") {
    m.embedding = declared_integer(f, spec("embedding"));
    m.hidden_size = declared_integer(f, spec("hidden_size"));
    m.layers = declared_integer(f, spec("layers"));
    m.dropout = declared_number(f, spec("dropout"));
    m.tied = f.boolean("tied", m.tied);
    if (m.tied && m.embedding != m.hidden_size) {
      throw ConfigError(f.path_of("tied"), "expected embedding = hidden_size to tie the decoder "
                                           "to the embedding (" + std::to_string(m.embedding) +
                                           " vs " + std::to_string(m.hidden_size) + ")");
    }
  } else if (m.kind == "transformer") {
    m.d_model = declared_integer(f, spec("d_model"));
    m.heads = declared_integer(f, spec("heads"));
    m.ff = declared_integer(f, spec("ff"));
    m.layers = declared_integer(f, spec("layers"));
    m.dropout = declared_number(f, spec("dropout"));
    m.patch = declared_integer(f, spec("patch"));
    if (m.d_model % m.heads != 0) {
      throw ConfigError(f.path_of("heads"), "expected a divisor of d_model (" +
                                                std::to_string(m.d_model) + "), got " +
                                                std::to_string(m.heads));
    }
  }
  return m;
}

/// The samples the dataset section describes, as the model will see them (the text's
/// vocabulary is only known once it is read: its cap stands in for it here).
ModelInput expected_input(const DatasetSpec& d) {
  if (d.kind == "synthetic") {
    const auto& y = d.synthetic;
    if (y.vocab > 0) return ModelInput{{y.seq_len}, y.vocab, true};
    if (!y.shape.empty()) return ModelInput{y.shape, y.classes, false};
    return ModelInput{{y.features}, y.classes, false};
  }
  if (d.kind == "text") return ModelInput{{d.text.bptt}, d.text.vocab, true};
  if (d.kind == "cifar10") return ModelInput{{3, 32, 32}, 10, false};
  if (d.kind == "cifar100") return ModelInput{{3, 32, 32}, 100, false};
  return ModelInput{{1, 28, 28}, 10, false};
}

/// The model kind must read the dataset's samples; sizes that depend on the data (patches,
/// image sides) are checked here too, so a mismatch is a scenario error, not a failed run.
void check_model_fits_data(const Scenario& s) {
  const ModelInfo& info = *ModelRegistry::builtin().find(s.model.kind);
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
    throw ConfigError("model.kind", "expected a model for " + samples + "; \"" + info.kind +
                                        "\" reads " + model_data_text(info.data) +
                                        (in.tokens ? " (use \"lstm_lm\" or \"transformer\")"
                                                   : ""));
  }
  if (s.model.kind == "transformer" && images &&
      (in.sample_shape[1] % s.model.patch != 0 || in.sample_shape[2] % s.model.patch != 0)) {
    throw ConfigError("model.patch", "expected a divisor of the images' height and width " +
                                         shape_text(in.sample_shape) + ", got " +
                                         std::to_string(s.model.patch));
  }
  if (s.model.kind == "vgg16" && images && (in.sample_shape[1] < 32 || in.sample_shape[2] < 32)) {
    throw ConfigError("model.kind", "expected images of at least 32x32 for vgg16 (it pools "
                                    "five times); " + samples);
  }
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

/// Parameters of the model the scenario describes, counted from its sizes without building it
/// (a model too large for memory must be refused before anything is allocated): the kinds
/// whose sizes a scenario sets are counted layer by layer (the cnn's pooled side rounded up),
/// the fixed CIFAR zoo by an upper bound; a torchscript file's size is its own.
double estimated_parameters(const ModelConfig& m, const ModelInput& in) {
  const double classes = static_cast<double>(in.classes);
  const auto& shape = in.sample_shape;
  if (m.kind == "mlp") {
    double width = 1;
    for (std::int64_t d : shape) width *= static_cast<double>(d);
    double total = 0;
    for (std::int64_t h : m.hidden) {
      total += width * static_cast<double>(h) + static_cast<double>(h);
      width = static_cast<double>(h);
    }
    return total + width * classes + classes;
  }
  if (m.kind == "cnn" && shape.size() == 3) {
    const double c = static_cast<double>(shape[0]);
    const double side = static_cast<double>(std::max(shape[1], shape[2]));
    const double flat = static_cast<double>(m.conv2) * (side / 4) * (side / 4);
    return 25 * (c * static_cast<double>(m.conv1) + static_cast<double>(m.conv1 * m.conv2)) +
           flat * static_cast<double>(m.fc1) + static_cast<double>(m.fc1 * m.fc2) +
           static_cast<double>(m.fc2) * classes;
  }
  if (m.kind == "lstm_lm") {
    const double e = static_cast<double>(m.embedding);
    const double h = static_cast<double>(m.hidden_size);
    const double lstm = 4 * h * (e + h + 2) + static_cast<double>(m.layers - 1) * 4 * h * (2 * h + 2);
    return classes * e + lstm + (m.tied ? 0 : h * classes) + classes;
  }
  if (m.kind == "transformer") {
    const double d = static_cast<double>(m.d_model);
    const double layer = 4 * d * d + 2 * d * static_cast<double>(m.ff) + 10 * d +
                         static_cast<double>(m.ff);
    const double tokens = static_cast<double>(shape[0]);
    const double embed = in.tokens ? classes * d + tokens * d
                                   : static_cast<double>(shape[0] * m.patch * m.patch) * d +
                                         (static_cast<double>(shape.size() == 3 ? shape[1] * shape[2] : 1) + 2) * d;
    return embed + static_cast<double>(m.layers) * layer + d * classes + classes + 2 * d;
  }
  if (m.kind == "mobilenetv2") return 2.3e6 * m.width * m.width + 1280 * m.width * classes;
  if (m.kind == "resnet18" || m.kind == "vgg16") return 1.5e7 + 512 * classes;
  if (m.kind == "resnet20" || m.kind == "resnet56") return 1e6 + 64 * classes;
  return 0;
}

/// Memory the in-process run holds per model: weights, gradient, momentum, the flat gradient
/// and a codec's residual, 4 bytes each; every worker and the evaluation model have one.
void check_memory(const Scenario& s) {
  const double parameters = estimated_parameters(s.model, expected_input(s.dataset));
  const double per_model = 5 * 4 * parameters;
  const double models = static_cast<double>(s.training.workers) + 1;
  const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES));
  const double memory = pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (memory <= 0 || per_model * models <= 0.8 * memory) return;
  const auto gib = [](double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
    return std::string(buf);
  };
  const bool one_model_too_large = per_model > 0.8 * memory;
  throw ConfigError(one_model_too_large ? "model" : "training.workers",
                    "expected a run that fits in memory: " +
                        std::to_string(s.training.workers) + " workers x " +
                        std::to_string(static_cast<long long>(parameters)) +
                        " parameters need about " + gib(per_model * models) +
                        " (weights, gradients, optimizer and codec state), this machine has " +
                        gib(memory));
}

/// A TorchScript file is checked before any data is loaded: it must load, have parameters,
/// and (when it states them) fit the dataset's sample shape and classes; a compute profile
/// needs the FLOPs the exporter counts.
void check_torchscript(const Scenario& s) {
  TorchScriptInfo info;
  try {
    info = read_torchscript_info(s.model.path);
  } catch (const ModelFileError& e) {
    throw ConfigError("model.path", e.what());
  }
  const ModelInput input = expected_input(s.dataset);
  const std::vector<std::int64_t>& shape = input.sample_shape;
  const std::int64_t classes = input.classes;
  if (!info.input_shape.empty() && info.input_shape != shape) {
    throw ConfigError("model.path", "expected a model for samples shaped " + shape_text(shape) +
                                        " (" + s.dataset.kind + "); " + s.model.path +
                                        " was exported for " + shape_text(info.input_shape));
  }
  if (info.classes > 0 && info.classes != classes) {
    throw ConfigError("model.path", "expected a model with " + std::to_string(classes) +
                                        " classes (" + s.dataset.kind + "); " + s.model.path +
                                        " has " + std::to_string(info.classes));
  }
  if (s.compute.mode == "profile" && !s.compute.profile.empty() &&
      s.compute.flops_per_sample <= 0 && info.forward_flops_per_sample <= 0) {
    throw ConfigError("compute.profile",
                      "expected a model whose file states its FLOPs per sample (export it with "
                      "scripts/export-model), compute.flops_per_sample, or "
                      "compute.seconds_per_sample");
  }
}

DatasetSpec read_dataset(const JsonFields& root) {
  JsonFields f(root.object_at("dataset"), root.path_of("dataset"));
  f.allow({"kind", "path", "train_limit", "test_limit", "partition", "augment", "classes",
           "features", "shape", "vocab", "bptt", "train_samples", "test_samples", "separation",
           "unit", "test_fraction"});
  DatasetSpec d;
  d.kind = f.string("kind", d.kind, {"fashion-mnist", "cifar10", "cifar100", "text", "synthetic"});
  const bool cifar = d.kind == "cifar10" || d.kind == "cifar100";
  const bool text = d.kind == "text";
  const bool synthetic = d.kind == "synthetic";
  if (cifar && !f.has("path")) {
    throw ConfigError(f.path_of("path"),
                      "missing; expected the folder holding the " + d.kind +
                          " binary files (nothing is downloaded: data_batch_1.bin ... "
                          "test_batch.bin for cifar10, train.bin and test.bin for cifar100)");
  }
  const auto only_for = [&f](const char* key, const std::string& kinds) {
    if (f.has(key)) throw ConfigError(f.path_of(key), "expected only with dataset.kind " + kinds);
  };
  d.path = f.string("path", text ? d.text.path : d.path);
  d.train_limit = f.integer("train_limit", 0, 0, 100000000);
  d.test_limit = f.integer("test_limit", 0, 0, 100000000);
  if (synthetic) {
    auto& y = d.synthetic;
    y.classes = f.integer("classes", y.classes, 2, 1000);
    y.features = f.integer("features", y.features, 1, 100000);
    y.shape = int_list(f, "shape", {}, 1);
    if (f.has("shape") && (y.shape.empty() || y.shape.size() > 3)) {
      throw ConfigError(f.path_of("shape"), "expected 1 to 3 dimensions, e.g. [3, 32, 32]");
    }
    y.vocab = f.integer("vocab", 0, 2, 1000000);
    y.seq_len = f.integer("bptt", y.seq_len, 1, 100000);
    if (y.vocab > 0 && (f.has("shape") || f.has("classes") || f.has("features"))) {
      throw ConfigError(f.path_of("vocab"), "token sequences take vocab and bptt, not shape, "
                                            "classes or features");
    }
    if (y.vocab == 0 && f.has("bptt")) {
      throw ConfigError(f.path_of("bptt"), "expected only with dataset.vocab (token sequences)");
    }
    y.train_samples = f.integer("train_samples", y.train_samples, 1, 10000000);
    y.test_samples = f.integer("test_samples", y.test_samples, 1, 10000000);
    y.separation = f.number("separation", y.separation, 0, 1e6, true);
  } else {
    for (const char* key : {"classes", "features", "shape", "train_samples", "test_samples",
                            "separation"}) {
      only_for(key, "\"synthetic\"");
    }
  }
  if (text) {
    d.text.path = d.path;
    d.text.unit = f.string("unit", d.text.unit, {"word", "char"});
    d.text.bptt = f.integer("bptt", d.text.bptt, 1, 100000);
    // The vocabulary holds the unknown token (and, for words, the end of line) besides at
    // least one unit of the text.
    const std::int64_t least_vocab = d.text.unit == "word" ? 3 : 2;
    d.text.vocab = f.integer("vocab", d.text.vocab, least_vocab, 1000000);
    d.text.test_fraction = f.number("test_fraction", d.text.test_fraction, 0, 0.9, true);
    struct stat st {};
    if (::stat(d.path.c_str(), &st) != 0) {
      throw ConfigError(f.path_of("path"), "not found: " + d.path + "; expected a UTF-8 text "
                                           "file or a folder of them");
    }
  } else {
    for (const char* key : {"unit", "test_fraction"}) only_for(key, "\"text\"");
    if (!synthetic) {
      only_for("vocab", "\"text\" or \"synthetic\"");
      only_for("bptt", "\"text\" or \"synthetic\"");
    }
  }
  if (cifar && !is_directory(d.path)) {
    throw ConfigError(f.path_of("path"), d.kind + " directory not found: " + d.path);
  }
  if (d.kind == "fashion-mnist" && !is_directory(d.path)) {
    throw ConfigError(f.path_of("path"),
                      "Fashion-MNIST directory not found: " + d.path +
                          "; expected a folder with its gz IDX files (apt-get install "
                          "dataset-fashion-mnist, or set dataset.path)");
  }
  const bool images = cifar || d.kind == "fashion-mnist" ||
                      (synthetic && d.synthetic.shape.size() == 3);
  d.augment = f.boolean("augment", cifar);
  if (d.augment && !images) {
    throw ConfigError(f.path_of("augment"), "expected images shaped {C, H, W} for random crop "
                                            "and flip; this dataset has none");
  }
  JsonFields p(f.object_at("partition"), f.path_of("partition"));
  p.allow({"kind", "alpha"});
  d.partition = p.string("kind", "iid", {"iid", "dirichlet"});
  d.alpha = p.number("alpha", d.alpha, 0, 1e6, true);
  const bool tokens = text || (synthetic && d.synthetic.vocab > 0);
  if (tokens && d.partition == "dirichlet") {
    throw ConfigError(p.path_of("kind"), "a Dirichlet split draws classes per worker; token "
                                         "sequences have none (expected \"iid\")");
  }
  return d;
}

std::int64_t train_size(const DatasetSpec& d) {
  if (d.kind == "synthetic") return d.synthetic.train_samples;
  std::int64_t all = d.kind == "fashion-mnist" ? kFashionTrain : 50000;
  if (d.kind == "text") {
    try {
      all = load_text(d.text).train.size();
    } catch (const DatasetError& e) {
      throw ConfigError("dataset.path", e.what());
    }
  }
  return d.train_limit > 0 ? std::min(d.train_limit, all) : all;
}

/// `train_samples`: the training set's size (train_size), for `epochs`.
TrainingSpec read_training(const JsonFields& root, const DatasetSpec& dataset,
                           std::int64_t train_samples) {
  JsonFields f(root.object_at("training"), root.path_of("training"));
  f.allow({"workers", "steps", "epochs", "batch", "optimizer", "eval_every", "eval_samples",
           "target_accuracy", "target_perplexity", "buckets"});
  TrainingSpec t;
  t.workers = static_cast<int>(f.integer("workers", t.workers, 1, 1024));
  t.batch = f.integer("batch", t.batch, 1, 1 << 20);
  if (f.has("steps") && f.has("epochs")) {
    throw ConfigError(f.path_of("epochs"), "give either steps or epochs, not both");
  }
  if (f.has("epochs")) {
    t.epochs = f.number("epochs", 1, 0, 1e6, true);
    const double per_step = static_cast<double>(t.workers) * static_cast<double>(t.batch);
    t.steps = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(t.epochs * static_cast<double>(train_samples) / per_step)));
  } else {
    t.steps = f.integer("steps", 100, 1, 100000000);
  }
  t.eval_every = f.integer("eval_every", std::max<std::int64_t>(1, t.steps / 10), 1, 100000000);
  t.eval_samples = f.integer("eval_samples", 0, 0, 100000000);
  t.target_accuracy = f.number("target_accuracy", 0, 0, 1);
  t.target_perplexity = f.number("target_perplexity", 0, 1, 1e12);
  const bool tokens = dataset.kind == "text" ||
                      (dataset.kind == "synthetic" && dataset.synthetic.vocab > 0);
  if (f.has("target_perplexity") && !tokens) {
    throw ConfigError(f.path_of("target_perplexity"),
                      "perplexity is the metric of language models (dataset.kind \"text\", or "
                      "\"synthetic\" with vocab); expected target_accuracy");
  }
  if (t.target_perplexity > 0 && t.target_accuracy > 0) {
    throw ConfigError(f.path_of("target_perplexity"), "give target_accuracy or "
                                                      "target_perplexity, not both");
  }

  JsonFields o(f.object_at("optimizer"), f.path_of("optimizer"));
  o.allow({"kind", "lr", "momentum", "weight_decay", "nesterov", "warmup_steps", "milestones",
           "gamma"});
  o.string("kind", "sgd", {"sgd"});
  t.lr.base_lr = o.number("lr", 0.05, 0, 100, true);
  t.momentum = o.number("momentum", t.momentum, 0, 1);
  if (t.momentum >= 1) throw ConfigError(o.path_of("momentum"), "expected a number in [0, 1)");
  t.weight_decay = o.number("weight_decay", 0, 0, 1);
  t.nesterov = o.boolean("nesterov", false);
  if (t.nesterov && t.momentum == 0) {
    throw ConfigError(o.path_of("nesterov"), "Nesterov momentum needs momentum > 0");
  }
  t.lr.warmup_steps = o.integer("warmup_steps", 0, 0, 100000000);
  t.lr.milestones = int_list(o, "milestones", {}, 1);
  for (std::size_t i = 1; i < t.lr.milestones.size(); ++i) {
    if (t.lr.milestones[i] <= t.lr.milestones[i - 1]) {
      throw ConfigError(o.path_of("milestones"), "expected strictly increasing steps");
    }
  }
  t.lr.gamma = o.number("gamma", 0.1, 0, 1, true);
  return t;
}

/// `training.buckets`: "none" or {"size_mb": 25, "first_mb": 1}. Schemes that send gradients
/// (ring, parameter server sync and async) take buckets by default, as PyTorch DDP does;
/// gossip and leader send parameters and take "none" only.
void read_buckets(const JsonFields& root, const TopologySpec& topology, bool faults,
                  TrainingSpec& t) {
  const std::string path = root.path_of("training") + ".buckets";
  const bool supported = !faults && (topology.kind == SchemeKind::kRing ||
                                     topology.kind == SchemeKind::kParameterServer);
  const auto& training = root.object_at("training");
  if (!training.is_object() || !training.contains("buckets")) {
    t.buckets = supported;
    return;
  }
  const auto& value = training.at("buckets");
  if (value.is_string() && value.get<std::string>() == "none") {
    t.buckets = false;
    return;
  }
  if (!value.is_object()) {
    throw ConfigError(path, "expected \"none\" or an object like {\"size_mb\": 25, "
                            "\"first_mb\": 1}, got " + json_brief(value));
  }
  if (!supported) {
    throw ConfigError(path, std::string("gradient buckets need a ring or parameter server "
                                        "without faults; expected \"none\" with ") +
                                (faults ? "faults" : "topology " + topology.name()));
  }
  JsonFields b(value, path);
  b.allow({"size_mb", "first_mb"});
  t.buckets = true;
  t.bucket_mb = b.number("size_mb", 25, 0, 1e6, true);
  t.first_bucket_mb = b.number("first_mb", 1, 0, 1e6, true);
}

/// `compute.codec_time` and its companions. By default codec work is timed the way compute is:
/// measured when compute is measured, on the named device when compute runs on a profile, and
/// free when compute is a fixed or per-sample figure (there is no device to time it on).
void read_codec_time(const JsonFields& f, ComputeSpec& c) {
  const std::vector<std::string> names = device_profile_names();
  const std::string fallback = c.mode == "measured" ? "measured"
                               : !c.profile.empty() ? "profile"
                                                    : "free";
  c.codec_time = f.string("codec_time", fallback, {"free", "measured", "profile"});
  c.codec_scale = f.number("codec_scale", c.mode == "measured" ? c.scale : 1.0, 0, 1e6, true);
  c.codec_device = f.string("codec_device", c.profile, names);
  if (c.codec_time != "measured" && f.has("codec_scale")) {
    throw ConfigError(f.path_of("codec_scale"), "only valid with compute.codec_time \"measured\"");
  }
  if (c.codec_time != "profile" && f.has("codec_device")) {
    throw ConfigError(f.path_of("codec_device"), "only valid with compute.codec_time \"profile\"");
  }
  if (c.codec_time == "profile" && c.codec_device.empty()) {
    throw ConfigError(f.path_of("codec_device"),
                      "missing; profile codec time needs a device: name one of the device "
                      "profiles (e.g. \"v100\"), or set compute.profile");
  }
}

ComputeSpec read_compute(const JsonFields& root) {
  JsonFields f(root.object_at("compute"), root.path_of("compute"));
  f.allow({"mode", "scale", "seconds", "profile", "seconds_per_sample", "flops_per_sample",
           "device", "threads", "parallel_workers", "slow_workers", "stragglers", "codec_time",
           "codec_scale", "codec_device"});
  ComputeSpec c;
  c.mode = f.string("mode", c.mode, {"measured", "fixed", "profile"});
  c.scale = f.number("scale", 1.0, 0, 1e6, true);
  c.seconds = f.number("seconds", c.seconds, 0, 1e6);
  c.device = f.string("device", c.device, {"auto", "cpu", "cuda"});
  c.threads = static_cast<int>(f.integer("threads", 0, 0, 256));
  c.parallel_workers = static_cast<int>(f.integer("parallel_workers", 1, 1, 256));
  if (c.parallel_workers > 1 && c.mode == "measured") {
    // Measured compute times each pass's wall time, which passes running at once inflate, and
    // the pass's simulated time must be known before it runs to keep the events in order.
    throw ConfigError(f.path_of("parallel_workers"),
                      "expected 1 with compute.mode \"measured\" (measured compute times each "
                      "worker's pass alone); use \"fixed\" or \"profile\" to compute workers "
                      "in parallel");
  }
  if (c.mode == "profile") {
    const std::vector<std::string> names = device_profile_names();
    if (f.has("profile") == f.has("seconds_per_sample")) {
      throw ConfigError(f.path_of("profile"),
                        "expected exactly one of profile (a device name) or seconds_per_sample "
                        "with compute.mode \"profile\"");
    }
    c.profile = f.string("profile", "", names);
    c.seconds_per_sample = f.number("seconds_per_sample", 0, 0, 1e6, true);
    c.flops_per_sample = f.integer("flops_per_sample", 0, 1, std::int64_t{1} << 50);
    if (f.has("flops_per_sample") && c.profile.empty()) {
      throw ConfigError(f.path_of("flops_per_sample"),
                        "expected only with compute.profile (a device), not seconds_per_sample");
    }
  } else {
    for (const char* key : {"profile", "seconds_per_sample", "flops_per_sample"}) {
      if (f.has(key)) throw ConfigError(f.path_of(key), "only valid with compute.mode \"profile\"");
    }
  }
  if (c.mode != "fixed" && f.has("seconds")) {
    throw ConfigError(f.path_of("seconds"), "only valid with compute.mode \"fixed\"");
  }
  if (c.mode != "measured" && f.has("scale")) {
    throw ConfigError(f.path_of("scale"), "only valid with compute.mode \"measured\"");
  }
  if (f.has("slow_workers")) {
    const auto& list = f.object().at("slow_workers");
    if (!list.is_array()) {
      throw ConfigError(f.path_of("slow_workers"),
                        "expected an array like [{\"rank\": 0, \"scale\": 3.0}]");
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      JsonFields w(list[i], f.path_of("slow_workers") + "[" + std::to_string(i) + "]");
      w.allow({"rank", "scale"});
      if (!w.has("rank")) throw ConfigError(w.path_of("rank"), "missing; expected a worker rank");
      const auto rank = static_cast<std::size_t>(w.integer("rank", 0, 0, 1023));
      const double scale = w.number("scale", 1.0, 0, 1e6, true);
      if (c.worker_scale.size() <= rank) c.worker_scale.resize(rank + 1, 1.0);
      c.worker_scale[rank] = scale;
    }
  }
  JsonFields st(f.object_at("stragglers"), f.path_of("stragglers"));
  st.allow({"probability", "slowdown"});
  c.straggler_probability = st.number("probability", 0, 0, 1);
  c.straggler_slowdown = st.number("slowdown", 3.0, 1, 1e6);
  read_codec_time(f, c);
  return c;
}

nlohmann::json topology_json(const TopologySpec& t, bool faults) {
  nlohmann::json j = {{"kind", t.name()}, {"mode", mode_name(t.mode)}};
  if (faults) j["timeout"] = format_duration(t.timeout_s);
  if (t.async() && t.max_staleness >= 0) j["max_staleness"] = t.max_staleness;
  if (t.kind == SchemeKind::kGossip) j["peers"] = t.peers;
  if (t.kind == SchemeKind::kGossip && t.overlap) j["overlap"] = true;
  if (t.kind == SchemeKind::kLeader) {
    j.update({{"l_comm", t.l_comm}, {"g_comm", t.g_comm}, {"c1", t.c1}, {"c2", t.c2},
              {"group_size", t.group_size}});
  }
  return j;
}

/// Reads `topology` through the schemes' declaration (nodes/schemes/SchemeRegistry).
TopologySpec read_topology(const JsonFields& topo) {
  const SchemeRegistry& schemes = SchemeRegistry::builtin();
  std::vector<ParamSpec> declared = schemes.common_params();
  for (const auto& info : schemes.list()) {
    declared.insert(declared.end(), info.params.begin(), info.params.end());
  }
  topo.allow(param_names(declared));
  const auto spec = [&declared](const std::string& key) -> const ParamSpec& {
    return param_named(declared, key);
  };

  TopologySpec tp;
  const SchemeInfo& info = *schemes.find(declared_string(topo, spec("kind")));
  tp.kind = info.kind;
  tp.mode = parse_mode(declared_string(topo, spec("mode")));
  if (!info.has_mode(tp.mode)) {
    throw ConfigError("topology.mode", "expected \"" + mode_name(info.modes.front()) + "\" for " +
                                           info.name +
                                           " (async is the parameter server's mode; gossip and "
                                           "leader are decentralised by nature)");
  }
  tp.max_staleness = static_cast<int>(declared_integer(topo, spec("max_staleness")));
  if (topo.has("max_staleness") && !tp.async()) {
    throw ConfigError("topology.max_staleness", "expected only with topology.mode \"async\"");
  }
  tp.peers = static_cast<int>(declared_integer(topo, spec("peers")));
  tp.overlap = topo.boolean("overlap", spec("overlap").default_value.get<bool>());
  if (tp.overlap && tp.kind != SchemeKind::kGossip) {
    throw ConfigError("topology.overlap", "expected only with topology.kind \"gossip\"");
  }
  tp.l_comm = declared_integer(topo, spec("l_comm"));
  tp.g_comm = declared_integer(topo, spec("g_comm"));
  tp.c1 = declared_number(topo, spec("c1"));
  tp.c2 = declared_number(topo, spec("c2"));
  tp.group_size = static_cast<int>(declared_integer(topo, spec("group_size")));
  tp.timeout_s = declared_duration(topo, spec("timeout"));
  if (tp.timeout_s <= 0) throw ConfigError("topology.timeout", "expected a duration > 0");
  return tp;
}

nlohmann::json to_json(const Scenario& s) {
  nlohmann::json model = {{"kind", s.model.kind}};
  const ModelConfig& m = s.model;
  if (m.kind == "mlp") {
    model["hidden"] = m.hidden;
  } else if (m.kind == "torchscript") {
    model["path"] = m.path;
  } else if (m.kind == "cnn") {
    model.update({{"conv1", m.conv1}, {"conv2", m.conv2}, {"fc1", m.fc1}, {"fc2", m.fc2}});
  } else if (m.kind == "mobilenetv2") {
    model["width"] = m.width;
  } else if (m.kind == "lstm_lm") {
    model.update({{"embedding", m.embedding}, {"hidden_size", m.hidden_size},
                  {"layers", m.layers}, {"dropout", m.dropout < 0 ? 0.5 : m.dropout},
                  {"tied", m.tied}});
  } else if (m.kind == "transformer") {
    model.update({{"d_model", m.d_model}, {"heads", m.heads}, {"ff", m.ff},
                  {"layers", m.layers}, {"dropout", m.dropout < 0 ? 0.1 : m.dropout},
                  {"patch", m.patch}});
  }
  nlohmann::json dataset = {{"kind", s.dataset.kind},
                            {"partition", {{"kind", s.dataset.partition}}}};
  if (s.dataset.partition == "dirichlet") dataset["partition"]["alpha"] = s.dataset.alpha;
  if (s.dataset.kind == "synthetic") {
    const auto& y = s.dataset.synthetic;
    if (y.vocab > 0) {
      dataset.update({{"vocab", y.vocab}, {"bptt", y.seq_len}});
    } else {
      dataset.update({{"classes", y.classes}, {"separation", y.separation}});
      if (y.shape.empty()) dataset["features"] = y.features;
      else dataset["shape"] = y.shape;
    }
    dataset.update({{"train_samples", y.train_samples}, {"test_samples", y.test_samples}});
  } else {
    dataset.update({{"path", s.dataset.path}, {"train_limit", s.dataset.train_limit},
                    {"test_limit", s.dataset.test_limit}});
  }
  if (s.dataset.kind == "text") {
    const auto& x = s.dataset.text;
    dataset.update({{"unit", x.unit}, {"bptt", x.bptt}, {"vocab", x.vocab},
                    {"test_fraction", x.test_fraction}});
  }
  if (s.dataset.kind != "text" && expected_input(s.dataset).sample_shape.size() == 3) {
    dataset["augment"] = s.dataset.augment;
  }
  const auto& t = s.training;
  nlohmann::json training = {
      {"workers", t.workers},
      {"steps", t.steps},
      {"batch", t.batch},
      {"optimizer",
       {{"kind", "sgd"}, {"lr", t.lr.base_lr}, {"momentum", t.momentum},
        {"weight_decay", t.weight_decay}, {"nesterov", t.nesterov},
        {"warmup_steps", t.lr.warmup_steps}, {"milestones", t.lr.milestones},
        {"gamma", t.lr.gamma}}},
      {"eval_every", t.eval_every},
      {"eval_samples", t.eval_samples},
      {"target_accuracy", t.target_accuracy}};
  if (t.target_perplexity > 0) training["target_perplexity"] = t.target_perplexity;
  training["buckets"] = t.buckets ? nlohmann::json{{"size_mb", t.bucket_mb},
                                                   {"first_mb", t.first_bucket_mb}}
                                  : nlohmann::json("none");
  nlohmann::json compute = {{"mode", s.compute.mode}, {"device", s.compute.device},
                            {"threads", s.compute.threads},
                            {"parallel_workers", s.compute.parallel_workers}};
  if (s.compute.mode == "measured") compute["scale"] = s.compute.scale;
  if (s.compute.mode == "fixed") compute["seconds"] = s.compute.seconds;
  if (s.compute.mode == "profile") {
    if (s.compute.profile.empty()) {
      compute["seconds_per_sample"] = s.compute.seconds_per_sample;
    } else {
      compute["profile"] = s.compute.profile;
      if (s.compute.flops_per_sample > 0) compute["flops_per_sample"] = s.compute.flops_per_sample;
    }
  }
  // Only the workers that are slow: a scale of 1 is the default, and an empty list would read
  // back as no list at all, so the resolved form would not resolve to itself.
  nlohmann::json slow = nlohmann::json::array();
  for (std::size_t r = 0; r < s.compute.worker_scale.size(); ++r) {
    if (s.compute.worker_scale[r] != 1.0) {
      slow.push_back({{"rank", r}, {"scale", s.compute.worker_scale[r]}});
    }
  }
  if (!slow.empty()) compute["slow_workers"] = slow;
  compute["codec_time"] = s.compute.codec_time;
  if (s.compute.codec_time == "measured") compute["codec_scale"] = s.compute.codec_scale;
  if (s.compute.codec_time == "profile") compute["codec_device"] = s.compute.codec_device;
  if (s.compute.straggler_probability > 0) {
    compute["stragglers"] = {{"probability", s.compute.straggler_probability},
                             {"slowdown", s.compute.straggler_slowdown}};
  }
  nlohmann::json out = {{"gradwire", kScenarioVersion},
          {"name", s.name},
          {"seed", s.seed},
          {"model", model},
          {"dataset", dataset},
          {"training", training},
          {"compute", compute},
          {"codec", s.codec},
          {"topology", topology_json(s.topology, !s.faults.empty())},
          {"network", s.network.to_json()},
          {"output", {{"dir", s.output_dir}}}};
  if (!s.faults.empty()) {
    nlohmann::json faults = nlohmann::json::array();
    for (const FaultSpec& f : s.faults) {
      nlohmann::json e = {{"rank", f.rank}, {"leave_at", format_duration(f.leave_at_s)}};
      if (f.rejoin_at_s >= 0) e["rejoin_at"] = format_duration(f.rejoin_at_s);
      faults.push_back(e);
    }
    out["faults"] = faults;
  }
  return out;
}

// `faults`: [{"rank": r, "leave_at": "0.5s", "rejoin_at": "1.2s"}] (rejoin_at optional). One
// entry per rank; at least one worker must stay.
std::vector<FaultSpec> read_faults(const nlohmann::json& document, int workers) {
  std::vector<FaultSpec> out;
  if (!document.contains("faults")) return out;
  const auto& list = document.at("faults");
  if (!list.is_array()) {
    throw ConfigError("faults", "expected an array like [{\"rank\": 1, \"leave_at\": \"0.5s\", "
                                "\"rejoin_at\": \"1.2s\"}], got " + json_brief(list));
  }
  std::vector<bool> seen(static_cast<std::size_t>(workers), false);
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonFields f(list[i], "faults[" + std::to_string(i) + "]");
    f.allow({"rank", "leave_at", "rejoin_at"});
    if (!f.has("rank")) throw ConfigError(f.path_of("rank"), "missing; expected a worker rank");
    if (!f.has("leave_at")) {
      throw ConfigError(f.path_of("leave_at"), "missing; expected a simulated time like \"0.5s\"");
    }
    FaultSpec spec;
    spec.rank = static_cast<int>(f.integer("rank", 0, 0, 1023));
    if (spec.rank >= workers) {
      throw ConfigError(f.path_of("rank"), "expected a rank below training.workers (" +
                                               std::to_string(workers) + "), got " +
                                               std::to_string(spec.rank));
    }
    if (seen[static_cast<std::size_t>(spec.rank)]) {
      throw ConfigError(f.path_of("rank"), "rank " + std::to_string(spec.rank) +
                                               " already has a fault entry (one per rank)");
    }
    seen[static_cast<std::size_t>(spec.rank)] = true;
    spec.leave_at_s = read_duration(f, "leave_at", 0);
    if (f.has("rejoin_at")) {
      spec.rejoin_at_s = read_duration(f, "rejoin_at", 0);
      if (spec.rejoin_at_s <= spec.leave_at_s) {
        throw ConfigError(f.path_of("rejoin_at"), "expected a time after leave_at");
      }
    }
    out.push_back(spec);
  }
  if (static_cast<int>(out.size()) >= workers) {
    throw ConfigError("faults", "every worker leaves: at least one must stay");
  }
  return out;
}

}  // namespace

nlohmann::json read_scenario_file(const std::string& path) {
  if (is_directory(path)) {
    throw ConfigError("(file)", path + " is a directory; expected a scenario file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("(file)", "cannot read scenario file " + path);
  // Read at most one byte past the limit: a device such as /dev/zero never ends.
  std::string text(kMaxScenarioBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxScenarioBytes) {
    throw ConfigError("(file)", path + ": expected a scenario file of at most " +
                                    std::to_string(kMaxScenarioBytes >> 20) + " MiB");
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
              "topology", "network", "output", "faults"});
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
  s.model = read_model(root);
  s.dataset = read_dataset(root);
  // Read once: a text dataset is read to be counted.
  const std::int64_t samples = train_size(s.dataset);
  s.training = read_training(root, s.dataset, samples);
  if (samples < s.training.workers) {
    const std::string where = s.dataset.kind == "synthetic" ? "dataset.train_samples"
                              : s.dataset.train_limit > 0   ? "dataset.train_limit"
                                                            : "dataset.path";
    throw ConfigError(where, "expected at least one training sample per worker (" +
                                 std::to_string(s.training.workers) + "), got " +
                                 std::to_string(samples));
  }
  s.compute = read_compute(root);

  s.codec = CodecRegistry::builtin().resolve(
      root.has("codec") ? document.at("codec") : nlohmann::json{{"kind", "none"}}, "codec");

  s.topology = read_topology(JsonFields(root.object_at("topology"), "topology"));
  const TopologySpec& tp = s.topology;
  s.faults = read_faults(document, s.training.workers);
  if (!s.faults.empty()) {
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
    if (tp.overlap) {
      throw ConfigError("topology.overlap", "not supported together with faults");
    }
  }
  read_buckets(root, tp, !s.faults.empty(), s.training);

  s.network = resolve_network(root.object_at("network"), "network");
  const std::int64_t hosts = s.training.workers + (tp.scheme().server_host ? 1 : 0);
  check_impairment_hosts(s.network.to_json(), "network", hosts, hosts);

  JsonFields out(root.object_at("output"), "output");
  out.allow({"dir"});
  s.output_dir = out.string("dir", "runs");
  if (s.output_dir.empty()) {
    throw ConfigError("output.dir", "expected a folder for the run folders (e.g. \"runs\"), got \"\"");
  }

  if (s.compute.worker_scale.size() > static_cast<std::size_t>(s.training.workers)) {
    throw ConfigError("compute.slow_workers",
                      "expected ranks below training.workers (" +
                          std::to_string(s.training.workers) + ")");
  }
  if (!tp.scheme().sends_gradients && s.codec.at("kind") != "none") {
    throw ConfigError("codec.kind", "expected \"none\" with topology " + tp.name() +
                                        ": it sends parameters, not gradients, and compressing "
                                        "parameters is not supported yet");
  }
  check_model_fits_data(s);
  check_memory(s);
  if (s.model.kind == "torchscript") check_torchscript(s);
  s.resolved = to_json(s);
  return s;
}

}  // namespace gradwire
