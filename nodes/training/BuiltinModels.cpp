// Every built-in model kind's keys, checks, parameter count and factory. Each kind's keys are
// bound to its own settings struct (beside its model class), whose defaults are the
// architecture its paper describes, so a scenario that names only the kind gets that.
#include "nodes/training/BuiltinModels.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "nodes/training/LeNet.h"
#include "nodes/training/Mlp.h"
#include "nodes/training/TorchScriptModel.h"
#include "nodes/training/zoo/LstmLanguageModel.h"
#include "nodes/training/zoo/MobileNetV2.h"
#include "nodes/training/zoo/ResNet18.h"
#include "nodes/training/zoo/ResNetCifar.h"
#include "nodes/training/zoo/TransformerModel.h"
#include "nodes/training/zoo/Vgg16.h"

namespace gradwire {

namespace {

using namespace params;

void require_images(const ModelConfig& config, const ModelInput& input) {
  if (input.tokens || input.sample_shape.size() != 3) {
    throw std::invalid_argument(
        "model kind \"" + config.kind + "\" needs image samples shaped {C, H, W}; this "
        "dataset's samples are " + (input.tokens ? "token sequences " : "") +
        shape_text(input.sample_shape) + " (use \"mlp\" for features, \"lstm_lm\" or "
        "\"transformer\" for text)");
  }
}

void refuse_tokens(const ModelConfig& config, const ModelInput& input) {
  if (input.tokens) {
    throw std::invalid_argument("model kind \"" + config.kind + "\" does not read token "
                                "sequences; use \"lstm_lm\" or \"transformer\" for text");
  }
}

/// Elements of one sample, in floating point: a shape such as [3, 2^32, 2^32] overflows int64.
double elements_of(const ModelInput& in) {
  double n = 1;
  for (std::int64_t d : in.sample_shape) n *= static_cast<double>(d);
  return n;
}

/// Pixels per channel of an image sample (1 for other samples).
double pixels_of(const ModelInput& in) {
  const auto& s = in.sample_shape;
  return s.size() == 3 ? static_cast<double>(s[1]) * static_cast<double>(s[2]) : 1.0;
}

/// `dropout`, whose default is the model's own (< 0 in the settings stands for it).
template <typename Settings>
void add_dropout(FieldTable<Settings>& fields, double model_default) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", model_default);
  fields.add(derived(number("dropout", -1, -1, 1,
                            "dropout probability; < 0 takes the model's default"),
                     text),
             [](const JsonFields& f, const ParamSpec& spec, Settings& m) {
               m.dropout = declared_number(f, spec);
             },
             [model_default](const Settings& m, const ParamSpec& spec, nlohmann::json& out) {
               out[spec.name] = m.dropout < 0 ? model_default : m.dropout;
             });
}

/// A fixed CIFAR architecture: an upper bound on its parameters, its trunk plus the classifier.
/// Its activations: `per_pixel` values per pixel of the image (every convolution's output, its
/// batch norm's and its activation's, summed over the layers at their resolutions).
ModelInfo fixed_image_model(std::string name, std::string summary, std::string reference,
                            double trunk, double per_class, double per_pixel,
                            std::function<std::shared_ptr<Model>(const ModelInput&)> build) {
  ModelInfo m;
  m.name = std::move(name);
  m.summary = std::move(summary);
  m.data = ModelData::kImages;
  m.reference = std::move(reference);
  m.parameters = [trunk, per_class](const ModelConfig&, const ModelInput& in) {
    return trunk + per_class * static_cast<double>(in.classes);
  };
  m.activations = [per_pixel](const ModelConfig&, const ModelInput& in) {
    return elements_of(in) + per_pixel * pixels_of(in) + 2 * static_cast<double>(in.classes);
  };
  m.make = [build](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    refuse_tokens(c, in);
    require_images(c, in);
    return build(in);
  };
  return m;
}

}  // namespace

