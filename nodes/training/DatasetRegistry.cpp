#include "nodes/training/DatasetRegistry.h"

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "nodes/training/BuiltinDatasets.h"

namespace gradwire {

DatasetRegistry::DatasetRegistry() {
  add(fashion_mnist_dataset());
  add(cifar_dataset(10));
  add(cifar_dataset(100));
  add(text_dataset());
  add(synthetic_dataset());
}

std::vector<ParamSpec> DatasetRegistry::common_params() const {
  using namespace params;
  return {
      choice("kind", "fashion-mnist", names(), "the dataset"),
      derived(boolean("augment", false,
                      "images: random crop (4-pixel padding) and horizontal flip of training "
                      "batches"),
              "true for cifar10 and cifar100"),
      object("partition", "how the training set is split between workers: {\"kind\": "
                          "\"iid\"} or {\"kind\": \"dirichlet\", \"alpha\": 0.5}"),
  };
}

namespace {

bool is_image(const ModelInput& in) { return !in.tokens && in.sample_shape.size() == 3; }

}  // namespace

DatasetSpec read_dataset(const JsonFields& f) {
  const DatasetRegistry& registry = DatasetRegistry::builtin();
  const std::vector<ParamSpec> common = registry.common_params();
  DatasetSpec d;
  d.kind = declared_string(f, param_named(common, "kind"));
  const DatasetInfo& info = registry.at(d.kind);
  allow_kind_keys(f, registry, info, param_names(common), "dataset.kind");
  info.fields.read(f, d);
  if (info.check) info.check(d, f);
  const ModelInput in = info.input(d);
  d.augment = f.boolean("augment", info.augment_by_default);
  if (d.augment && !is_image(in)) {
    throw ConfigError(f.path_of("augment"), "expected images shaped {C, H, W} for random crop "
                                            "and flip; this dataset has none");
  }
  JsonFields p(f.object_at("partition"), f.path_of("partition"));
  p.allow({"kind", "alpha"});
  d.partition = p.string("kind", "iid", {"iid", "dirichlet"});
  d.alpha = p.number("alpha", d.alpha, 0, 1e6, true);
  if (in.tokens && d.partition == "dirichlet") {
    throw ConfigError(p.path_of("kind"), "a Dirichlet split draws classes per worker; token "
                                         "sequences have none (expected \"iid\")");
  }
  return d;
}

nlohmann::json dataset_json(const DatasetSpec& d) {
  const DatasetInfo& info = DatasetRegistry::builtin().at(d.kind);
  nlohmann::json out = {{"kind", d.kind}, {"partition", {{"kind", d.partition}}}};
  if (d.partition == "dirichlet") out["partition"]["alpha"] = d.alpha;
  info.fields.write(d, out);
  if (is_image(info.input(d))) out["augment"] = d.augment;
  return out;
}

DatasetSplit load_dataset(const DatasetSpec& spec, std::uint64_t seed) {
  DatasetSplit split;
  try {
    split = DatasetRegistry::builtin().at(spec.kind).load(spec, seed);
  } catch (const DatasetError& e) {
    throw ConfigError("dataset.path", e.what());
  }
  split.train.augment = spec.augment;
  return split;
}

std::string dataset_reference_markdown() {
  const DatasetRegistry& r = DatasetRegistry::builtin();
  std::string out = "### Keys of every `dataset`\n\n" + param_table_markdown(r.common_params());
  for (const auto& d : r.list()) {
    out += "\n### `" + d.name + "`\n\n" + d.summary + ".\n";
    if (!d.params.empty()) out += "\n" + param_table_markdown(d.params);
  }
  return out;
}

nlohmann::json dataset_reference_json() {
  const DatasetRegistry& r = DatasetRegistry::builtin();
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& d : r.list()) {
    kinds.push_back({{"kind", d.name}, {"summary", d.summary}, {"params", params_json(d.params)}});
  }
  return {{"common", params_json(r.common_params())}, {"datasets", kinds}};
}

}  // namespace gradwire
