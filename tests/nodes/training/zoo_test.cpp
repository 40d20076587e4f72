// The CNNs of the gradient-compression literature (nodes/training/zoo): output shapes, parameter
// counts and forward FLOPs against the same networks in PyTorch/torchvision, per-layer costs that
// follow the parameters, batch norm in training and evaluation mode, initialisation from the
// global generator, input errors, and ResNet-20's loss and every gradient element against
// PyTorch's for the same weights and batch (python3-torch, relative 1e-5).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/script.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "OneTorchThread.h"
#include "RawTensorFile.h"
#include "nodes/training/Model.h"
#include "nodes/training/RunningStatistics.h"
#include "nodes/training/zoo/BasicBlock.h"
#include "nodes/training/zoo/MobileNetV2.h"
#include "nodes/training/zoo/ResNet18.h"
#include "nodes/training/zoo/ResNetCifar.h"
#include "nodes/training/zoo/Vgg16.h"

using namespace gradwire;

namespace {

namespace fs = std::filesystem;

const std::vector<std::int64_t> kCifar = {3, 32, 32};

std::shared_ptr<Model> build(const std::string& kind, const std::vector<std::int64_t>& shape,
                             std::int64_t classes = 10, double width = 1.0) {
  ModelConfig config;
  config.kind = kind;
  config.edit_settings<MobileNetV2Settings>().width = width;
  return make_model(config, shape, classes);
}

std::int64_t parameter_count(torch::nn::Module& module) {
  std::int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

// Forward FLOPs of the CIFAR ResNet with n blocks per stage on 3x32x32 images and 10 classes,
// from the architecture of He et al. section 4.2: a 3x3 stem to 16 channels, then 2n 3x3
// convolutions (each with batch norm) at 32x32 / 16 channels, 16x16 / 32 and 8x8 / 64 (the
// first of a stage reads the previous stage's width), and a 64 -> 10 linear layer.
std::int64_t cifar_resnet_flops(std::int64_t n) {
  std::int64_t macs = 3 * 9 * 16 * 32 * 32;
  std::int64_t normalised = 16 * 32 * 32;
  const std::int64_t sides[] = {32, 16, 8};
  for (int stage = 0; stage < 3; ++stage) {
    const std::int64_t c = 16 << stage;
    const std::int64_t pixels = sides[stage] * sides[stage];
    const std::int64_t first_in = stage == 0 ? 16 : c / 2;
    macs += first_in * 9 * c * pixels + (2 * n - 1) * c * 9 * c * pixels;
    normalised += 2 * n * c * pixels;
  }
  macs += 64 * 10;
  return 2 * macs + 2 * normalised;
}

struct ZooCase {
  std::string kind;
  std::int64_t parameters;  // for 10 classes
  std::int64_t flops;       // forward, one 3x32x32 sample
};

// Parameter counts and FLOPs (2 per multiply-accumulate of convolutions and linear layers, 2
// per element of batch norm) as PyTorch states them for the same networks, counted with
// forward hooks: resnet20/56 as tests/nodes/training/resnet20_reference.py defines them (option
// A shortcuts have no parameters; the often quoted 272,474 and 855,770 are option B's, with
// 1x1 projections); torchvision 0.14's resnet18 with a 3x3 stride-1 stem and no max pool;
// vgg16_bn's features and Linear(512, 10); mobilenet_v2(num_classes=10) with stride 1 in the
// stem and in features.2.
std::vector<ZooCase> zoo_cases() {
  return {{"resnet20", 269'722, cifar_resnet_flops(3)},
          {"resnet56", 853'018, cifar_resnet_flops(9)},
          {"resnet18", 11'173'962, 1'112'074'240},
          {"vgg16", 14'728'266, 626'956'288},
          {"mobilenetv2", 2'236'682, 179'232'768}};
}

class Zoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(Zoo, OutputIsBatchByClasses) {
  const auto model = build(GetParam().kind, kCifar);
  model->train();
  EXPECT_EQ(model->forward(torch::randn({3, 3, 32, 32})).sizes(),
            (std::vector<std::int64_t>{3, 10}));
  model->eval();
  EXPECT_EQ(model->forward(torch::randn({1, 3, 32, 32})).sizes(),
            (std::vector<std::int64_t>{1, 10}));
  // Other channel and class counts.
  const auto gray = build(GetParam().kind, {1, 32, 32}, 7);
  EXPECT_EQ(gray->forward(torch::randn({2, 1, 32, 32})).sizes(),
            (std::vector<std::int64_t>{2, 7}));
}

TEST_P(Zoo, ParameterCountEqualsPyTorchs) {
  const auto model = build(GetParam().kind, kCifar);
  EXPECT_EQ(parameter_count(*model), GetParam().parameters);
}

TEST_P(Zoo, ForwardFlopsEqualPyTorchsAndSumTheLayers) {
  const auto model = build(GetParam().kind, kCifar);
  EXPECT_EQ(model->forward_flops_per_sample(), GetParam().flops);
  std::int64_t sum = 0;
  for (const LayerCost& layer : model->layer_costs()) {
    EXPECT_GT(layer.flops, 0) << layer.name;
    sum += layer.flops;
  }
  EXPECT_EQ(sum, model->forward_flops_per_sample());
}

// Every layer with parameters has a cost, in forward order, named by its module path; its kind
// matches what the parameters are.
TEST_P(Zoo, LayerCostsNameTheLayersWithParametersInForwardOrder) {
  const auto model = build(GetParam().kind, kCifar);
  const auto params = model->named_parameters();
  const auto buffers = model->named_buffers();
  std::vector<std::string> modules;
  for (const auto& p : params) {
    const std::string module = p.key().substr(0, p.key().rfind('.'));
    if (modules.empty() || modules.back() != module) modules.push_back(module);
  }
  std::vector<std::string> costed;
  for (const LayerCost& layer : model->layer_costs()) costed.push_back(layer.name);
  EXPECT_EQ(costed, modules);

  for (const LayerCost& layer : model->layer_costs()) {
    const torch::Tensor* weight = params.find(layer.name + ".weight");
    ASSERT_NE(weight, nullptr) << layer.name;
    if (layer.kind == "conv") {
      EXPECT_EQ(weight->dim(), 4) << layer.name;
    } else if (layer.kind == "batchnorm") {
      EXPECT_EQ(weight->dim(), 1) << layer.name;
      EXPECT_NE(buffers.find(layer.name + ".running_var"), nullptr) << layer.name;
    } else if (layer.kind == "linear") {
      EXPECT_EQ(weight->dim(), 2) << layer.name;
    } else {
      ADD_FAILURE() << layer.name << ": unexpected kind " << layer.kind;
    }
  }
}

TEST_P(Zoo, EvaluationIsPerSampleTrainingNormalisesOverTheBatch) {
  const auto model = build(GetParam().kind, kCifar);
  const torch::Tensor x = torch::randn({4, 3, 32, 32});
  const torch::Tensor other = torch::randn({3, 3, 32, 32}) * 3 + 1;
  const torch::Tensor first = x.slice(0, 0, 1);
  torch::NoGradGuard no_grad;
  model->train();
  const torch::Tensor in_batch = model->forward(x).slice(0, 0, 1);
  const torch::Tensor in_other_batch = model->forward(torch::cat({first, other})).slice(0, 0, 1);
  EXPECT_FALSE(in_batch.allclose(in_other_batch, 1e-3, 1e-4));

  model->eval();
  const torch::Tensor eval_batch = model->forward(x).slice(0, 0, 1);
  const torch::Tensor eval_alone = model->forward(first);
  const torch::Tensor eval_other = model->forward(torch::cat({first, other})).slice(0, 0, 1);
  EXPECT_TRUE(eval_batch.allclose(eval_alone, 1e-4, 1e-5));
  EXPECT_TRUE(eval_batch.allclose(eval_other, 1e-4, 1e-5));
  EXPECT_TRUE(model->forward(x).allclose(model->forward(x)));  // dropout off
}

TEST_P(Zoo, InitialisationComesFromTheGlobalGenerator) {
  torch::manual_seed(5);
  const auto a = build(GetParam().kind, kCifar);
  torch::manual_seed(5);
  const auto b = build(GetParam().kind, kCifar);
  torch::manual_seed(6);
  const auto c = build(GetParam().kind, kCifar);
  const auto pa = a->parameters();
  const auto pb = b->parameters();
  const auto pc = c->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  bool all_equal_to_c = true;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(pa[i].equal(pb[i])) << i;
    all_equal_to_c = all_equal_to_c && pa[i].equal(pc[i]);
  }
  EXPECT_FALSE(all_equal_to_c);
  // Batch norm starts as the identity transform, as in torch.
  const auto params = a->named_parameters();
  for (const LayerCost& layer : a->layer_costs()) {
    if (layer.kind != "batchnorm") continue;
    EXPECT_TRUE(params[layer.name + ".weight"].eq(1).all().item<bool>()) << layer.name;
    EXPECT_TRUE(params[layer.name + ".bias"].eq(0).all().item<bool>()) << layer.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Zoo, ::testing::ValuesIn(zoo_cases()),
                         [](const auto& info) { return info.param.kind; });

TEST(ResNetCifar, Resnet20FlopsByHand) {
  const auto model = build("resnet20", kCifar);
  // The often quoted 40.8M multiply-accumulates of ResNet-20: 40.55M in convolutions.
  const std::int64_t conv_macs = 3 * 9 * 16 * 1024 + 6 * 16 * 9 * 16 * 1024 +
                                 (16 * 9 * 32 + 5 * 32 * 9 * 32) * 256 +
                                 (32 * 9 * 64 + 5 * 64 * 9 * 64) * 64;
  EXPECT_EQ(conv_macs, 40'550'400);
  const std::int64_t bn = 2 * (16 * 1024 * 7 + 32 * 256 * 6 + 64 * 64 * 6);
  EXPECT_EQ(model->forward_flops_per_sample(), 2 * conv_macs + bn + 2 * 64 * 10);
  EXPECT_EQ(model->forward_flops_per_sample(), 81'478'912);
  ASSERT_EQ(model->layer_costs().size(), 1u + 1u + 18u * 2u + 1u);
  EXPECT_EQ(model->layer_costs()[0].name, "conv1");
  EXPECT_EQ(model->layer_costs()[0].flops, 2 * 3 * 9 * 16 * 1024);
  // layer2.0.conv1 reads 16 channels at 32x32 and writes 32 at 16x16.
  const LayerCost& down = model->layer_costs()[2 + 3 * 4];
  EXPECT_EQ(down.name, "layer2.0.conv1");
  EXPECT_EQ(down.flops, 2 * 16 * 9 * 32 * 256);
}

TEST(ResNetCifar, ShortcutsAreZeroPaddedAndParameterFree) {
  const auto model = build("resnet20", kCifar);
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 6),
            (std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias",
                                      "layer1.0.conv1.weight", "layer1.0.bn1.weight",
                                      "layer1.0.bn1.bias"}));
  EXPECT_EQ(names.back(), "fc.bias");
  for (const auto& n : names) EXPECT_EQ(n.find("downsample"), std::string::npos) << n;
  EXPECT_EQ(build("resnet56", kCifar)->layer_costs().size(), 1u + 1u + 54u * 2u + 1u);
}

TEST(BasicBlock, ZeroPaddedShortcutSubsamplesAndCentresTheChannels) {
  BasicBlock block(16, 32, 2, Shortcut::kZeroPad);
  EXPECT_EQ(block.parameters().size(), 6u);  // two convolutions, two batch norms
  // With the second batch norm's scale and shift zero, the block returns ReLU(shortcut).
  auto params = block.named_parameters();
  {
    torch::NoGradGuard no_grad;
    params["bn2.weight"].zero_();
    params["bn2.bias"].zero_();
  }
  const torch::Tensor x = torch::randn({2, 16, 7, 7});
  const torch::Tensor y = block.forward(x);
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 32, 4, 4}));
  using torch::indexing::Slice;
  const torch::Tensor sub = x.index({Slice(), Slice(), Slice(0, 7, 2), Slice(0, 7, 2)}).relu();
  EXPECT_TRUE(y.slice(1, 0, 8).eq(0).all().item<bool>());
  EXPECT_TRUE(y.slice(1, 8, 24).equal(sub));
  EXPECT_TRUE(y.slice(1, 24, 32).eq(0).all().item<bool>());

  EXPECT_THROW(BasicBlock(32, 16, 1, Shortcut::kZeroPad), std::invalid_argument);
  BasicBlock projected(16, 32, 2, Shortcut::kProjection);
  EXPECT_EQ(projected.parameters().size(), 9u);
  EXPECT_EQ(projected.forward(x).sizes(), (std::vector<std::int64_t>{2, 32, 4, 4}));
}

