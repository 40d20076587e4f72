// Language modelling: text loading (on small files written here, and on Debian's
// common-licenses), synthetic tokens and images, the LSTM and Transformer models (shapes,
// parameters, FLOPs, tying, causality, errors), and that both language models learn.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "OneTorchThread.h"
#include "nodes/training/Dataset.h"
#include "nodes/training/Loss.h"
#include "nodes/training/Model.h"
#include "nodes/training/ShardLoader.h"
#include "nodes/training/zoo/LstmLanguageModel.h"
#include "nodes/training/zoo/TransformerModel.h"

namespace fs = std::filesystem;
using namespace gradwire;

namespace {

using Shape = std::vector<std::int64_t>;

torch::Tensor ids(const std::vector<std::vector<std::int64_t>>& rows) {
  std::vector<std::int64_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  return torch::tensor(flat, torch::kLong)
      .view({static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows[0].size())});
}

void expect_tensor(const torch::Tensor& actual,
                   const std::vector<std::vector<std::int64_t>>& rows) {
  EXPECT_TRUE(torch::equal(actual, ids(rows))) << actual;
}

/// A fresh directory under the system temp dir, removed with the fixture.
class TextFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gradwire-text-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  /// The DatasetError message load_text throws, or "" when it does not throw one.
  static std::string error_of(const TextConfig& config) {
    try {
      load_text(config);
    } catch (const DatasetError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(TextFiles, WordsGetFrequencyRankedIdsAndShiftedLabels) {
  TextConfig config;
  // 15 tokens: the cat sat <eos> the dog sat <eos> the cat | ran <eos> a cat <eos>.
  config.path = write("corpus.txt", "The cat  sat\n\n   \nthe\tdog sat\r\nthe cat ran\nA CAT");
  config.bptt = 3;
  config.test_fraction = 0.3;  // 10 training tokens, 5 test tokens
  const DatasetSplit split = load_text(config);

  // Training counts: the 3, cat 2, sat 2 (after cat: first appearance breaks the tie), dog 1.
  const std::vector<std::string> vocabulary = {"<unk>", "<eos>", "the", "cat", "sat", "dog"};
  EXPECT_EQ(split.train.vocabulary, vocabulary);
  EXPECT_EQ(split.test.vocabulary, vocabulary);
  EXPECT_EQ(split.train.classes, 6);
  EXPECT_TRUE(split.train.tokens);
  EXPECT_TRUE(split.test.tokens);
  EXPECT_EQ(split.train.sample_shape, (Shape{3}));
  EXPECT_EQ(split.train.inputs.scalar_type(), torch::kLong);
  // Stream: 2 3 4 1 2 5 4 1 2 3 | 0 1 0 3 1 ("ran" and "a" never occur in training: <unk>).
  expect_tensor(split.train.inputs, {{2, 3, 4}, {1, 2, 5}, {4, 1, 2}});
  expect_tensor(split.train.labels, {{3, 4, 1}, {2, 5, 4}, {1, 2, 3}});
  expect_tensor(split.test.inputs, {{0, 1, 0}});
  expect_tensor(split.test.labels, {{1, 0, 3}});

  // A cap of 5 entries drops the rarest word, "dog".
  config.vocab = 5;
  const DatasetSplit capped = load_text(config);
  EXPECT_EQ(capped.train.vocabulary, (std::vector<std::string>{"<unk>", "<eos>", "the", "cat",
                                                                "sat"}));
  expect_tensor(capped.train.inputs, {{2, 3, 4}, {1, 2, 0}, {4, 1, 2}});
  expect_tensor(capped.train.labels, {{3, 4, 1}, {2, 0, 4}, {1, 2, 3}});

  // bptt 1: every token but the last of each part starts a sequence.
  config.bptt = 1;
  const DatasetSplit short_sequences = load_text(config);
  EXPECT_EQ(short_sequences.train.size(), 9);
  EXPECT_EQ(short_sequences.test.size(), 4);
}

TEST_F(TextFiles, CharactersAreCodePoints) {
  TextConfig config;
  config.unit = "char";
  // a, é (2 bytes), € (3), 😀 (4) | a, é, newline.
  config.path = write("chars.txt", "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" "a\xC3\xA9\n");
  config.bptt = 2;
  config.test_fraction = 0.3;  // 4 training tokens, 3 test tokens
  const DatasetSplit split = load_text(config);
  EXPECT_EQ(split.train.vocabulary,
            (std::vector<std::string>{"<unk>", "a", "\xC3\xA9", "\xE2\x82\xAC",
                                      "\xF0\x9F\x98\x80"}));
  EXPECT_EQ(split.train.classes, 5);
  expect_tensor(split.train.inputs, {{1, 2}});
  expect_tensor(split.train.labels, {{2, 3}});
  expect_tensor(split.test.inputs, {{1, 2}});
  expect_tensor(split.test.labels, {{2, 0}});  // the newline never occurs in training

  // Newlines are tokens of their own when they occur in training.
  config.path = write("lines.txt", "ab\nab\nab\nab\n");
  config.bptt = 1;
  config.test_fraction = 0.25;
  const DatasetSplit lines = load_text(config);
  EXPECT_EQ(lines.train.vocabulary, (std::vector<std::string>{"<unk>", "a", "b", "\n"}));
  EXPECT_EQ(lines.train.size(), 8);
}

TEST_F(TextFiles, FolderFilesAreReadInNameOrderOnce) {
  write("folder/b.txt", "y z\n");
  write("folder/a.txt", "x y");  // no final newline: its line still ends
  write("folder/sub/ignored.txt", "w w w w w w\n");
  fs::create_symlink(dir_ / "folder" / "a.txt", dir_ / "folder" / "c.txt");  // read once
  TextConfig config;
  config.path = (dir_ / "folder").string();
  config.bptt = 1;
  config.test_fraction = 0.5;
  // x y <eos> | y z <eos>
  const DatasetSplit split = load_text(config);
  EXPECT_EQ(split.train.vocabulary, (std::vector<std::string>{"<unk>", "<eos>", "x", "y"}));
  expect_tensor(split.train.inputs, {{2}, {3}});
  expect_tensor(split.train.labels, {{3}, {1}});
  expect_tensor(split.test.inputs, {{3}, {0}});
  expect_tensor(split.test.labels, {{0}, {1}});
}

TEST_F(TextFiles, InvalidUtf8NamesTheFileAndOffset) {
  TextConfig config;
  config.bptt = 1;
  const std::vector<std::pair<std::string, std::size_t>> cases = {
      {"ok \xC3\x28 text", 3},          // a lead byte without its continuation
      {"abc\x80", 3},                   // a stray continuation byte
      {"\xC0\xAF", 0},                  // an overlong '/'
      {"xy\xED\xA0\x80", 2},            // a UTF-16 surrogate
      {"\xF4\x90\x80\x80", 0},          // above U+10FFFF
      {"fine\xE2\x82", 4},              // truncated at the end
  };
  for (const auto& [bytes, offset] : cases) {
    config.path = write("bad.txt", bytes);
    const std::string message = error_of(config);
    EXPECT_NE(message.find(config.path), std::string::npos) << message;
    EXPECT_NE(message.find("byte offset " + std::to_string(offset)), std::string::npos)
        << message;
    EXPECT_NE(message.find("UTF-8"), std::string::npos) << message;
  }
}

TEST_F(TextFiles, ErrorsSayWhatIsMissing) {
  TextConfig config;
  config.path = (dir_ / "no-such-file.txt").string();
  std::string message = error_of(config);
  EXPECT_NE(message.find(config.path), std::string::npos) << message;
  EXPECT_NE(message.find("UTF-8 text file"), std::string::npos) << message;
  EXPECT_NE(message.find("folder"), std::string::npos) << message;

  fs::create_directory(dir_ / "empty");
  config.path = (dir_ / "empty").string();
  message = error_of(config);
  EXPECT_NE(message.find(config.path), std::string::npos) << message;

  // 4 tokens (a b c <eos>): 3 for training, 1 for testing; bptt 35 needs 36 in each.
  config.path = write("short.txt", "a b c\n");
  config.test_fraction = 0.25;
  message = error_of(config);
  EXPECT_NE(message.find("4 word tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("36"), std::string::npos) << message;
  config.bptt = 2;  // 3 training tokens suffice, 1 test token does not
  message = error_of(config);
  EXPECT_NE(message.find("1 for testing"), std::string::npos) << message;

  config.bptt = 0;
  EXPECT_THROW(load_text(config), std::invalid_argument);
  config.bptt = 1;
  config.unit = "byte";
  EXPECT_THROW(load_text(config), std::invalid_argument);
  config.unit = "word";
  config.test_fraction = 0;
  EXPECT_THROW(load_text(config), std::invalid_argument);
  config.test_fraction = 0.25;
  config.vocab = 2;  // <unk> and <eos> leave no room for a word
  EXPECT_THROW(load_text(config), std::invalid_argument);
}

TEST(Text, DefaultPathLoads) {
  const TextConfig config;
  if (!fs::is_directory(config.path)) {
    GTEST_SKIP() << config.path << " is absent (it comes with Debian's base-files)";
  }
  const auto start = std::chrono::steady_clock::now();
  const DatasetSplit split = load_text(config);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t unknown_train = split.train.inputs.eq(0).sum().item<std::int64_t>();
  std::cout << config.path << ": " << split.train.size() << " training and " << split.test.size()
            << " test sequences of " << config.bptt << " words, vocabulary "
            << split.train.vocabulary.size() << ", " << unknown_train
            << " <unk> among the training inputs, loaded in " << seconds << " s\n";
  EXPECT_GT(split.train.size(), 100);
  EXPECT_GT(split.test.size(), 10);
  EXPECT_LE(split.train.classes, config.vocab);
  EXPECT_EQ(split.train.classes, static_cast<std::int64_t>(split.train.vocabulary.size()));
  EXPECT_EQ(split.train.vocabulary[0], "<unk>");
  EXPECT_EQ(split.train.vocabulary[1], "<eos>");
  EXPECT_EQ(split.train.sample_shape, (Shape{config.bptt}));
  // Each label row is its input row shifted by one, continuing into the next sequence.
  const torch::Tensor flat_inputs = split.train.inputs.flatten();
  const torch::Tensor flat_labels = split.train.labels.flatten();
  EXPECT_TRUE(torch::equal(flat_inputs.narrow(0, 1, flat_inputs.size(0) - 1),
                           flat_labels.narrow(0, 0, flat_labels.size(0) - 1)));
  EXPECT_LT(split.train.inputs.max().item<std::int64_t>(), split.train.classes);

  TextConfig chars = config;
  chars.unit = "char";
  const DatasetSplit char_split = load_text(chars);
  std::cout << "  as characters: " << char_split.train.size() << " training and "
            << char_split.test.size() << " test sequences, vocabulary "
            << char_split.train.vocabulary.size() << "\n";
  EXPECT_GT(char_split.train.size(), split.train.size());
}

TEST(Synthetic, TokensAreShiftedSequencesOfAPredictableChain) {
  SyntheticConfig config;
  config.vocab = 50;
  config.seq_len = 10;
  config.train_samples = 300;
  config.test_samples = 7;
  const DatasetSplit s = make_synthetic(config, 3);
  EXPECT_EQ(s.train.inputs.sizes(), (Shape{300, 10}));
  EXPECT_EQ(s.train.labels.sizes(), (Shape{300, 10}));
  EXPECT_EQ(s.test.inputs.sizes(), (Shape{7, 10}));
  EXPECT_EQ(s.train.inputs.scalar_type(), torch::kLong);
  EXPECT_TRUE(s.train.tokens);
  EXPECT_EQ(s.train.classes, 50);
  EXPECT_EQ(s.train.sample_shape, (Shape{10}));
  ASSERT_EQ(s.train.vocabulary.size(), 50U);
  EXPECT_EQ(s.train.vocabulary[0], "t0");
  EXPECT_EQ(s.train.vocabulary[49], "t49");
  EXPECT_GE(s.train.inputs.min().item<std::int64_t>(), 0);
  EXPECT_LT(s.train.inputs.max().item<std::int64_t>(), 50);
  const torch::Tensor inputs = s.train.inputs.flatten();
  const torch::Tensor labels = s.train.labels.flatten();
  EXPECT_TRUE(torch::equal(inputs.narrow(0, 1, inputs.size(0) - 1),
                           labels.narrow(0, 0, labels.size(0) - 1)));

  // Most transitions go to one of each token's few likely successors.
  const torch::Tensor bigrams =
      torch::bincount(inputs * 50 + labels, {}, 50 * 50).view({50, 50}).to(torch::kDouble);
  const double top4 = std::get<0>(bigrams.topk(4, 1)).sum().item<double>();
  EXPECT_GT(top4 / static_cast<double>(inputs.size(0)), 0.8);
  // ... and every token occurs.
  EXPECT_EQ(torch::bincount(inputs, {}, 50).gt(0).sum().item<std::int64_t>(), 50);

  const DatasetSplit again = make_synthetic(config, 3);
  EXPECT_TRUE(torch::equal(s.train.inputs, again.train.inputs));
  EXPECT_TRUE(torch::equal(s.test.labels, again.test.labels));
  EXPECT_FALSE(torch::equal(s.train.inputs, make_synthetic(config, 4).train.inputs));

  config.test_samples = 0;
  EXPECT_EQ(make_synthetic(config, 3).test.inputs.sizes(), (Shape{0, 10}));
}

TEST(Synthetic, ImagesAreTheMixtureReshaped) {
  SyntheticConfig config;
  config.classes = 4;
  config.shape = {3, 8, 6};
  config.train_samples = 40;
  config.test_samples = 9;
  const DatasetSplit images = make_synthetic(config, 11);
  EXPECT_EQ(images.train.inputs.sizes(), (Shape{40, 3, 8, 6}));
  EXPECT_EQ(images.test.inputs.sizes(), (Shape{9, 3, 8, 6}));
  EXPECT_EQ(images.train.sample_shape, (Shape{3, 8, 6}));
  EXPECT_EQ(images.train.classes, 4);
  EXPECT_FALSE(images.train.tokens);

  SyntheticConfig flat = config;
  flat.shape = {};
  flat.features = 3 * 8 * 6;
  const DatasetSplit features = make_synthetic(flat, 11);
  EXPECT_TRUE(torch::equal(images.train.inputs.flatten(1), features.train.inputs));
  EXPECT_TRUE(torch::equal(images.test.labels, features.test.labels));
  EXPECT_TRUE(torch::equal(images.train.inputs, make_synthetic(config, 11).train.inputs));
}

TEST(Synthetic, RejectsBadTokenAndShapeSettings) {
  SyntheticConfig config;
  config.vocab = 1;
  EXPECT_THROW(make_synthetic(config, 1), std::invalid_argument);
  config.vocab = -5;
  EXPECT_THROW(make_synthetic(config, 1), std::invalid_argument);
  config.vocab = 10;
  config.seq_len = 0;
  EXPECT_THROW(make_synthetic(config, 1), std::invalid_argument);
  SyntheticConfig images;
  images.shape = {3, 0, 4};
  EXPECT_THROW(make_synthetic(images, 1), std::invalid_argument);
}

std::int64_t parameter_count(torch::nn::Module& module) {
  std::int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

std::vector<std::pair<std::string, std::int64_t>> costs(const Model& model,
                                                         std::vector<std::string>* kinds) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const LayerCost& c : model.layer_costs()) {
    out.emplace_back(c.name, c.flops);
    if (kinds) kinds->push_back(c.kind);
  }
  return out;
}

using Costs = std::vector<std::pair<std::string, std::int64_t>>;

ModelConfig lstm_config(std::int64_t embedding, std::int64_t hidden, std::int64_t layers) {
  ModelConfig config;
  config.kind = "lstm_lm";
  config.edit_settings<LstmLanguageModelSettings>().embedding = embedding;
  config.edit_settings<LstmLanguageModelSettings>().hidden_size = hidden;
  config.edit_settings<LstmLanguageModelSettings>().layers = layers;
  return config;
}

TEST(LstmLanguageModel, ShapesParametersAndFlops) {
  const std::int64_t v = 30, e = 16, h = 24, t = 7;
  const auto model = make_model(lstm_config(e, h, 2), ModelInput{{t}, v, true});
  ASSERT_NE(std::dynamic_pointer_cast<LstmLanguageModel>(model), nullptr);
  const torch::Tensor x = torch::randint(v, {4, t}, torch::kLong);
  EXPECT_EQ(model->forward(x).sizes(), (Shape{4, t, v}));
  // Embedding; per LSTM layer W_ih [4h, in], W_hh [4h, h] and two biases of 4h; decoder.
  EXPECT_EQ(parameter_count(*model), v * e + (4 * h * e + 4 * h * h + 8 * h) +
                                         (4 * h * h + 4 * h * h + 8 * h) + (h * v + v));
  std::vector<std::string> kinds;
  EXPECT_EQ(costs(*model, &kinds), (Costs{{"embedding", 0},
                                          {"lstm.l0", 2 * t * 4 * h * (e + h)},
                                          {"lstm.l1", 2 * t * 4 * h * (h + h)},
                                          {"decoder", 2 * t * h * v}}));
  EXPECT_EQ(kinds, (std::vector<std::string>{"embedding", "lstm", "lstm", "linear"}));
  EXPECT_EQ(model->forward_flops_per_sample(),
            2 * t * 4 * h * (e + h) + 2 * t * 4 * h * 2 * h + 2 * t * h * v);

  // Dropout (0.5 by default) only while training; zero state, so eval is deterministic.
  model->eval();
  EXPECT_TRUE(torch::equal(model->forward(x), model->forward(x)));
  model->train();
  EXPECT_FALSE(torch::equal(model->forward(x), model->forward(x)));
}

TEST(LstmLanguageModel, TiedWeightsAreOneParameter) {
  const std::int64_t v = 30, d = 16, t = 5;
  ModelConfig config = lstm_config(d, d, 1);
  config.edit_settings<LstmLanguageModelSettings>().tied = true;
  config.edit_settings<LstmLanguageModelSettings>().dropout = 0;
  const auto model = make_model(config, ModelInput{{t}, v, true});
  EXPECT_EQ(parameter_count(*model), v * d + (4 * d * d + 4 * d * d + 8 * d) + v);
  const auto named = model->named_parameters();
  EXPECT_TRUE(named.contains("embedding.weight"));
  EXPECT_TRUE(named.contains("decoder.bias"));
  EXPECT_FALSE(named.contains("decoder.weight"));
  for (std::size_t i = 0; i < named.size(); ++i) {
    for (std::size_t j = i + 1; j < named.size(); ++j) {
      EXPECT_NE(named[i].value().data_ptr(), named[j].value().data_ptr())
          << named[i].key() << " and " << named[j].key();
    }
  }
  // The decoder reads the embedding's matrix: with it zeroed the logits are the zero bias.
  {
    torch::NoGradGuard no_grad;
    named["embedding.weight"].zero_();
  }
  EXPECT_EQ(model->forward(torch::randint(v, {2, t}, torch::kLong)).abs().max().item<float>(), 0);
}

TEST(LstmLanguageModel, Errors) {
  ModelConfig tied = lstm_config(16, 24, 2);
  tied.edit_settings<LstmLanguageModelSettings>().tied = true;
  EXPECT_THROW(make_model(tied, ModelInput{{5}, 30, true}), std::invalid_argument);
  EXPECT_THROW(make_model(lstm_config(0, 24, 2), ModelInput{{5}, 30, true}),
               std::invalid_argument);
  EXPECT_THROW(make_model(lstm_config(16, 0, 2), ModelInput{{5}, 30, true}),
               std::invalid_argument);
  EXPECT_THROW(make_model(lstm_config(16, 24, 0), ModelInput{{5}, 30, true}),
               std::invalid_argument);
  ModelConfig certain_dropout = lstm_config(16, 24, 2);
  certain_dropout.edit_settings<LstmLanguageModelSettings>().dropout = 1;
  EXPECT_THROW(make_model(certain_dropout, ModelInput{{5}, 30, true}), std::invalid_argument);
  EXPECT_THROW(make_model(lstm_config(16, 24, 2), ModelInput{{1, 28, 28}, 10, false}),
               std::invalid_argument);
}

ModelConfig transformer_config(std::int64_t d, std::int64_t heads, std::int64_t ff,
                               std::int64_t layers) {
  ModelConfig config;
  config.kind = "transformer";
  config.edit_settings<TransformerSettings>().d_model = d;
  config.edit_settings<TransformerSettings>().heads = heads;
  config.edit_settings<TransformerSettings>().ff = ff;
  config.edit_settings<TransformerSettings>().layers = layers;
  return config;
}

std::int64_t encoder_layer_parameters(std::int64_t d, std::int64_t ff) {
  return 2 * 2 * d                       // two LayerNorms
         + (3 * d * d + 3 * d)           // packed Q, K, V projection
         + (d * d + d)                   // output projection
         + (d * ff + ff) + (ff * d + d);  // feed-forward
}

TEST(TransformerModel, LanguageModelShapesParametersAndFlops) {
  const std::int64_t v = 30, d = 16, ff = 40, t = 7;
  const auto model = make_model(transformer_config(d, 4, ff, 2), ModelInput{{t}, v, true});
  ASSERT_NE(std::dynamic_pointer_cast<TransformerModel>(model), nullptr);
  EXPECT_EQ(model->forward(torch::randint(v, {3, t}, torch::kLong)).sizes(), (Shape{3, t, v}));
  // Shorter sequences use the first positions.
  EXPECT_EQ(model->forward(torch::randint(v, {3, 4}, torch::kLong)).sizes(), (Shape{3, 4, v}));
  EXPECT_EQ(parameter_count(*model),
            v * d + t * d + 2 * encoder_layer_parameters(d, ff) + 2 * d + (d * v + v));
  const std::int64_t attention = 2 * t * 4 * d * d + 2 * 2 * t * t * d;
  const std::int64_t feed_forward = 2 * 2 * t * d * ff;
  std::vector<std::string> kinds;
  EXPECT_EQ(costs(*model, &kinds), (Costs{{"token_embedding", 0},
                                          {"layers.0.attention", attention},
                                          {"layers.0.feed_forward", feed_forward},
                                          {"layers.1.attention", attention},
                                          {"layers.1.feed_forward", feed_forward},
                                          {"decoder", 2 * t * d * v}}));
  EXPECT_EQ(kinds, (std::vector<std::string>{"embedding", "attention", "linear", "attention",
                                             "linear", "linear"}));
}

TEST(TransformerModel, LanguageModelIsCausal) {
  const std::int64_t v = 30, t = 9;
  const auto model = make_model(transformer_config(16, 2, 32, 2), ModelInput{{t}, v, true});
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randint(v, {2, t}, torch::kLong);
  const torch::Tensor base = model->forward(x);
  for (std::int64_t changed = 0; changed < t; ++changed) {
    torch::Tensor y = x.clone();
    y.select(1, changed).add_(1).remainder_(v);
    const torch::Tensor out = model->forward(y);
    if (changed > 0) {
      EXPECT_TRUE(torch::allclose(out.narrow(1, 0, changed), base.narrow(1, 0, changed), 1e-6,
                                  1e-6))
          << "position " << changed << " leaks into earlier positions";
    }
    // ... while the changed position and those after it do see the change.
    EXPECT_FALSE(torch::allclose(out.narrow(1, changed, t - changed),
                                 base.narrow(1, changed, t - changed)));
  }
}

TEST(TransformerModel, ImageClassifierShapesParametersAndFlops) {
  const std::int64_t c = 3, height = 8, width = 12, p = 4, d = 16, ff = 24, classes = 5;
  ModelConfig config = transformer_config(d, 4, ff, 1);
  config.edit_settings<TransformerSettings>().patch = p;
  const auto model = make_model(config, ModelInput{{c, height, width}, classes, false});
  EXPECT_EQ(model->forward(torch::randn({2, c, height, width})).sizes(), (Shape{2, classes}));
  const std::int64_t patches = (height / p) * (width / p);  // 6
  const std::int64_t length = patches + 1;                   // and the class token
  EXPECT_EQ(parameter_count(*model), (d * c * p * p + d) + d + length * d +
                                         encoder_layer_parameters(d, ff) + 2 * d +
                                         (d * classes + classes));
  EXPECT_EQ(costs(*model, nullptr),
            (Costs{{"patch_embedding", 2 * patches * d * c * p * p},
                   {"layers.0.attention", 2 * length * 4 * d * d + 2 * 2 * length * length * d},
                   {"layers.0.feed_forward", 2 * 2 * length * d * ff},
                   {"head", 2 * d * classes}}));
  EXPECT_EQ(model->layer_costs()[0].kind, "conv");
}

TEST(TransformerModel, Errors) {
  const ModelInput tokens{{8}, 20, true};
  EXPECT_THROW(make_model(transformer_config(16, 3, 32, 1), tokens), std::invalid_argument);
  EXPECT_THROW(make_model(transformer_config(0, 1, 32, 1), tokens), std::invalid_argument);
  EXPECT_THROW(make_model(transformer_config(16, 0, 32, 1), tokens), std::invalid_argument);
  EXPECT_THROW(make_model(transformer_config(16, 4, 0, 1), tokens), std::invalid_argument);
  EXPECT_THROW(make_model(transformer_config(16, 4, 32, 0), tokens), std::invalid_argument);
  ModelConfig patchy = transformer_config(16, 4, 32, 1);
  patchy.edit_settings<TransformerSettings>().patch = 4;
  EXPECT_THROW(make_model(patchy, ModelInput{{3, 8, 10}, 10, false}), std::invalid_argument);
  patchy.edit_settings<TransformerSettings>().patch = 0;
  EXPECT_THROW(make_model(patchy, ModelInput{{3, 8, 8}, 10, false}), std::invalid_argument);
  EXPECT_THROW(make_model(transformer_config(16, 4, 32, 1), ModelInput{{32}, 10, false}),
               std::invalid_argument);
  try {
    make_model(transformer_config(16, 3, 32, 1), tokens);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("divide"), std::string::npos) << e.what();
  }
}

std::vector<std::int64_t> all_indices(std::int64_t n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  std::iota(out.begin(), out.end(), std::int64_t{0});
  return out;
}

double perplexity(Model& model, const Dataset& data) {
  torch::NoGradGuard no_grad;
  model.eval();
  const double loss =
      gradwire::softmax_cross_entropy(model.forward(data.inputs), data.labels).item<double>();
  model.train();
  return std::exp(loss);
}

/// Trains `config` with Adam on synthetic tokens over 50 ids; returns the test perplexity
/// before and after.
std::pair<double, double> train_language_model(const ModelConfig& config, double learning_rate,
                                               int steps) {
  SyntheticConfig data_config;
  data_config.vocab = 50;
  data_config.seq_len = 20;
  data_config.train_samples = 500;
  data_config.test_samples = 50;
  const DatasetSplit data = make_synthetic(data_config, 7);
  torch::manual_seed(7);
  const auto model = make_model(config, ModelInput{data.train.sample_shape, data.train.classes,
                                                   true});
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(learning_rate));
  ShardLoader loader(data.train, all_indices(data.train.size()), 32, 7);
  const double initial = perplexity(*model, data.test);
  for (int step = 0; step < steps; ++step) {
    const auto [inputs, labels] = loader.next();
    optimizer.zero_grad();
    gradwire::softmax_cross_entropy(model->forward(inputs), labels).backward();
    optimizer.step();
  }
  return {initial, perplexity(*model, data.test)};
}

TEST(LanguageModels, LstmLearnsSyntheticText) {
  ModelConfig config = lstm_config(64, 64, 2);
  config.edit_settings<LstmLanguageModelSettings>().dropout = 0.1;
  const auto [initial, final_perplexity] = train_language_model(config, 3e-3, 150);
  std::cout << "lstm_lm test perplexity " << initial << " -> " << final_perplexity << "\n";
  EXPECT_GT(initial, 40);  // about the vocabulary size before training
  EXPECT_LT(final_perplexity, initial / 2);
}

TEST(LanguageModels, TransformerLearnsSyntheticText) {
  const auto [initial, final_perplexity] =
      train_language_model(transformer_config(64, 4, 128, 2), 1e-3, 150);
  std::cout << "transformer test perplexity " << initial << " -> " << final_perplexity << "\n";
  EXPECT_GT(initial, 40);
  EXPECT_LT(final_perplexity, initial / 2);
}

}  // namespace
