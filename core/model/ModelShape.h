#pragma once

namespace tewb {

// Which implementation of MiniGPT trains: plain LibTorch modules (the baseline) or this project's
// Transformer-Engine-style modules.
enum class Backend { Torch, Te };

// The size of a MiniGPT. Defaults are the seed's benchmark.
struct ModelShape {
    int layers = 12;
    int hidden = 768;
    int heads = 12;
    int seq = 96;
    int vocab = 4096;

    friend bool operator==(const ModelShape&, const ModelShape&) = default;
};

}  // namespace tewb