TEST(ResNetCifar, DepthMustBeSixNPlusTwo) {
  const ModelInput input{kCifar, 10, false};
  EXPECT_NO_THROW(ResNetCifar(14, input));
  EXPECT_EQ(parameter_count(*std::make_shared<ResNetCifar>(32, input)), 464'154);
  for (std::int64_t depth : {21, 2, 0, -4, 19}) {
    try {
      ResNetCifar model(depth, input);
      ADD_FAILURE() << "accepted depth " << depth;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("6n + 2"), std::string::npos) << e.what();
    }
  }
}

TEST(ResNet18, ProjectionShortcutsAsTorchvisionNamesThem) {
  const auto model = build("resnet18", kCifar);
  const auto params = model->named_parameters();
  for (const std::string& stage : std::vector<std::string>{"layer2", "layer3", "layer4"}) {
    EXPECT_NE(params.find(stage + ".0.downsample.0.weight"), nullptr) << stage;
    EXPECT_NE(params.find(stage + ".0.downsample.1.bias"), nullptr) << stage;
    EXPECT_EQ(params.find(stage + ".1.downsample.0.weight"), nullptr) << stage;
  }
  EXPECT_EQ(params.find("layer1.0.downsample.0.weight"), nullptr);
  EXPECT_EQ(params["conv1.weight"].sizes(), (std::vector<std::int64_t>{64, 3, 3, 3}));
  // Convolutions kaiming-normal with fan_out as torchvision: layer4.0.conv1 has std
  // sqrt(2 / (512 * 9)).
  const torch::Tensor w = params["layer4.0.conv1.weight"];
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / (512 * 9)), 0.01 * std::sqrt(2.0 / 4608));
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 1e-4);
}

