#include "tewb_kernels/gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/fail.h"
#include "common/gelu_math.h"
#include "common/host_numbers.h"
#include "common/uninstrumented.h"
#include "gemm/observed_library_work.h"
#include "mx/mx_math.h"
#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/mx.h"

namespace tewb::kernels::host {

namespace {

constexpr const char* kCall = "tewb::kernels::host::gemm";
constexpr std::size_t kLanes = 8;          // independent partial sums per dot product
constexpr std::size_t kRowsPerChunk = 32;  // rows of d per unit of work (and per partial bias-gradient sum)
constexpr std::size_t kColumnBlock = 64;   // rows of b kept in cache while a chunk's rows pass over them
constexpr std::size_t kWorkPerThread = std::size_t{1} << 22;  // multiply-adds below which another thread does not pay

using detail::gelu;
using detail::gelu_derivative;

Fp8Type fp8_type(DType t) {
    return t == DType::Float8E5M2 ? Fp8Type::E5M2 : Fp8Type::E4M3;
}

// Float32 or bfloat16 as the host number helpers name them.
DType wide_dtype(DType t) {
    return t == DType::Float32 ? DType::Float32 : DType::BFloat16;
}

std::size_t round_up(std::size_t x, std::size_t to) {
    return (x + to - 1) / to * to;
}

// The operand's value at (row, column) of its logical [rows, k] shape (stored [k, rows] when `transposed`), scale
// included.
float element(const Tensor& op, bool transposed, std::size_t rows, std::size_t k, std::size_t row, std::size_t column) {
    const std::size_t index = transposed ? column * rows + row : row * k + column;
    const auto* scale_bytes = reinterpret_cast<const std::uint8_t*>(op.scale_inv);
    if (op.dtype == DType::Float4E2M1x2) {  // NVFP4: the value times its E4M3 block scale (the tensor scales are alpha)
        const std::uint8_t pair = static_cast<const std::uint8_t*>(op.data)[index / 2];
        const float value = detail::mx::e2m1_value(static_cast<std::uint8_t>(index % 2 == 0 ? pair & 15u : pair >> 4));
        const std::size_t at = mx_scale_offset(row, column / kNvfp4BlockSize, mx_scale_cols(k, kNvfp4BlockSize));
        return value * detail::fp8_to_float(scale_bytes[at], Fp8Type::E4M3);
    }
    if (!is_fp8(op.dtype)) return detail::load(op.data, wide_dtype(op.dtype), index);
    const float value = detail::fp8_to_float(static_cast<const std::uint8_t*>(op.data)[index], fp8_type(op.dtype));
    switch (op.scale_mode) {
        case ScaleMode::Tensor: return value * op.scale_inv[0];
        case ScaleMode::Block1x128: return value * op.scale_inv[column / 128 * round_up(rows, 4) + row];
        case ScaleMode::Block128x128: return value * op.scale_inv[row / 128 * round_up(k / 128, 4) + column / 128];
        case ScaleMode::Mxfp8Block32:
            return value * detail::mx::e8m0_value(scale_bytes[mx_scale_offset(row, column / kMxfp8BlockSize, mx_scale_cols(k, kMxfp8BlockSize))]);
        case ScaleMode::Nvfp4Block16: break;  // E2M1x2 data only: above
    }
    return value;
}

// The operand decoded to float32 as [rows, k], k contiguous: the layout the dot products stream over.
std::vector<float> k_contiguous(const Tensor& op, bool transposed, std::size_t rows, std::size_t k) {
    std::vector<float> out(rows * k);
    if (transposed) {  // read the source in its own order
        for (std::size_t column = 0; column < k; ++column) {
            for (std::size_t row = 0; row < rows; ++row) out[row * k + column] = element(op, true, rows, k, row, column);
        }
    } else {
        for (std::size_t row = 0; row < rows; ++row) {
            for (std::size_t column = 0; column < k; ++column) out[row * k + column] = element(op, false, rows, k, row, column);
        }
    }
    return out;
}

float combine(const float (&part)[kLanes]) {
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// x·y_r for R consecutive rows y_r of length k (x read once for all of them). Each row's sum runs in kLanes
// interleaved partial sums, combined in a fixed order, then the tail: the value for one pair of rows does not
// depend on R, so neither on how the columns are grouped. Uninstrumented: x and the R rows lie in HostGemm's
// own a_ and b_, whose sizes its constructor checks.
template <int R>
TEWB_UNINSTRUMENTED void dot_rows(const float* x, const float* y, std::size_t k, float* out) {
    float part[R][kLanes] = {};
    const std::size_t whole = k / kLanes * kLanes;
    for (std::size_t i = 0; i < whole; i += kLanes) {
        for (int r = 0; r < R; ++r) {
            const float* row = y + static_cast<std::size_t>(r) * k + i;
            for (std::size_t lane = 0; lane < kLanes; ++lane) part[r][lane] += x[i + lane] * row[lane];
        }
    }
    for (int r = 0; r < R; ++r) {
        float tail = 0.0f;
        for (std::size_t i = whole; i < k; ++i) tail += x[i] * y[static_cast<std::size_t>(r) * k + i];
        out[r] = combine(part[r]) + tail;
    }
}

// Σ x over k, in the dot products' order (uninstrumented as dot_rows).
TEWB_UNINSTRUMENTED float row_sum(const float* x, std::size_t k) {
    float part[kLanes] = {};
    const std::size_t whole = k / kLanes * kLanes;
    for (std::size_t i = 0; i < whole; i += kLanes) {
        for (std::size_t lane = 0; lane < kLanes; ++lane) part[lane] += x[i + lane];
    }
    float tail = 0.0f;
    for (std::size_t i = whole; i < k; ++i) tail += x[i];
    return combine(part) + tail;
}

class HostGemm {
public:
    explicit HostGemm(const GemmCall& g)
        : g_(g),
          m_(g.m()),
          n_(g.n()),
          k_(g.k()),
          epilogue_(g.options.epilogue),
          a_(k_contiguous(g.a, g.options.a_transposed, m_, k_)),
          b_(k_contiguous(g.b, g.options.b_transposed, n_, k_)),
          side_(is_fp8(g.d.dtype) ? DType::BFloat16 : g.d.dtype),
          aux_ld_(g.epilogue.aux.stride()),
          chunks_((m_ + kRowsPerChunk - 1) / kRowsPerChunk) {
        if (epilogue_ == Epilogue::Bias || epilogue_ == Epilogue::GeluAuxBias) {
            bias_.resize(n_);
            for (std::size_t j = 0; j < n_; ++j)
                bias_[j] = detail::load(g.epilogue.bias.data, wide_dtype(g.epilogue.bias.dtype), j);
        }
        if (a_.size() != m_ * k_ || b_.size() != n_ * k_)
            detail::fail(kCall, "internal: the k-contiguous copies have the wrong size");
        if (epilogue_ == Epilogue::DGeluBGrad) column_sums_.assign(chunks_ * n_, 0.0f);
        if (is_fp8(g.d.dtype)) d_scale_ = g.d.scale[0];
        if (g.options.alpha != nullptr) alpha_ = g.options.alpha[0];
    }

    void run() {
        const std::size_t work = m_ * n_ * k_;
        const std::size_t hardware = std::max(1u, std::thread::hardware_concurrency());
        const std::size_t threads = std::min({hardware, chunks_, std::max<std::size_t>(1, work / kWorkPerThread)});
        if (threads <= 1) {
            run_chunks(0, chunks_);
        } else {
            std::vector<std::thread> pool;
            pool.reserve(threads);
            for (std::size_t t = 0; t < threads; ++t) {
                pool.emplace_back([this, t, threads] { run_chunks(chunks_ * t / threads, chunks_ * (t + 1) / threads); });
            }
            for (std::thread& thread : pool) thread.join();
        }
        finish();
    }

private:
    void run_chunks(std::size_t first, std::size_t last) {
        std::uint32_t amax_bits = 0;
        for (std::size_t chunk = first; chunk < last; ++chunk) {
            const std::size_t row_begin = chunk * kRowsPerChunk;
            const std::size_t row_end = std::min(m_, row_begin + kRowsPerChunk);
            for (std::size_t block = 0; block < n_; block += kColumnBlock) {
                const std::size_t block_end = std::min(n_, block + kColumnBlock);
                for (std::size_t i = row_begin; i < row_end; ++i) {
                    const float* x = a_.data() + i * k_;
                    std::size_t j = block;
                    float sums[4];
                    for (; j + 4 <= block_end; j += 4) {
                        dot_rows<4>(x, b_.data() + j * k_, k_, sums);
                        for (std::size_t r = 0; r < 4; ++r) amax_bits = std::max(amax_bits, write(chunk, i, j + r, sums[r]));
                    }
                    for (; j < block_end; ++j) {
                        dot_rows<1>(x, b_.data() + j * k_, k_, sums);
                        amax_bits = std::max(amax_bits, write(chunk, i, j, sums[0]));
                    }
                }
            }
            if (epilogue_ == Epilogue::BGradB) {
                for (std::size_t i = row_begin; i < row_end; ++i) {
                    detail::store(g_.epilogue.bias_grad.data, wide_dtype(side_), i, row_sum(a_.data() + i * k_, k_));
                }
            }
        }
        std::uint32_t seen = amax_bits_.load(std::memory_order_relaxed);
        while (amax_bits > seen && !amax_bits_.compare_exchange_weak(seen, amax_bits, std::memory_order_relaxed)) {
        }
    }

    // d[i, j] from the product: the epilogue, the output's type; returns |value|'s bits for the FP8 amax.
    std::uint32_t write(std::size_t chunk, std::size_t i, std::size_t j, float sum) {
        const float product = g_.options.alpha != nullptr ? sum * alpha_ : sum;  // cuBLASLt's alpha, before the epilogue
        float value = product;
        switch (epilogue_) {
            case Epilogue::None:
            case Epilogue::BGradB: break;
            case Epilogue::Bias: value = product + bias_[j]; break;
            case Epilogue::GeluAuxBias: {
                const float pre = product + bias_[j];
                detail::store(g_.epilogue.aux.data, wide_dtype(side_), i * aux_ld_ + j, pre);
                value = gelu(pre);
                break;
            }
            case Epilogue::DGeluBGrad:
                value = product * gelu_derivative(detail::load(g_.epilogue.aux.data, wide_dtype(side_), i * aux_ld_ + j));
                column_sums_[chunk * n_ + j] += value;
                break;
        }
        const std::size_t index = i * n_ + j;
        const Tensor& d = g_.d;
        const Tensor& c = g_.epilogue.c;
        if (c.data != nullptr) value += detail::load(c.data, wide_dtype(c.dtype), index);  // c may be d: read before the write
        if (!is_fp8(d.dtype)) {
            detail::store(d.data, wide_dtype(d.dtype), index, value);
            return 0;
        }
        static_cast<std::uint8_t*>(d.data)[index] = detail::float_to_fp8(value * d_scale_, fp8_type(d.dtype));
        return detail::abs_bits(value);
    }

    void finish() {
        if (epilogue_ == Epilogue::DGeluBGrad) {
            for (std::size_t j = 0; j < n_; ++j) {
                float sum = 0.0f;
                for (std::size_t chunk = 0; chunk < chunks_; ++chunk) sum += column_sums_[chunk * n_ + j];
                detail::store(g_.epilogue.bias_grad.data, wide_dtype(side_), j, sum);
            }
        }
        if (is_fp8(g_.d.dtype) && g_.d.amax != nullptr) g_.d.amax[0] = detail::bits_float(amax_bits_.load());
    }

    const GemmCall& g_;
    const std::size_t m_, n_, k_;
    const Epilogue epilogue_;
    const std::vector<float> a_;
    const std::vector<float> b_;
    const DType side_;  // aux and bias_grad: d's type, bfloat16 where d is FP8
    const std::size_t aux_ld_;
    const std::size_t chunks_;
    std::vector<float> bias_;
    std::vector<float> column_sums_;  // DGeluBGrad: per chunk of rows, summed in chunk order at the end
    float d_scale_ = 1.0f;
    float alpha_ = 1.0f;
    std::atomic<std::uint32_t> amax_bits_{0};
};

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& d, const GemmEpilogueTensors& epilogue, const GemmOptions& options,
          const Workspace& workspace, Stream) {
    const GemmCall call{a, b, d, epilogue, options, workspace};
    if (const auto refusal = gemm_refusal(call, GemmTarget{})) throw_gemm_refused(kCall, *refusal);
    if (call.m() == 0 || call.n() == 0) return;
    HostGemm(call).run();
    detail::note_launch();
    detail::note_gemm_library_work(options.epilogue, a.dtype);
}

}  // namespace tewb::kernels::host
