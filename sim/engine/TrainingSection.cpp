#include "sim/engine/TrainingSection.h"

#include <algorithm>
#include <cmath>

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"

namespace gradwire {

TrainingSpec read_training(const JsonFields& f, bool tokens, std::int64_t train_samples) {
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
  t.lr.milestones = declared_integer_list(o, "milestones", {}, 1);
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
void read_buckets(const JsonFields& f, const TopologyConfig& topology,
                  const std::string& whole_gradient_for, TrainingSpec& t) {
  const std::string path = f.path_of("buckets");
  const bool supported = whole_gradient_for.empty() && topology.scheme().gradient_buckets;
  const auto& training = f.object();
  if (!training.contains("buckets")) {
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
    throw ConfigError(path, "gradient buckets need a ring or parameter server without faults "
                            "or participation; expected \"none\" with " +
                                (whole_gradient_for.empty() ? "topology " + topology.name()
                                                            : whole_gradient_for));
  }
  JsonFields b(value, path);
  b.allow({"size_mb", "first_mb"});
  t.buckets = true;
  t.bucket_mb = b.number("size_mb", 25, 0, 1e6, true);
  t.first_bucket_mb = b.number("first_mb", 1, 0, 1e6, true);
}

nlohmann::json training_json(const TrainingSpec& t) {
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
  return training;
}

}  // namespace gradwire