TEST(Vgg16, LargerImagesAreAveragedToOneByOne) {
  const auto model = build("vgg16", {3, 64, 48});
  EXPECT_EQ(model->forward(torch::randn({2, 3, 64, 48})).sizes(),
            (std::vector<std::int64_t>{2, 10}));
  EXPECT_EQ(parameter_count(*model), 14'728'266);
  // The first convolution works at the full resolution.
  EXPECT_EQ(model->layer_costs()[0].name, "features.0");
  EXPECT_EQ(model->layer_costs()[0].flops, 2 * 3 * 9 * 64 * 64 * 48);
  EXPECT_EQ(model->layer_costs().back().name, "classifier");
}

TEST(MobileNetV2, WidthMultiplierAsTorchvision) {
  // torchvision.models.mobilenet_v2(num_classes=10, width_mult=w) parameters; FLOPs with the
  // CIFAR strides, counted with hooks as above.
  EXPECT_EQ(parameter_count(*build("mobilenetv2", kCifar, 10, 0.5)), 700'490);
  EXPECT_EQ(parameter_count(*build("mobilenetv2", kCifar, 10, 1.4)), 4'333'706);
  EXPECT_EQ(parameter_count(*build("mobilenetv2", kCifar, 10, 0.35)), 408'938);
  EXPECT_EQ(build("mobilenetv2", kCifar, 10, 0.5)->forward_flops_per_sample(), 57'774'592);
  EXPECT_EQ(build("mobilenetv2", kCifar, 10, 1.4)->forward_flops_per_sample(), 344'776'704);
}

TEST(MobileNetV2, SmallImagesEndAtFourByFourLargerOnesUseImageNetStrides) {
  const auto cifar = build("mobilenetv2", kCifar);
  const auto last_conv = [](const Model& m) {
    for (const LayerCost& layer : m.layer_costs()) {
      if (layer.name == "features.18.0") return layer.flops;
    }
    return std::int64_t{-1};
  };
  EXPECT_EQ(last_conv(*cifar), 2 * 320 * 1280 * 4 * 4);
  const auto large = build("mobilenetv2", {3, 96, 96});
  EXPECT_EQ(last_conv(*large), 2 * 320 * 1280 * 3 * 3);
  // torchvision's mobilenet_v2 unchanged on 3x96x96.
  EXPECT_EQ(large->forward_flops_per_sample(), 112'497'088);
  EXPECT_EQ(large->forward(torch::randn({2, 3, 96, 96})).sizes(),
            (std::vector<std::int64_t>{2, 10}));
}

void expect_invalid(const std::string& kind, const std::vector<std::int64_t>& shape,
                    std::int64_t classes, const std::string& text, double width = 1.0) {
  try {
    build(kind, shape, classes, width);
    ADD_FAILURE() << kind << " accepted the input";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << kind << ": " << e.what();
  }
}

TEST(Zoo, BadInputsAreInvalidArgument) {
  for (const ZooCase& c : zoo_cases()) {
    expect_invalid(c.kind, {3, 32}, 10, "{C, H, W}");
    expect_invalid(c.kind, {1, 3, 32, 32}, 10, "{C, H, W}");
    expect_invalid(c.kind, {3072}, 10, "{C, H, W}");
    expect_invalid(c.kind, kCifar, 0, "classes");
    expect_invalid(c.kind, kCifar, -3, "classes");
    expect_invalid(c.kind, {0, 32, 32}, 10, "at least 1");
  }
  expect_invalid("resnet20", {3, 3, 32}, 10, "too small");
  expect_invalid("resnet56", {3, 32, 2}, 10, "too small");
  expect_invalid("vgg16", {3, 16, 16}, 10, "too small");
  expect_invalid("vgg16", {3, 32, 31}, 10, "too small");
  expect_invalid("resnet18", {3, 0, 32}, 10, "at least 1");
  expect_invalid("mobilenetv2", {3, 32, 0}, 10, "at least 1");
  expect_invalid("mobilenetv2", kCifar, 10, "width", 0.0);
  expect_invalid("mobilenetv2", kCifar, 10, "width", -1.0);
  expect_invalid("mobilenetv2", kCifar, 10, "width", std::numeric_limits<double>::quiet_NaN());
  expect_invalid("mobilenetv2", kCifar, 10, "width", std::numeric_limits<double>::infinity());
  // The smallest images each model accepts.
  EXPECT_NO_THROW(build("resnet20", {3, 4, 4}));
  EXPECT_NO_THROW(build("vgg16", {3, 32, 32}));
  EXPECT_EQ(build("resnet18", {3, 1, 1})->forward(torch::randn({2, 3, 1, 1})).sizes(),
            (std::vector<std::int64_t>{2, 10}));
}

// --- ResNet-20 against PyTorch -------------------------------------------------------------

const std::string kHere = std::string(GRADWIRE_SOURCE_DIR) + "/tests/nodes/training";

fs::path reference_path() {
  return fs::temp_directory_path() / ("gradwire-zoo-" + std::to_string(::getpid()));
}

class RemoveReference : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(reference_path(), ignored);
  }
};
const auto* const kRemoveReference = ::testing::AddGlobalTestEnvironment(new RemoveReference);