ModelInfo cnn_model() {
  ModelInfo m;
  m.name = "cnn";
  m.summary = "LeNet-5-like convolutional network: two 5x5 convolutions with pooling, three "
              "linear layers";
  m.data = ModelData::kImages;
  m.reference = "LeCun et al. 1998";
  using S = LeNetSettings;
  const S d;
  FieldTable<S> fields;
  fields.add(integer("conv1", d.conv1, 1, 1024, "channels of the first convolution"), &S::conv1)
      .add(integer("conv2", d.conv2, 1, 1024, "channels of the second convolution"), &S::conv2)
      .add(integer("fc1", d.fc1, 1, 65536, "width of the first linear layer"), &S::fc1)
      .add(integer("fc2", d.fc2, 1, 65536, "width of the second linear layer"), &S::fc2);
  m.declare(fields);
  // Layer by layer, the pooled side rounded up.
  m.parameters = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const auto& shape = in.sample_shape;
    if (shape.size() != 3) return 0.0;
    const double classes = static_cast<double>(in.classes);
    const double channels = static_cast<double>(shape[0]);
    const double side = static_cast<double>(std::max(shape[1], shape[2]));
    const double flat = static_cast<double>(c.conv2) * (side / 4) * (side / 4);
    return 25 * (channels * static_cast<double>(c.conv1) + static_cast<double>(c.conv1 * c.conv2)) +
           flat * static_cast<double>(c.fc1) + static_cast<double>(c.fc1 * c.fc2) +
           static_cast<double>(c.fc2) * classes;
  };
  // Each convolution's output, activation and pooled map, then the linear layers'.
  m.activations = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const double pixels = pixels_of(in);
    return elements_of(in) + 3 * static_cast<double>(c.conv1) * pixels +
           3 * static_cast<double>(c.conv2) * pixels / 4 +
           2 * static_cast<double>(c.fc1 + c.fc2 + in.classes);
  };
  m.make = [](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    refuse_tokens(c, in);
    if (in.sample_shape.size() != 3) {
      throw std::invalid_argument(
          "model kind \"cnn\" needs image samples shaped {C, H, W}; this dataset's samples "
          "have " + std::to_string(in.sample_shape.size()) + " dimension(s) (use \"mlp\")");
    }
    return std::make_shared<LeNet>(in.sample_shape, in.classes, c.settings_as<S>());
  };
  return m;
}

ModelInfo mlp_model() {
  ModelInfo m;
  m.name = "mlp";
  m.summary = "multilayer perceptron over flattened samples";
  m.data = ModelData::kAny;
  using S = MlpSettings;
  FieldTable<S> fields;
  fields.add(derived(list("hidden", "hidden layer widths; [] is softmax regression"),
                     "[256, 128]"),
             [](const JsonFields& f, const ParamSpec& spec, S& c) {
               c.hidden = declared_integer_list(f, spec.name, c.hidden, 1);
               if (c.hidden.size() > 64) {
                 throw ConfigError(f.path_of(spec.name),
                                   "expected at most 64 hidden layers, got " +
                                       std::to_string(c.hidden.size()));
               }
             },
             [](const S& c, const ParamSpec& spec, nlohmann::json& out) {
               out[spec.name] = c.hidden;
             });
  m.declare(fields);
  m.parameters = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const double classes = static_cast<double>(in.classes);
    double width = 1;
    for (std::int64_t d : in.sample_shape) width *= static_cast<double>(d);
    double total = 0;
    for (std::int64_t h : c.hidden) {
      total += width * static_cast<double>(h) + static_cast<double>(h);
      width = static_cast<double>(h);
    }
    return total + width * classes + classes;
  };
  // Each layer's output and activation.
  m.activations = [](const ModelConfig& c, const ModelInput& in) {
    double values = elements_of(in) + 2 * static_cast<double>(in.classes);
    for (std::int64_t h : c.settings_as<S>().hidden) values += 2 * static_cast<double>(h);
    return values;
  };
  m.make = [](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    refuse_tokens(c, in);
    // An MLP sees every sample flattened, so images work too.
    for (std::int64_t d : in.sample_shape) {
      if (d < 1) throw std::invalid_argument("mlp: sample dimensions must be at least 1");
    }
    const std::int64_t features = std::accumulate(in.sample_shape.begin(), in.sample_shape.end(),
                                                  std::int64_t{1}, std::multiplies<>());
    return std::make_shared<Mlp>(features, c.settings_as<S>().hidden, in.classes);
  };
  return m;
}

ModelInfo resnet20_model() {
  return fixed_image_model(
      "resnet20",
      "CIFAR ResNet-20: 3 stages x 3 basic blocks, 16-64 channels, identity shortcuts (0.27M "
      "parameters)",
      "He et al. 2016, section 4.2", 1e6, 64, 600,
      [](const ModelInput& in) { return std::make_shared<ResNetCifar>(20, in); });
}

ModelInfo resnet56_model() {
  return fixed_image_model(
      "resnet56", "CIFAR ResNet-56: 3 stages x 9 basic blocks (0.85M parameters)",
      "He et al. 2016, section 4.2", 1e6, 64, 1700,
      [](const ModelInput& in) { return std::make_shared<ResNetCifar>(56, in); });
}

ModelInfo resnet18_model() {
  return fixed_image_model(
      "resnet18",
      "ResNet-18 with a 3x3 stem and no max pool, as CIFAR studies use it (11.2M parameters)",
      "He et al. 2016", 1.5e7, 512, 2000,
      [](const ModelInput& in) { return std::make_shared<ResNet18>(in); });
}

