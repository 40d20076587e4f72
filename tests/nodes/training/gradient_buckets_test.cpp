// Gradient buckets follow PyTorch DDP's rule (reverse parameter order, caps in bytes, a smaller
// first bucket), checked against python3-torch's own assignment; and the backward timeline
// releases them in order.
#include <cstdio>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "OneTorchThread.h"
#include "nodes/training/BackwardTimeline.h"
#include "nodes/training/GradientBuckets.h"
#include "nodes/training/Model.h"

namespace gradwire {
namespace {

const std::string kHere = std::string(GRADWIRE_SOURCE_DIR) + "/tests/nodes/training";

std::vector<std::int64_t> numels(const Model& m) {
  std::vector<std::int64_t> out;
  for (const auto& p : m.parameters()) out.push_back(p.numel());
  return out;
}

std::shared_ptr<Model> model(const std::string& kind) {
  ModelConfig c;
  c.kind = kind;
  if (kind == "lstm_lm") return make_model(c, ModelInput{{35}, 10000, true});
  return make_model(c, ModelInput{{3, 32, 32}, 10, false});
}

/// DDP's assignment from python3-torch, or empty (with the reason) when it cannot run.
std::vector<std::vector<int>> ddp_assignment(const std::vector<std::int64_t>& sizes,
                                             const BucketCaps& caps, std::string& why) {
  std::string cmd = "/usr/bin/python3 " + kHere + "/ddp_buckets.py " +
                    std::to_string(caps.first_bytes) + " " + std::to_string(caps.bytes);
  for (auto n : sizes) cmd += " " + std::to_string(n);
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (::pclose(p) != 0) {
    why = out;
    return {};
  }
  return nlohmann::json::parse(out).get<std::vector<std::vector<int>>>();
}

TEST(GradientBuckets, EqualPyTorchDdpsAssignment) {
  const std::vector<BucketCaps> caps = {
      BucketCaps{},                                   // DDP's defaults: 1 MiB, 25 MiB
      BucketCaps{64 << 10, 256 << 10},                // small caps: many buckets
      BucketCaps{std::int64_t{4} << 20, std::int64_t{4} << 20}};  // no smaller first bucket
  for (const std::string kind : {"resnet20", "resnet18", "vgg16", "lstm_lm"}) {
    const auto sizes = numels(*model(kind));
    for (const auto& c : caps) {
      std::string why;
      const auto theirs = ddp_assignment(sizes, c, why);
      if (theirs.empty()) {
        GTEST_SKIP() << "python3-torch (Debian's, from scripts/install-deps) could not compute "
                        "DDP's assignment: " << why;
      }
      const auto ours = plan_buckets(sizes, c);
      ASSERT_EQ(ours.size(), theirs.size()) << kind << " caps " << c.first_bytes << "/" << c.bytes;
      for (std::size_t b = 0; b < ours.size(); ++b) {
        std::vector<int> indices;
        for (int p = ours[b].last_parameter; p >= ours[b].first_parameter; --p) indices.push_back(p);
        EXPECT_EQ(indices, theirs[b]) << kind << " bucket " << b;
      }
    }
  }
}

TEST(GradientBuckets, CoverTheFlatGradientContiguouslyFromItsEnd) {
  const std::vector<std::int64_t> sizes = {300000, 10, 5000, 262144, 262144, 100, 7000000, 3};
  const auto plan = plan_buckets(sizes, BucketCaps{});
  std::int64_t end = 0;
  for (auto n : sizes) end += n;
  for (const auto& b : plan) {
    EXPECT_EQ(b.offset + b.numel, end);  // bucket b ends where bucket b - 1 began
    end = b.offset;
  }
  EXPECT_EQ(end, 0);
  // The first bucket closes at the parameter that crosses 1 MiB: 3 + 7M elements.
  EXPECT_EQ(plan[0].first_parameter, 6);
  EXPECT_EQ(plan[0].last_parameter, 7);
  EXPECT_EQ(single_bucket(sizes).size(), 1u);
  EXPECT_THROW(plan_buckets(sizes, BucketCaps{0, 1}), std::invalid_argument);
}

TEST(BackwardTimeline, LayersFinishInReverseOrderInProportionToTheirFlops) {
  for (const std::string kind : {"resnet20", "vgg16", "lstm_lm"}) {
    const auto m = model(kind);
    EXPECT_EQ(gradient_ready_rule(*m), "layer FLOPs") << kind << ": a parameter has no costed layer";
    const auto f = gradient_ready_fractions(*m);
    ASSERT_EQ(f.size(), numels(*m).size());
    EXPECT_DOUBLE_EQ(f.front(), 1.0);
    for (std::size_t i = 1; i < f.size(); ++i) {
      EXPECT_LE(f[i], f[i - 1]) << kind << " parameter " << i;
      EXPECT_GT(f[i], 1.0 / 3) << kind << " parameter " << i;  // after the forward pass
    }
  }
  // The classifier of resnet20 is a tiny share of its FLOPs: its gradient is ready just after
  // the forward third.
  const auto r = gradient_ready_fractions(*model("resnet20"));
  EXPECT_LT(r.back(), 1.0 / 3 + 0.01);
}

}  // namespace
}  // namespace gradwire
