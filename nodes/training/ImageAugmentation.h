// The standard CIFAR training augmentation (He et al. 2016, section 4.2): each image is padded
// by 4 zero pixels on every side, a random crop of the original size is taken, and it is
// flipped horizontally with probability 1/2. Drawn from the loader's own seeded generator, so a
// run's batches depend only on its seed.
#pragma once

#include <cstdint>
#include <random>

#include <torch/types.h>

namespace gradwire {

class ImageAugmentation {
 public:
  static constexpr std::int64_t kPadding = 4;

  /// `images`: float32 [batch, C, H, W] (normalised; padding is zero, the normalised mean).
  /// Returns a new tensor of the same shape; `rng` advances by 3 draws per image.
  static torch::Tensor crop_and_flip(const torch::Tensor& images, std::mt19937_64& rng);
};

}  // namespace gradwire