/// The reference files, written once per test program by PyTorch itself.
const fs::path& reference_dir() {
  static const fs::path dir = [] {
    const fs::path d = reference_path();
    fs::create_directories(d);
    const int rc = std::system(
        ("/usr/bin/python3 " + kHere + "/resnet20_reference.py " + d.string() + " > /dev/null")
            .c_str());
    if (rc != 0) {
      ADD_FAILURE() << "resnet20_reference.py failed (exit " << rc
                    << "): it needs Debian's python3-torch, which scripts/install-deps installs";
    }
    return d;
  }();
  return dir;
}

using gradwire::testing::read_raw;

/// Elements of `ours` off `theirs` by more than relative 1e-5, with a floor of 1e-5 of the
/// largest magnitude for elements that are rounding noise around zero.
std::int64_t count_off(const torch::Tensor& ours, const std::vector<float>& theirs) {
  const torch::Tensor flat = ours.reshape({-1}).contiguous();
  EXPECT_EQ(flat.numel(), static_cast<std::int64_t>(theirs.size()));
  if (flat.numel() != static_cast<std::int64_t>(theirs.size())) return -1;
  const float* a = flat.data_ptr<float>();
  const float scale = flat.abs().max().item<float>();
  std::int64_t off = 0;
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    const float tol = 1e-5f * std::max(std::abs(theirs[i]), 1e-2f * scale);
    if (std::abs(a[i] - theirs[i]) > tol) ++off;
  }
  return off;
}

