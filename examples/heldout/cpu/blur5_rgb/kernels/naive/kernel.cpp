// blur5_rgb, naive: 5x5 binomial blur of an interleaved H x W x C float image, borders clamped.
// A small image view with an at(y, x, c) accessor; for every output sample the full 5x5
// window is read through clamped coordinates and weighted by the outer product of (1 4 6 4 1).
#include <algorithm>
#include <cstdint>

namespace {

struct ImageView {
  float* data;
  std::int64_t height, width, channels;

  float& at(std::int64_t y, std::int64_t x, std::int64_t c) {
    return data[(y * width + x) * channels + c];
  }
  float at(std::int64_t y, std::int64_t x, std::int64_t c) const {
    return data[(y * width + x) * channels + c];
  }
};

const float kTaps[5] = {1.0f, 4.0f, 6.0f, 4.0f, 1.0f};

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream) {
  (void)params;
  (void)stream;
  const std::int64_t h = axes[0], w = axes[1], ch = axes[2];
  const ImageView src{const_cast<float*>(static_cast<const float*>(inputs[0])), h, w, ch};
  ImageView dst{static_cast<float*>(outputs[0]), h, w, ch};

  auto clamp = [](std::int64_t v, std::int64_t hi) { return std::min(std::max(v, std::int64_t{0}), hi); };

  for (std::int64_t y = 0; y < h; ++y) {
    for (std::int64_t x = 0; x < w; ++x) {
      for (std::int64_t c = 0; c < ch; ++c) {
        float acc = 0.0f;
        for (int dy = -2; dy <= 2; ++dy) {
          for (int dx = -2; dx <= 2; ++dx) {
            const std::int64_t sy = clamp(y + dy, h - 1);
            const std::int64_t sx = clamp(x + dx, w - 1);
            acc += kTaps[dy + 2] * kTaps[dx + 2] * src.at(sy, sx, c);
          }
        }
        dst.at(y, x, c) = acc / 256.0f;
      }
    }
  }
  return 0;
}
