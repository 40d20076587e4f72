#include "nodes/training/TorchScriptModel.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <sys/stat.h>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <torch/script.h>
#include <torch/torch.h>

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
  for (const auto& p : module.parameters()) info.parameters += p.numel();
  return module;
}

/// The line of a LibTorch error a user can act on. The TorchScript interpreter puts the
/// model's own error ("RuntimeError: mat1 and mat2 shapes cannot be multiplied ...") last,
/// after its traceback; elsewhere the first line is the error and the rest is C++ context.
std::string first_line_of(const std::string& what) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= what.size()) {
    const auto end = std::min(what.find('\n', start), what.size());
    const std::string line = what.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  if (lines.empty()) return "(no message)";
  const bool traceback = what.find("Traceback of TorchScript") != std::string::npos;
  std::string line = traceback ? lines.back() : lines.front();
  const std::string runtime_error = "RuntimeError: ";
  if (line.compare(0, runtime_error.size(), runtime_error) == 0) {
    line = line.substr(runtime_error.size());
  }
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

/// Restores the global generator's state when the trial step ends, however it ends: a
/// model's dropout draws from it, and a run must not depend on whether it was validated.
class GeneratorStateGuard {
 public:
  GeneratorStateGuard() {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    state_ = gen.get_state();
  }
  ~GeneratorStateGuard() {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state_);
  }
  GeneratorStateGuard(const GeneratorStateGuard&) = delete;
  GeneratorStateGuard& operator=(const GeneratorStateGuard&) = delete;

 private:
  at::Tensor state_;
};

/// One file's trial step, once: a sweep validates every run it expands, and a large model's
/// load and step take a noticeable fraction of a second. Keyed by the file's identity and
/// modification time, so a file rewritten between two validations is tried again.
struct TrialKey {
  std::string path;
  std::vector<std::int64_t> sample_shape;
  std::uint64_t device = 0, inode = 0, size = 0;
  std::int64_t modified_ns = 0;
  bool operator<(const TrialKey& o) const {
    return std::tie(path, sample_shape, device, inode, size, modified_ns) <
           std::tie(o.path, o.sample_shape, o.device, o.inode, o.size, o.modified_ns);
  }
};

struct TrialOutcome {
  std::int64_t outputs = 0;
  std::string error;  ///< the ModelFileError's message; empty when the step trained
};

std::int64_t try_torchscript_step_uncached(const std::string& path,
                                           const std::vector<std::int64_t>& sample_shape);

}  // namespace

std::int64_t try_torchscript_step(const std::string& path,
                                  const std::vector<std::int64_t>& sample_shape) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return try_torchscript_step_uncached(path, sample_shape);  // reports why
  }
  const std::int64_t modified_ns =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  const TrialKey key{path, sample_shape, static_cast<std::uint64_t>(st.st_dev),
                     static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                     modified_ns};
  static std::mutex mutex;
  static std::map<TrialKey, TrialOutcome> tried;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = tried.find(key);
    if (it != tried.end()) {
      if (!it->second.error.empty()) throw ModelFileError(it->second.error);
      return it->second.outputs;
    }
  }
  TrialOutcome outcome;
  try {
    outcome.outputs = try_torchscript_step_uncached(path, sample_shape);
  } catch (const ModelFileError& e) {
    outcome.error = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    tried.emplace(key, outcome);
  }
  if (!outcome.error.empty()) throw ModelFileError(outcome.error);
  return outcome.outputs;
}

namespace {

std::int64_t try_torchscript_step_uncached(const std::string& path,
                                           const std::vector<std::int64_t>& sample_shape) {
  TorchScriptInfo info;
  torch::jit::Module module = load_module(path, info);
  GeneratorStateGuard generator;
  std::vector<std::int64_t> batch_shape{2};
  batch_shape.insert(batch_shape.end(), sample_shape.begin(), sample_shape.end());
  const auto fail = [&](const std::string& stage, const std::string& what) {
    return ModelFileError(path + ": the model cannot train on samples shaped " +
                          shape_text(sample_shape) + ": its " + stage + " fails: " + what);
  };
  // The interpreter reports a model's error as c10::Error or, with its TorchScript traceback,
  // as another std::exception; neither may reach the user whole.
  const auto message = [](const std::exception& e) {
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    return first_line_of(error != nullptr ? error->what_without_backtrace() : e.what());
  };
  torch::IValue result;
  try {
    module.train(true);
    result = module.forward({torch::zeros(batch_shape)});
  } catch (const std::exception& e) {
    throw fail("forward", message(e));
  }
  if (!result.isTensor()) {
    throw fail("forward", "it returns " + result.tagKind() + ", expected a tensor of logits");
  }
  const torch::Tensor out = result.toTensor();
  if (out.dim() != 2 || out.size(0) != 2 || !out.is_floating_point()) {
    throw fail("forward", "it returns a tensor shaped " + shape_text(out.sizes().vec()) +
                              " for 2 samples, expected [2, classes] floating-point logits");
  }
  try {
    torch::nn::functional::cross_entropy(out, torch::zeros({2}, torch::kLong)).backward();
  } catch (const std::exception& e) {
    throw fail("backward", message(e));
  }
  return out.size(1);
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
