#include "nodes/training/ModelRegistry.h"

#include <stdexcept>

#include "nodes/training/BuiltinModels.h"

namespace gradwire {

ModelRegistry::ModelRegistry() {
  add(cnn_model());
  add(mlp_model());
  add(resnet20_model());
  add(resnet56_model());
  add(resnet18_model());
  add(vgg16_model());
  add(mobilenetv2_model());
  add(lstm_lm_model());
  add(transformer_model());
  add(torchscript_model());
}

void ModelRegistry::add(ModelInfo info) {
  if (!info.parameters || !info.make) {
    throw std::logic_error("model kind '" + info.name +
                           "' must declare its parameter count and how it is built");
  }
  KindRegistry<ModelInfo>::add(std::move(info));
}

std::string model_data_text(ModelData data) {
  switch (data) {
    case ModelData::kAny: return "features or images";
    case ModelData::kImages: return "images";
    case ModelData::kTokens: return "tokens";
    case ModelData::kTokensOrImages: return "tokens or images";
    case ModelData::kFromFile: return "as exported";
  }
  return "";
}

ModelConfig read_model(const JsonFields& f) {
  const ModelRegistry& registry = ModelRegistry::builtin();
  ModelConfig m;
  m.kind = f.string("kind", m.kind, registry.names());
  const ModelInfo& info = registry.at(m.kind);
  allow_kind_keys(f, registry, info, {"kind"}, "model.kind");
  if (info.read_settings) m.settings = info.read_settings(f);
  if (info.check_keys) info.check_keys(m, f);
  return m;
}

nlohmann::json model_json(const ModelConfig& m) {
  nlohmann::json out = {{"kind", m.kind}};
  const ModelInfo& info = ModelRegistry::builtin().at(m.kind);
  if (info.write_settings) info.write_settings(m, out);
  return out;
}

std::shared_ptr<Model> make_model(const ModelConfig& config, const ModelInput& input) {
  if (input.sample_shape.empty()) throw std::invalid_argument("model: sample shape is empty");
  const ModelInfo* info = ModelRegistry::builtin().find(config.kind);
  if (info == nullptr) {
    throw std::invalid_argument("unknown model kind \"" + config.kind + "\" (expected one of " +
                                join_names(ModelRegistry::builtin().names()) + ")");
  }
  return info->make(config, input);
}

std::string model_reference_markdown() {
  const ModelRegistry& r = ModelRegistry::builtin();
  std::string out = "| kind | data | architecture | source |\n|---|---|---|---|\n";
  for (const auto& m : r.list()) {
    out += "| `" + m.name + "` | " + model_data_text(m.data) + " | " + m.summary + " | " +
           m.reference + " |\n";
  }
  for (const auto& m : r.list()) {
    if (m.params.empty()) continue;
    out += "\n### `" + m.name + "`\n\n" + param_table_markdown(m.params);
  }
  return out;
}

nlohmann::json model_reference_json() {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& m : ModelRegistry::builtin().list()) {
    all.push_back({{"kind", m.name},
                   {"summary", m.summary},
                   {"data", model_data_text(m.data)},
                   {"reference", m.reference},
                   {"params", params_json(m.params)}});
  }
  return all;
}

}  // namespace gradwire
