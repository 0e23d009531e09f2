// The fused ops' casts to Blackwell's microscaling formats (FusedOpsImpl.h): MXFP8 and NVFP4 with the kernels of
// tewb_kernels/mx.h (and NVFP4's Hadamard transform), the same bits as the reference casts (core/fp8/Microscaling.h),
// read back into the reference's plain form for the GEMMs, which stay emulated.
#include <ATen/ops/empty.h>

#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/mx.h"

namespace tewb::fused_ops {

namespace {

// `t` (uint8 or an FP8 dtype) as the kernels see bytes of `dtype`, [rows, cols] as allocated.
kernels::Tensor bytes_as(const at::Tensor& t, kernels::DType dtype) {
    if (!t.defined()) return {};
    return kernels::input(t.data_ptr(), dtype, static_cast<std::size_t>(t.size(0)), static_cast<std::size_t>(t.size(1)));
}

// Room for the block scales of a [rows, cols] copy in cuBLASLt's layout (tewb_kernels/mx.h, mx_scale_offset).
at::Tensor scale_bytes(std::int64_t rows, std::int64_t cols, std::size_t block, const at::Tensor& like) {
    return at::empty({static_cast<std::int64_t>(kernels::mx_scale_rows(static_cast<std::size_t>(rows))),
                      static_cast<std::int64_t>(kernels::mx_scale_cols(static_cast<std::size_t>(cols), block))},
                     like.options().dtype(at::kByte));
}

// One NVFP4 copy in the kernel's layout: E2M1 two to a byte, E4M3 block scales, the tensor's s_dec.
struct Nvfp4Buffers {
    at::Tensor bytes;
    at::Tensor scales;
    at::Tensor s_dec;