ModelInfo vgg16_model() {
  ModelInfo m = fixed_image_model(
      "vgg16",
      "VGG-16 with batch normalisation and one linear classifier, as CIFAR studies use it "
      "(14.7M parameters)",
      "Simonyan & Zisserman 2015", 1.5e7, 512, 1000,
      [](const ModelInput& in) { return std::make_shared<Vgg16>(in); });
  m.check_data = [](const ModelConfig&, const ModelInput& in) {
    const auto& s = in.sample_shape;
    if (!in.tokens && s.size() == 3 && (s[1] < 32 || s[2] < 32)) {
      throw ConfigError("model.kind", "expected images of at least 32x32 for vgg16 (it pools "
                                      "five times); samples shaped " + shape_text(s));
    }
  };
  return m;
}

ModelInfo mobilenetv2_model() {
  ModelInfo m;
  m.name = "mobilenetv2";
  m.summary = "MobileNetV2: inverted residuals with depthwise convolutions, stride 1 in the stem "
              "and second stage for small images (2.2M parameters)";
  m.data = ModelData::kImages;
  m.reference = "Sandler et al. 2018";
  using S = MobileNetV2Settings;
  FieldTable<S> fields;
  fields.add(number("width", S{}.width, 0, 4, "width multiplier of every layer", true), &S::width);
  m.declare(fields);
  m.parameters = [](const ModelConfig& c, const ModelInput& in) {
    const double width = c.settings_as<S>().width;
    return 2.3e6 * width * width + 1280 * width * static_cast<double>(in.classes);
  };
  // Expanded (6x) maps at full resolution in its first stages, each with batch norm and ReLU6.
  m.activations = [](const ModelConfig& c, const ModelInput& in) {
    return elements_of(in) + 3000 * c.settings_as<S>().width * pixels_of(in) +
           2 * static_cast<double>(in.classes);
  };
  m.make = [](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    refuse_tokens(c, in);
    require_images(c, in);
    return std::make_shared<MobileNetV2>(in, c.settings_as<S>().width);
  };
  return m;
}

ModelInfo lstm_lm_model() {
  ModelInfo m;
  m.name = "lstm_lm";
  m.summary = "word-level LSTM language model: embedding, stacked LSTM, linear decoder";
  m.data = ModelData::kTokens;
  m.reference = "Zaremba et al. 2014; the PTB model of Lin et al. 2018 (DGC)";
  using S = LstmLanguageModelSettings;
  const S d;
  FieldTable<S> fields;
  fields.add(integer("embedding", d.embedding, 1, 65536, "embedding size"), &S::embedding)
      .add(integer("hidden_size", d.hidden_size, 1, 65536,
                   "LSTM hidden size (650: PTB medium; DGC's PTB model: 1500)"),
           &S::hidden_size)
      .add(integer("layers", d.layers, 1, 64, "stacked LSTM layers"), &S::layers);
  add_dropout(fields, 0.5);
  fields.add(boolean("tied", d.tied, "the decoder shares the embedding's weights (needs "
                                     "embedding = hidden_size)"),
             &S::tied);
  m.declare(fields);
  m.check_keys = [](const ModelConfig& config, const JsonFields& f) {
    const S& c = config.settings_as<S>();
    if (c.tied && c.embedding != c.hidden_size) {
      throw ConfigError(f.path_of("tied"), "expected embedding = hidden_size to tie the decoder "
                                           "to the embedding (" + std::to_string(c.embedding) +
                                           " vs " + std::to_string(c.hidden_size) + ")");
    }
  };
  m.parameters = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const double classes = static_cast<double>(in.classes);
    const double e = static_cast<double>(c.embedding);
    const double h = static_cast<double>(c.hidden_size);
    const double lstm = 4 * h * (e + h + 2) + static_cast<double>(c.layers - 1) * 4 * h * (2 * h + 2);
    return classes * e + lstm + (c.tied ? 0 : h * classes) + classes;
  };
  // Per token: the embedding, each layer's gates, cell and hidden states, and the decoder's
  // logits with their log-softmax.
  m.activations = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const double tokens = elements_of(in);
    return tokens * (static_cast<double>(c.embedding) +
                     10 * static_cast<double>(c.layers) * static_cast<double>(c.hidden_size) +
                     3 * static_cast<double>(in.classes));
  };
  m.make = [](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    if (!in.tokens) {
      throw std::invalid_argument("model kind \"lstm_lm\" is a language model and needs token "
                                  "sequences (dataset kind \"text\", or \"synthetic\" with "
                                  "\"vocab\"); this dataset's samples are " +
                                  shape_text(in.sample_shape));
    }
    return std::make_shared<LstmLanguageModel>(in, c.settings_as<S>());
  };
  return m;
}