TEST(Resnet20PyTorch, LossAndEveryGradientEqualPyTorchs) {
  const fs::path dir = reference_dir();
  std::ifstream meta_in(dir / "resnet20.json");
  ASSERT_TRUE(meta_in) << "no reference written in " << dir;
  const nlohmann::json meta = nlohmann::json::parse(meta_in);
  const auto shape = meta.at("shape").get<std::vector<std::int64_t>>();
  const std::int64_t batch = meta.at("batch").get<std::int64_t>();
  const std::int64_t classes = meta.at("classes").get<std::int64_t>();

  torch::set_num_threads(1);
  const auto model = build("resnet20", shape, classes);
  EXPECT_EQ(parameter_count(*model), meta.at("parameters").get<std::int64_t>());

  // The same weights and buffers, matched by name: the names must be PyTorch's, in its order.
  torch::jit::Module reference = torch::jit::load((dir / "resnet20.pt").string());
  auto params = model->named_parameters();
  auto buffers = model->named_buffers();
  std::vector<std::string> their_names;
  for (const auto& p : reference.named_parameters()) their_names.push_back(p.name);
  EXPECT_EQ(params.keys(), their_names);
  EXPECT_EQ(params.keys(), meta.at("names").get<std::vector<std::string>>());
  std::vector<std::string> their_buffers;
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : reference.named_parameters()) {
      torch::Tensor* ours = params.find(p.name);
      ASSERT_NE(ours, nullptr) << "PyTorch's " << p.name << " is not in gradwire's resnet20";
      ASSERT_EQ(ours->sizes(), p.value.sizes()) << p.name;
      ours->copy_(p.value);
    }
    for (const auto& b : reference.named_buffers()) {
      their_buffers.push_back(b.name);
      torch::Tensor* ours = buffers.find(b.name);
      ASSERT_NE(ours, nullptr) << "PyTorch's buffer " << b.name << " is not in gradwire's";
      ASSERT_EQ(ours->sizes(), b.value.sizes()) << b.name;
      ours->copy_(b.value);
    }
  }
  std::vector<std::string> our_buffers = buffers.keys();
  std::sort(our_buffers.begin(), our_buffers.end());
  std::sort(their_buffers.begin(), their_buffers.end());
  EXPECT_EQ(our_buffers, their_buffers);

  std::vector<float> inputs = read_raw<float>(dir / "resnet20.inputs.f32");
  std::vector<std::int64_t> labels = read_raw<std::int64_t>(dir / "resnet20.labels.i64");
  std::vector<std::int64_t> batch_shape = {batch};
  batch_shape.insert(batch_shape.end(), shape.begin(), shape.end());
  const torch::Tensor x = torch::from_blob(inputs.data(), batch_shape, torch::kFloat32).clone();
  const torch::Tensor y = torch::from_blob(labels.data(), {batch}, torch::kInt64).clone();

  model->train();
  const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
  loss.backward();
  const double expected_loss = meta.at("loss").get<double>();
  EXPECT_NEAR(loss.item<double>(), expected_loss, 1e-5 * std::abs(expected_loss));

  std::vector<torch::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().reshape({-1}));
  EXPECT_EQ(count_off(torch::cat(grads), read_raw<float>(dir / "resnet20.grads.f32")), 0)
      << "gradient elements of resnet20 off PyTorch's";

  // Evaluation mode after the step reads the running statistics both sides updated.
  model->eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(count_off(model->forward(x), read_raw<float>(dir / "resnet20.eval.f32")), 0)
      << "evaluation logits of resnet20 off PyTorch's";
}

}  // namespace

