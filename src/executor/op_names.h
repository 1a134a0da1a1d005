#pragma once
// What a framework op's or kernel's name says to the lowering: the elementwise step it is, whether
// it takes indices, whether it is attention or a convolution. Names only; shapes are the caller's.
#include <optional>
#include <string_view>

#include "executor/device.h"

namespace dpro::executor {

// The elementwise op a framework op or kernel name stands for (aten name first, then the kernel's
// functor); nullopt when none does. `scalar_operand`: the op's second operand is not a tensor.
std::optional<ElementwiseOp> elementwise_op_of(std::string_view launcher, std::string_view kernel, bool scalar_operand);
// Embedding, index_select, gather, scatter, nll_loss, top-k, sort, ...: synthetic data would make
// their indices read out of bounds.
bool takes_indices(std::string_view launcher, std::string_view kernel);
// cuDNN's / flash attention (sdpa, fmha) kernels.
bool names_attention(std::string_view kernel);
// A GEMM-like kernel whose name says convolution (cuDNN's, for kernels without a launching op):
// not attention (cuDNN's flash-attention kernels say "fprop" too) nor a dtype conversion.
bool names_convolution(std::string_view kernel);

}  // namespace dpro::executor