    Nvfp4Buffers(std::int64_t rows, std::int64_t cols, const at::Tensor& like)
        : bytes(at::empty({rows, (cols + 1) / 2}, like.options().dtype(at::kByte))),
          scales(scale_bytes(rows, cols, kernels::kNvfp4BlockSize, like)),
          s_dec(at::empty({1}, like.options().dtype(at::kFloat))) {}
    kernels::Tensor data() const {
        kernels::Tensor t = bytes_as(bytes, kernels::DType::Float4E2M1x2);
        t.scale_inv = s_dec.data_ptr<float>();
        return t;
    }
    kernels::Tensor block_scales() const { return bytes_as(scales, kernels::DType::Float8E4M3); }
    // `decode`: the s_dec that goes with these values (a transposed copy written in the rows' launch has the rows').
    MxQuantized plain(std::int64_t rows, std::int64_t cols, const at::Tensor& decode) const {
        return mx_from_kernel_layout(MxFormat::Nvfp4, Fp8Dtype::E4M3, bytes, scales, rows, cols, decode);
    }
};

}  // namespace

// As the reference (ReferenceOps.cpp, quantize_microscaling): the slot's amax recorded, the rows cast and, when asked,
// the transposed copy cast along its own rows. MXFP8: both copies and the amax in one launch. NVFP4: the amax (the
// cast reads it), then one launch for the rows and, without the Hadamard transform, the transposed copy; with it
// (an input's or a gradient's copy for the weight-gradient GEMM, tokens a multiple of 16) the transposed copy is
// transformed, its own amax taken and cast on its own. Stochastic rounding draws from the context's stream in the
// reference's order (the rows' values, then the transposed copy's), so both paths give the same bits.
Fp8Tensor FusedOps::quantize_microscaling(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const {
    Fp8Context& context = *quantizer.context;
    const Fp8Recipe& recipe = context.recipe();
    const SlotRole role = Fp8Context::role_of(quantizer.pass, quantizer.slot);
    const std::int64_t rows = x.size(0);
    const std::int64_t cols = x.size(1);
    Fp8Tensor out;
    out.dtype = quantizer.dtype();
    MxQuantized q;
    std::optional<MxQuantized> t;
    if (recipe.scaling == ScalingKind::Mxfp8) {
        const at::Tensor staging = staging_entry(quantizer);
        const at::Tensor data = at::empty({rows, cols}, x.options().dtype(to_scalar_type(out.dtype)));
        const at::Tensor scales = scale_bytes(rows, cols, kernels::kMxfp8BlockSize, x);
        at::Tensor data_t, scales_t;
        if (with_transpose) {
            data_t = at::empty({cols, rows}, data.options());
            scales_t = scale_bytes(cols, rows, kernels::kMxfp8BlockSize, x);
        }
        kernels::Tensor target = kernel_tensor(data);
        target.amax = staging.data_ptr<float>();
        TEWB_KERNEL(x, (Tensors{x, staging}), (Tensors{data, scales, data_t, scales_t, staging}), mxfp8_cast, kernel_tensor(x), target,
                    bytes_as(scales, kernels::DType::Float8E8M0), kernel_tensor(data_t),
                    bytes_as(scales_t, kernels::DType::Float8E8M0));
        q = mx_from_kernel_layout(MxFormat::Mxfp8, out.dtype, data, scales, rows, cols, {});
        if (with_transpose) t = mx_from_kernel_layout(MxFormat::Mxfp8, out.dtype, data_t, scales_t, cols, rows, {});
    } else {
        const at::Tensor amax = abs_max(x);
        context.record_amax(quantizer.pass, quantizer.slot, amax);
        const bool stochastic = role == SlotRole::GradOutput && recipe.nvfp4_stochastic_rounding;
        const bool hadamard = with_transpose && role != SlotRole::Weight && recipe.nvfp4_hadamard && rows % 16 == 0;
        const bool both = with_transpose && !hadamard;
        kernels::Nvfp4Cast options;
        options.tiles_16x16 = role == SlotRole::Weight;
        options.stochastic_rounding = stochastic;
        options.seed = Fp8Context::kRandomSeed;
        if (stochastic) options.offset = context.draw_random(static_cast<std::uint64_t>(x.numel()) * (both ? 2 : 1));
        kernels::Tensor source = kernel_tensor(x);
        source.amax = amax.data_ptr<float>();
        const Nvfp4Buffers rowwise(rows, cols, x);
        std::optional<Nvfp4Buffers> transposed;
        if (both) transposed.emplace(cols, rows, x);
        TEWB_KERNEL(x, (Tensors{x, amax}),
                    (Tensors{rowwise.bytes, rowwise.scales, rowwise.s_dec, transposed ? transposed->bytes : at::Tensor(),
                             transposed ? transposed->scales : at::Tensor()}),
                    nvfp4_cast, source, rowwise.data(), rowwise.block_scales(),
                    transposed ? transposed->data() : kernels::Tensor{}, transposed ? transposed->block_scales() : kernels::Tensor{},
                    options);
        q = rowwise.plain(rows, cols, rowwise.s_dec);
        if (transposed) t = transposed->plain(cols, rows, rowwise.s_dec);  // the kernel writes s_dec once, with the rows
        if (hadamard) {
            const at::Tensor flipped = x.t().contiguous();
            const at::Tensor mixed = at::empty_like(flipped);
            TEWB_KERNEL(x, Tensors{flipped}, Tensors{mixed}, hadamard16, kernel_tensor(flipped), kernel_tensor(mixed),
                        kernels::kHadamardSigns);
            const at::Tensor mixed_amax = abs_max(mixed);
            kernels::Nvfp4Cast copy = options;
            copy.tiles_16x16 = false;
            if (stochastic) copy.offset = context.draw_random(static_cast<std::uint64_t>(mixed.numel()));
            kernels::Tensor mixed_source = kernel_tensor(mixed);
            mixed_source.amax = mixed_amax.data_ptr<float>();
            const Nvfp4Buffers cast(cols, rows, x);
            TEWB_KERNEL(x, (Tensors{mixed, mixed_amax}), (Tensors{cast.bytes, cast.scales, cast.s_dec}), nvfp4_cast, mixed_source,
                        cast.data(), cast.block_scales(), kernels::Tensor{}, kernels::Tensor{}, copy);
            t = cast.plain(cols, rows, cast.s_dec);
        }
    }
    out.mx = q.format;
    out.data = q.data;
    out.scale_inv = q.block_scale;
    out.tensor_scale_inv = q.tensor_scale_inv;
    if (t) {
        out.transposed = t->data;
        out.transposed_scale_inv = t->block_scale;
        out.transposed_tensor_scale_inv = t->tensor_scale_inv;
    }
    if (context.inspect()) inspect_microscaling_cast(x, q, quantizer);
    return out;
}

}  // namespace tewb::fused_ops