namespace gradwire {
namespace {

// The statistics a gossip, Leader SGD or async-PS evaluation uses: the workers' mean, with the
// batch counter of the first worker; parameters are not touched.
TEST(RunningStatisticsOfWorkers, EvaluationModelTakesTheirMean) {
  torch::manual_seed(1);
  ModelConfig config;
  config.kind = "resnet20";
  const ModelInput input{{3, 32, 32}, 10, false};
  auto a = make_model(config, input);
  auto b = make_model(config, input);
  auto target = make_model(config, input);
  a->train();
  b->train();
  a->forward(torch::randn({4, 3, 32, 32}));           // two different batches:
  b->forward(torch::randn({4, 3, 32, 32}) * 3 + 1);  // two different sets of statistics
  b->forward(torch::randn({4, 3, 32, 32}));
  const auto weights_before = target->named_parameters()["conv1.weight"].clone();
  load_mean_buffers(*target, {a, nullptr, b});
  const auto ta = a->named_buffers();
  const auto tb = b->named_buffers();
  int checked = 0;
  for (const auto& item : target->named_buffers()) {
    if (item.key().find("num_batches_tracked") != std::string::npos) {
      EXPECT_EQ(item.value().item<std::int64_t>(), 1) << item.key();
      continue;
    }
    EXPECT_TRUE(item.value().allclose((ta[item.key()] + tb[item.key()]) / 2)) << item.key();
    ++checked;
  }
  EXPECT_EQ(checked, 2 * 19);  // running mean and variance of resnet20's 19 batch norms
  EXPECT_TRUE(target->named_parameters()["conv1.weight"].equal(weights_before));
  load_mean_buffers(*target, {});  // no worker built here: nothing to take
}

}  // namespace
}  // namespace gradwire
