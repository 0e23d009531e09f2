#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tewb_kernels/dtype.h"
#include "common/fp8_output.h"
#include "common/tokens.h"
#include "tewb_kernels/tensor.h"

// Host-side argument checks shared by the entry points: each fails with KernelError "<call>: <what>".
namespace tewb::kernels::detail {

// A device buffer the call reads or writes: not null, aligned to `alignment`.
void check_buffer(std::string_view call, const void* pointer, std::string_view name, std::size_t alignment);
// `dtype` is float32 or bfloat16 (what the fused ops take).
void check_float_or_bf16(std::string_view call, DType dtype, std::string_view name);
// rows and cols fit the kernels' int indexing.
void check_dims(std::string_view call, std::size_t rows, std::size_t cols);
// A float32 scratch buffer of at least `needed` bytes (what `size_function` returns), aligned to 4 bytes.
void check_workspace(std::string_view call, const void* workspace, std::size_t workspace_bytes, std::size_t needed,
                     std::string_view size_function);
// "[rows, cols]", as every error message writes a shape.
std::string shape_text(std::size_t rows, std::size_t cols);
std::string shape_text(const Tensor& t);
// `tensor` has the shape [rows, cols] the call's other arguments give it ("<name> is [r, c]; allowed: [rows, cols]").
void check_shape(std::string_view call, const Tensor& tensor, std::string_view name, std::size_t rows, std::size_t cols);
// `dtype` is `like`'s, the dtype of the tensor `like_name` ("<name> has dtype d; allowed: <like>, <like_name>'s").
void check_same_dtype(std::string_view call, DType dtype, std::string_view name, DType like, std::string_view like_name);
// An FP8 tensor's type (Fp8Type::E4M3 for a dtype that is not FP8: check it first).
Fp8Type fp8_type(const Tensor& t);
// An FP8 output given as a tensor (data null: not wanted, and nothing else is looked at) as the kernels take it;
// a wanted one must be E4M3 or E5M2 ("<name> has dtype d; allowed: E4M3, E5M2") of [rows, cols].
Fp8Output fp8_output(std::string_view call, const Tensor& t, std::string_view name, std::size_t rows, std::size_t cols);
// A float32 vector of n elements the call reads or writes (a norm's saved statistics); its data, not checked for
// null or alignment here.
float* float_vector(std::string_view call, const Tensor& t, std::string_view name, std::size_t n);
// An int64 tokens tensor [batch, seq] ("<name> has dtype d; allowed: int64") as the kernels walk it.
TokensRef token_rows(std::string_view call, const Tensor& tokens, std::string_view name);
// An FP8 output: data and scale set, transposed (if any) distinct from data, amax aligned, known type.
void check_fp8_output(std::string_view call, const Fp8Output& fp8);
// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte (a null pointer shares none).
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes);
// A tensor's span in bytes: from its first element to one past its last (a row stride counted; rows * cols elements
// where it has none).
std::size_t tensor_bytes(const Tensor& t);

}  // namespace tewb::kernels::detail
