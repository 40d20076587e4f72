#include "nodes/training/TorchScriptModel.h"

#include <unordered_map>

#include <nlohmann/json.hpp>
#include <torch/script.h>

#include "common/InputFile.h"
#include "nodes/training/ModelFileError.h"

namespace gradwire {

namespace {

constexpr const char* kMetadataFile = "gradwire.json";

TorchScriptInfo parse_metadata(const std::string& path, const std::string& text) {
  TorchScriptInfo info;
  if (text.empty()) return info;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    info.input_shape = j.value("input_shape", std::vector<std::int64_t>{});
    info.classes = j.value("classes", std::int64_t{0});
    info.forward_flops_per_sample = j.value("forward_flops_per_sample", std::int64_t{0});
    for (const auto& l : j.value("layers", nlohmann::json::array())) {
      info.layers.push_back({l.value("name", ""), l.value("kind", ""), l.value("flops", std::int64_t{0})});
    }
  } catch (const nlohmann::json::exception& e) {
    throw ModelFileError(path + ": its " + kMetadataFile + " is not valid (" + e.what() +
                         "); export it again with scripts/export-model");
  }
  for (std::int64_t d : info.input_shape) {
    if (d < 1) throw ModelFileError(path + ": input_shape " + shape_text(info.input_shape) + " has a dimension < 1");
  }
  if (info.classes < 0 || info.forward_flops_per_sample < 0) {
    throw ModelFileError(path + ": negative classes or FLOPs in " + kMetadataFile);
  }
  info.has_metadata = true;
  return info;
}

torch::jit::Module load_module(const std::string& path, TorchScriptInfo& info) {
  // A file past this is no model gradwire trains on a CPU beside several copies of it.
  constexpr std::uint64_t kMaxModelFileBytes = std::uint64_t{8} << 30;
  try {
    check_input_file(path, kMaxModelFileBytes, "TorchScript model");
  } catch (const InputFileError& e) {
    throw ModelFileError(std::string(e.what()) + " (export a model with scripts/export-model)");
  }
  torch::jit::ExtraFilesMap extra{{kMetadataFile, ""}};
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, torch::kCPU, extra);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    if (what.size() > 300) what = what.substr(0, 300) + "...";
    throw ModelFileError(path + ": not a TorchScript file (" + what +
                         "); save one with torch.jit.save or scripts/export-model");
  }
  info = parse_metadata(path, extra[kMetadataFile]);
  if (module.parameters().size() == 0) {
    throw ModelFileError(path + ": the module has no parameters, so there is nothing to train");
  }
  return module;
}

}  // namespace

struct TorchScriptModel::Scripted {
  torch::jit::Module module;
};

TorchScriptInfo read_torchscript_info(const std::string& path) {
  TorchScriptInfo info;
  load_module(path, info);
  return info;
}

TorchScriptModel::TorchScriptModel(const std::string& path,
                                   const std::vector<std::int64_t>& sample_shape,
                                   std::int64_t classes)
    : scripted_(std::make_unique<Scripted>()) {
  scripted_->module = load_module(path, info_);
  if (!info_.input_shape.empty() && info_.input_shape != sample_shape) {
    throw ModelFileError(path + ": made for samples shaped " + shape_text(info_.input_shape) +
                         ", but the dataset's samples are " + shape_text(sample_shape));
  }
  if (info_.classes > 0 && info_.classes != classes) {
    throw ModelFileError(path + ": made for " + std::to_string(info_.classes) +
                         " classes, but the dataset has " + std::to_string(classes));
  }
  // TorchScript names are dotted ("layer1.0.conv1.weight"); nn::Module names may not contain
  // dots, so they are stored with '/' and the order (the module's own) is what matters.
  auto register_name = [](std::string name) {
    for (char& c : name) {
      if (c == '.') c = '/';
    }
    return name;
  };
  for (const auto& p : scripted_->module.named_parameters(/*recurse=*/true)) {
    register_parameter(register_name(p.name), p.value, p.value.requires_grad());
  }
  for (const auto& b : scripted_->module.named_buffers(/*recurse=*/true)) {
    register_buffer(register_name(b.name), b.value);
  }
  for (const auto& layer : info_.layers) add_layer_cost(layer.name, layer.kind, layer.flops);
  scripted_->module.train(true);
}

TorchScriptModel::~TorchScriptModel() = default;

torch::Tensor TorchScriptModel::forward(torch::Tensor x) {
  return scripted_->module.forward({x}).toTensor();
}

void TorchScriptModel::train(bool on) {
  Model::train(on);
  scripted_->module.train(on);
}

}  // namespace gradwire
