// A pipeline's tensors as ATen tensors, for the two libtorch programs of this folder
// (torch_eval.cc, frozen_torch.cc): HostTensor conversions both ways, and the inputs
// and parameters converted once, before a program runs. Includes ATen: only those
// sources include it.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

// ATen's scalar type of a pipeline dtype (f32 or f64; std::invalid_argument otherwise).
at::ScalarType ScalarTypeOf(DataType dtype);

// A contiguous ATen tensor of `host`'s values in `dtype`.
at::Tensor ToAten(const HostTensor& host, DataType dtype);
// The values of `tensor` in its logical order, whatever its memory format.
HostTensor ToHost(const at::Tensor& tensor, DataType dtype);

// The inputs (`inputs`, spec order) and parameters of `graph` by value id, contiguous,
// undefined for stage values. An input of another count or shape than declared, or a
// parameter that cannot be materialized, is an error naming `where` and the tensor.
StatusOr<std::vector<at::Tensor>> AtenValues(const PipelineGraph& graph,
                                             const std::vector<HostTensor>& inputs,
                                             const std::string& where);

}  // namespace schedfarm