ModelInfo transformer_model() {
  ModelInfo m;
  m.name = "transformer";
  m.summary = "pre-norm Transformer encoder: a causal language model on tokens, a ViT-style "
              "classifier on image patches";
  m.data = ModelData::kTokensOrImages;
  m.reference = "Vaswani et al. 2017; Dosovitskiy et al. 2021";
  using S = TransformerSettings;
  const S d;
  FieldTable<S> fields;
  fields.add(integer("d_model", d.d_model, 1, 65536, "model width"), &S::d_model)
      .add(integer("heads", d.heads, 1, 1024, "attention heads (must divide d_model)"), &S::heads)
      .add(integer("ff", d.ff, 1, 262144, "feed-forward width"), &S::ff)
      .add(integer("layers", d.layers, 1, 64, "encoder layers"), &S::layers);
  add_dropout(fields, 0.1);
  fields.add(integer("patch", d.patch, 1, 1024, "images: side of the square patches (must "
                                                "divide the image's height and width)"),
             &S::patch);
  m.declare(fields);
  m.check_keys = [](const ModelConfig& config, const JsonFields& f) {
    const S& c = config.settings_as<S>();
    if (c.d_model % c.heads != 0) {
      throw ConfigError(f.path_of("heads"), "expected a divisor of d_model (" +
                                                std::to_string(c.d_model) + "), got " +
                                                std::to_string(c.heads));
    }
  };
  m.check_data = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const auto& s = in.sample_shape;
    if (!in.tokens && s.size() == 3 && (s[1] % c.patch != 0 || s[2] % c.patch != 0)) {
      throw ConfigError("model.patch", "expected a divisor of the images' height and width " +
                                           shape_text(s) + ", got " + std::to_string(c.patch));
    }
  };
  m.parameters = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const auto& shape = in.sample_shape;
    const double classes = static_cast<double>(in.classes);
    const double dm = static_cast<double>(c.d_model);
    const double layer = 4 * dm * dm + 2 * dm * static_cast<double>(c.ff) + 10 * dm +
                         static_cast<double>(c.ff);
    const double tokens = static_cast<double>(shape[0]);
    const double patch = static_cast<double>(c.patch);
    const double embed = in.tokens ? classes * dm + tokens * dm
                                   : tokens * patch * patch * dm + (pixels_of(in) + 2) * dm;
    return embed + static_cast<double>(c.layers) * layer + dm * classes + classes + 2 * dm;
  };
  // Per layer: each head's sequence x sequence scores, their softmax and dropout, and the
  // sequence's projections and feed-forward; then a language model's logits per position.
  m.activations = [](const ModelConfig& config, const ModelInput& in) {
    const S& c = config.settings_as<S>();
    const double patch = static_cast<double>(c.patch);
    const double sequence = in.tokens ? elements_of(in) : pixels_of(in) / (patch * patch) + 1;
    const double dm = static_cast<double>(c.d_model);
    const double layer = 3 * static_cast<double>(c.heads) * sequence * sequence +
                         sequence * (10 * dm + 3 * static_cast<double>(c.ff));
    const double head = in.tokens ? 3 * sequence * static_cast<double>(in.classes)
                                  : 2 * static_cast<double>(in.classes);
    return elements_of(in) + sequence * dm + static_cast<double>(c.layers) * layer + head;
  };
  m.make = [](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    if (!in.tokens) require_images(c, in);
    return std::make_shared<TransformerModel>(in, c.settings_as<S>());
  };
  return m;
}

ModelInfo torchscript_model() {
  ModelInfo m;
  m.name = "torchscript";
  m.summary = "any PyTorch model exported to TorchScript (scripts/export-model)";
  m.data = ModelData::kFromFile;
  using S = TorchScriptSettings;
  FieldTable<S> fields;
  fields.add(text("path", "", "the exported .pt file (required)"),
             [](const JsonFields& f, const ParamSpec& spec, S& c) {
               c.path = f.required_string(spec.name);
             },
             [](const S& c, const ParamSpec& spec, nlohmann::json& out) {
               out[spec.name] = c.path;
             });
  m.declare(fields);
  // The file holds the weights: their count is the file's, checked when it is read
  // (ScenarioRules' torchscript check), not estimated from keys.
  m.parameters = [](const ModelConfig&, const ModelInput&) { return 0.0; };
  m.make = [](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    refuse_tokens(c, in);
    return std::make_shared<TorchScriptModel>(c.settings_as<S>().path, in.sample_shape,
                                              in.classes);
  };
  return m;
}

}  // namespace gradwire
